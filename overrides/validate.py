"""Check overrides against a compiled graph before compiling with them."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from compiler.errors import OverrideError
from compiler.ir import Graph
from compiler.override import OpOverride


def check_op_names(overrides: Iterable[OpOverride], graph: Graph) -> None:
    """Every override must name an op of the graph; the error suggests the closest names."""
    names = [op.name for op in graph.ops]
    known = set(names)
    for ov in overrides:
        if ov.op not in known:
            close = difflib.get_close_matches(ov.op, names, n=3, cutoff=0.5)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise OverrideError(f"override {ov.spec or ov.op!r}: no op named {ov.op!r} in {graph.name}{hint}")
