"""What a core's engines spend on an op's compute: the math fidelity its matrix work runs at, and
the vector engine's cycles for element-wise work."""

from __future__ import annotations

import math

from tilescope.compiler.ir.graph import Op
from tilescope.compiler.targets.chip import Target


def fidelity_of(op: Op, dtype: str, target: Target) -> str:
    """The op's math fidelity: asked for by an override, else the target's default for the dtype."""
    return op.attrs.get("math_fidelity") or target.default_fidelity(dtype)


def vector_cycles(target: Target, tiles: int, passes: float, tile: tuple[int, int] | None = None) -> float:
    """Vector-engine cycles for `passes` operations over each element of `tiles` tiles."""
    if passes <= 0:
        return 0.0
    rows, cols = tile or target.tile
    elems = rows * cols
    return tiles * math.ceil(elems * passes / target.vector_elements_per_cycle)
