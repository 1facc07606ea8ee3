"""Check overrides against a model and target, one at a time or all at once.

`check_op_names` stops at the first unknown op (what `run` needs before it compiles).
`validate` is the batch check behind `tilescope check`: it reads a whole override file leniently,
then compiles once with every readable override, and lists every problem, each naming the item
and the reason: unreadable tokens, repeats, unknown ops (with the closest names) and the
compiler's rejections (grids, memories, uneven shards, blocks, tiles, L1 space, dtypes).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from compiler.errors import OverrideError
from compiler.ir import Graph
from compiler.mlir_import import ImportedModel
from compiler.override import REJECTED, OpOverride, OverrideOutcome
from compiler.policies import DEFAULT_L1_USAGE_CAP, DEFAULT_POLICY
from compiler.pipeline import compile_model
from compiler.target import Target, shown


def _unknown(ov: OpOverride, names: list[str], graph: Graph) -> str:
    close = difflib.get_close_matches(ov.op, names, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return f"override {shown(ov.spec or ov.op)}: no op named {shown(ov.op)} in {graph.name}{hint}"


def check_op_names(overrides: Iterable[OpOverride], graph: Graph) -> None:
    """Every override must name an op of the graph; the error suggests the closest names."""
    names = [op.name for op in graph.ops]
    known = set(names)
    for ov in overrides:
        if ov.op not in known:
            raise OverrideError(_unknown(ov, names, graph))


@dataclass
class Report:
    """Everything wrong with a batch of overrides, and how the rest fared."""

    problems: list[str] = field(default_factory=list)
    outcomes: list[OverrideOutcome] = field(default_factory=list)  # of the overrides that compiled

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict:
        return {"ok": self.ok, "problems": self.problems, "overrides": [o.as_dict() for o in self.outcomes]}


def validate(
    overrides: Sequence[OpOverride],
    model: ImportedModel,
    target: Target,
    policy: str = DEFAULT_POLICY,
    l1_usage_cap: float = DEFAULT_L1_USAGE_CAP,
    problems: Sequence[str] = (),
) -> Report:
    """All problems of `overrides` on `model` at once; `problems` are those found reading them."""
    report = Report(list(problems))
    names = [op.name for op in model.graph.ops]
    known = set(names)
    # an override naming an op fused away is still known: the layout pass adjusts it to its host
    compilable = [ov for ov in overrides if ov.op in known]
    report.problems.extend(_unknown(ov, names, model.graph) for ov in overrides if ov.op not in known)
    compilation = compile_model(model, target, compilable, policy, l1_usage_cap)
    report.outcomes = list(compilation.override_outcomes)
    report.problems.extend(
        f"override {shown(o.spec)} rejected: {o.reason}" for o in report.outcomes if o.status == REJECTED
    )
    return report
