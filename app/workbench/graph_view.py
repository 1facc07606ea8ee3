"""The graph panel's data: what an op is coloured by, the ops a selection stands for at another
level, and a search of op names."""

from __future__ import annotations

from dataclasses import dataclass

import re2

from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.pipeline.compilation import Compilation


@dataclass(frozen=True)
class OpMetric:
    """What the graph can be coloured by, for one op of a run."""

    duration_ns: float
    bound: str
    pct_peak: float
    memory: str | None  # where its output lives (None before the layout level decides)
    delta_ns: float | None  # its duration minus the baseline run's (None without a baseline)


def op_metrics(compilation: Compilation, records, baseline: dict[str, float]) -> dict[str, OpMetric]:
    """Each timed op's duration, bound, % of peak, output memory and delta vs a baseline run's
    durations (`baseline`, by op name)."""
    layout = compilation.levels["layout"]
    placed = {op.name: layout.tensors[op.outputs[0]].layout for op in layout.ops if op.outputs}
    return {
        r.name: OpMetric(
            r.duration_ns,
            r.bound,
            r.pct_peak,
            placed[r.name].memory if placed.get(r.name) else None,
            r.duration_ns - baseline[r.name] if r.name in baseline else None,
        )
        for r in records
    }


def provenance(compilation: Compilation, level: str, name: str | None) -> list[str]:
    """The ops at `level` that stand for the op `name` of any level: the op itself, or the ops it
    was fused from (viewing `input`), or the op it was fused into (viewing a later level)."""
    if not name:
        return []
    graph = compilation.graph_at(level)
    if graph.has_op(name):
        return [name]
    later = compilation.levels["graph"]
    if level == "input" and later.has_op(name):
        return [s for s in later.op(name).source if graph.has_op(s)]
    return [op.name for op in graph.ops if name in op.source]


MAX_PATTERN = 1000  # characters of a search pattern


def search_ops(graph, pattern: str | None) -> list[str]:
    """Ops whose name or kind, or the name of an op fused into them, matches a regular expression
    (case-insensitive); a bad pattern raises TilescopeError naming the fault. RE2 matches in time
    linear in the text whatever the pattern (Python's re backtracks: one pattern typed into a
    search box could hold a server's worker), within a bounded memory; it has no backreferences
    or lookaround, which a search of op names does without."""
    if not pattern:
        return []
    if len(pattern) > MAX_PATTERN:
        raise TilescopeError(f"search: a pattern of at most {MAX_PATTERN} characters")
    try:
        found = re2.compile(pattern, options=_SEARCH_OPTIONS)
    except re2.error as err:
        reason = err.args[0].decode(errors="replace") if err.args and isinstance(err.args[0], bytes) else str(err)
        raise TilescopeError(f"search {pattern!r}: not a regular expression ({reason})") from None
    # an op fused into another (a bias add, an activation) is found in the op that runs it
    return [
        op.name
        for op in graph.ops
        if found.search(op.name) or found.search(op.kind) or any(found.search(f) for f in op.attrs.get("fused", ()))
    ]


_SEARCH_OPTIONS = re2.Options()
_SEARCH_OPTIONS.case_sensitive = False
_SEARCH_OPTIONS.log_errors = False  # a bad pattern is the user's one-line message, not a server log line
_SEARCH_OPTIONS.max_mem = 8 << 20  # bytes a compiled pattern may take; a larger one is an error
