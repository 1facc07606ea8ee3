"""The collectives that turn one sharding of a tensor into another.

    partial sums      -> all_reduce, or reduce_scatter when the result is split along those axes
    an axis leaves a dimension and splits another -> all_to_all
    an axis leaves a dimension                    -> all_gather
    an axis newly splits a dimension              -> all_slice (each device keeps its piece: no traffic)

in that order, each step's result the next one's operand, as Shardy's explicit reshards lower. Axes
split a dimension major to minor, so a piece can only be cut further by a minor axis: an axis that
stays but follows one that leaves (or comes in another order) leaves too and splits again.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilescope.compiler.sharding.mesh import Sharding


@dataclass(frozen=True)
class Step:
    kind: str  # one of COLLECTIVES
    axes: tuple[str, ...]  # the mesh axes the devices exchanging data differ along
    dim: int | None  # the tensor dimension gathered, scattered or sliced (all_to_all: the one split)
    result: Sharding
    from_dim: int | None = None  # all_to_all: the dimension that stops being split


def _with(dims: list[tuple[str, ...]], d: int, axes: tuple[str, ...]) -> list[tuple[str, ...]]:
    out = list(dims)
    out[d] = axes
    return out


def steps(src: Sharding, dst: Sharding) -> list[Step]:
    """The collectives from `src` to `dst` (same rank; `dst` has no partial axes)."""
    out: list[Step] = []
    dims = list(src.dims)
    if src.partial:
        scatter = next(
            (
                d
                for d, axes in enumerate(dst.dims)
                if axes[: len(dims[d]) + len(src.partial)] == (*dims[d], *src.partial)
            ),
            None,
        )
        if scatter is not None:  # keep only the piece this device will hold: a reduce-scatter
            dims = _with(dims, scatter, (*dims[scatter], *src.partial))
            out.append(Step("reduce_scatter", src.partial, scatter, Sharding(tuple(dims))))
        else:
            out.append(Step("all_reduce", src.partial, None, Sharding(tuple(dims))))
    for d in range(len(dims)):
        leaving = dims[d][_common(dims[d], dst.dims[d]) :]
        for axis in leaving:
            dest = next((e for e, axes in enumerate(dst.dims) if axes[: len(dims[e]) + 1] == (*dims[e], axis)), None)
            kept = tuple(a for a in dims[d] if a != axis)
            if dest is not None and dest != d:
                dims = _with(_with(dims, d, kept), dest, (*dims[dest], axis))
                out.append(Step("all_to_all", (axis,), dest, Sharding(tuple(dims)), from_dim=d))
            else:
                dims = _with(dims, d, kept)
                out.append(Step("all_gather", (axis,), d, Sharding(tuple(dims))))
    for d, axes in enumerate(dst.dims):
        arriving = axes[len(dims[d]) :]  # what stays of a dimension's axes is where dst begins
        if arriving:
            dims = _with(dims, d, tuple(axes))
            out.append(Step("all_slice", arriving, d, Sharding(tuple(dims))))
    return _merged(out)


def _common(have: tuple[str, ...], want: tuple[str, ...]) -> int:
    """How many of `have`'s major axes `want` begins with."""
    n = 0
    while n < min(len(have), len(want)) and have[n] == want[n]:
        n += 1
    return n


def _merged(found: list[Step]) -> list[Step]:
    """Gathers of the same dimension one after another are one gather over their axes."""
    merged: list[Step] = []
    for step in found:
        last = merged[-1] if merged else None
        if last and last.kind == step.kind == "all_gather" and last.dim == step.dim:
            merged[-1] = Step("all_gather", last.axes + step.axes, step.dim, step.result)
        else:
            merged.append(step)
    return merged
