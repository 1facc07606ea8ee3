"""Check overrides against a model and target, one at a time or all at once.

`check_op_names` stops at the first unknown op (what `run` needs before it compiles).
`validate` is the batch check behind `tilescope check`: it reads a whole override file leniently,
then compiles once with every readable override, and lists every problem, each naming the item
and the reason: unreadable tokens, repeats, unknown ops (with the closest names) and the
compiler's rejections (grids, memories, more shards than tiles, blocks, tiles, L1 space, dtypes, shardings
over the devices).
`check_overrides` is the explorer's check before a re-run: the same problems against a model
already compiled, from its layout pass alone, counted in full and described up to a page.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial

from tilescope.compiler.errors import OverrideError
from tilescope.compiler.ir.graph import Graph
from tilescope.compiler.frontend.mlir_import import ImportedModel
from tilescope.compiler.pipeline.op_override import REJECTED, OpOverride, OverrideOutcome, short_name
from tilescope.compiler.pipeline.compilation import Compilation
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.compiler.pipeline.override_check import layout_outcomes
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.targets.chip import Target
from tilescope.compiler.targets.data_file import shown


def _unknown(ov: OpOverride, names: list[str], graph: Graph) -> str:
    """One line: the override (which names the op), that the model has no such op, and the closest
    names it has, each cut if long."""
    close = difflib.get_close_matches(ov.op, names, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(short_name(name) for name in close)}?" if close else ""
    return f"override {shown(ov.spec or ov.op)}: no such op in {short_name(graph.name)}{hint}"


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
    options: CompileOptions,
    model: ImportedModel,
    target: Target,
    problems: Sequence[str] = (),
) -> Report:
    """All problems of `options`' overrides on `model` at once, compiled under its policy and L1
    cap; `problems` are those found reading them."""
    report = Report(list(problems))
    names = [op.name for op in model.graph.ops]
    known = set(names)
    overrides = options.overrides
    # an override naming an op fused away is still known: the layout pass adjusts it to its host
    compilable = [ov for ov in overrides if ov.op in known]
    report.problems.extend(_unknown(ov, names, model.graph) for ov in overrides if ov.op not in known)
    compilation = compile_model(model, target, options.with_overrides(compilable))
    report.outcomes = list(compilation.override_outcomes)
    report.problems.extend(rejection(o) for o in report.outcomes if o.status == REJECTED)
    return report


def rejection(outcome: OverrideOutcome) -> str:
    """One line naming a rejected override and why."""
    return f"override {shown(outcome.spec)} rejected: {outcome.reason}"


SHOWN_PROBLEMS = 20  # lines a page lists; the rest are counted


@dataclass
class Problems:
    """Every problem of a batch counted, the first `shown` described: a batch may hold 100,000
    overrides, and a page of lines is what gets read."""

    shown: int = SHOWN_PROBLEMS
    lines: list[str] = field(default_factory=list)
    count: int = 0

    def add(self, line: str | Callable[[], str]) -> None:
        """Count a problem; a callable describes it only while there is room (a suggestion of
        close names is a search over the graph's)."""
        self.count += 1
        if len(self.lines) < self.shown:
            self.lines.append(line() if callable(line) else line)

    def __bool__(self) -> bool:
        return self.count > 0

    @property
    def more(self) -> int:
        """Problems counted beyond the lines described."""
        return self.count - len(self.lines)


def check_overrides(
    options: CompileOptions,
    compilation: Compilation,
    problems: Problems | None = None,
) -> Problems:
    """Why any of `options`' overrides cannot apply to a compiled model on its target under its
    policy and L1 cap, a line each in their order: an unknown op, or what the layout pass rejects
    (grid, memory, dtype, tile, fidelity, blocks, operands, more shards than tiles, L1 space per core) or
    the partition pass (shardings over the devices). One pass over the graph and one over the
    overrides, with no compile: the layout pass runs alone on a copy of the kept `partition`
    level (partitioned again first when the shardings asked for differ)."""
    problems = Problems() if problems is None else problems
    graph = compilation.levels["graph"]
    names = [op.name for op in graph.ops]
    # an op fused into another is known: the layout pass applies its override to its host
    known = set(names).union(*(op.source for op in graph.ops))
    overrides = options.overrides
    outcomes = iter(layout_outcomes(compilation, options.with_overrides(ov for ov in overrides if ov.op in known)))
    for ov in overrides:
        if ov.op not in known:
            problems.add(partial(_unknown, ov, names, graph))
            continue
        outcome = next(outcomes)
        if outcome.status == REJECTED:
            problems.add(rejection(outcome))
    return problems
