"""GSPMD sharding strings (`mhlo.sharding = "{devices=[1,2]0,1}"`) in Shardy's terms.

GSPMD names no mesh axes: a sharding lists, per tensor dimension, into how many tiles it splits,
then which device holds each tile (row-major over the tiles). The mesh is made from the tilings:

- Each tiling's factors are its tile counts above 1, in order (the replication dimension of
  `last_tile_dim_replicate` included). The mesh takes the factors of the tiling with the most of
  them whose product is the device count (`mhlo.num_partitions`), as axes "axis_0", "axis_1", ...;
  with no tiling it is one axis of all the devices.
- A tiling maps onto the mesh by taking, for each tile count in order, the next axes whose sizes
  multiply to it: [2,1] and [1,2] on 2 devices both use "axis_0", [4,1] on a 2x2 mesh uses both.
- Devices must be in the default order (0, 1, ... or `<=[N]`), as Shardy's default mesh numbers
  them; another order, or a tiling that does not split along the mesh's axes, is not modelled: the
  tensor is read as replicated and a warning says so.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from tilescope.compiler.sharding.mesh import MAX_MESH_DEVICES, Mesh, Sharding

AXIS = "axis_{}"
_TILED = re.compile(r"\{devices=\[([\d,]++)\]((?:<=\[[\d,]++\](?:T\([\d,]++\))?+)|[\d,]++)([^{}]*+)\}")
_METADATA = re.compile(r"metadata=\{[^{}]*+\}")
_MAXIMAL = re.compile(r"\{maximal device=(\d++)[^{}]*+\}")


@dataclass(frozen=True)
class Tiling:
    tiles: tuple[int, ...]  # per tensor dimension, then the replication dimension if any
    replicate_last: bool = False
    default_order: bool = True  # devices numbered row-major over the tiles

    @property
    def factors(self) -> tuple[int, ...]:
        return tuple(t for t in self.tiles if t > 1)


def parse(text: str) -> Tiling | str:
    """A tiled sharding, or "replicated" / "maximal" / "manual" for the untiled kinds. ValueError
    names what is malformed."""
    text = _METADATA.sub("", text).strip()
    if text in ("{replicated}", "{manual}"):
        return text[1:-1]
    if _MAXIMAL.fullmatch(text):
        return "maximal"
    match = _TILED.fullmatch(text)
    if match is None:
        if text.startswith("{{"):
            raise ValueError("tuple shardings (one per result) are not supported")
        raise ValueError("not a GSPMD sharding ({replicated}, {maximal device=N} or {devices=[...]...})")
    tiles = tuple(int(t) for t in match.group(1).split(",") if t)
    if math.prod(tiles) > MAX_MESH_DEVICES:
        raise ValueError(f"more than {MAX_MESH_DEVICES} tiles")
    flags = match.group(3).split()
    if any(flag not in ("last_tile_dim_replicate",) for flag in flags):
        raise ValueError(f"unsupported flag {flags[0]!r}")
    return Tiling(tiles, "last_tile_dim_replicate" in flags, _default_order(match.group(2), math.prod(tiles)))


def _default_order(devices: str, count: int) -> bool:
    if devices.startswith("<="):
        shape, _, transpose = devices[3:].partition("]")
        if math.prod(int(d) for d in shape.split(",") if d) != count:
            raise ValueError(f"device list of {shape} does not fill {count} tiles")
        perm = [int(p) for p in transpose.strip("T()").split(",") if p]
        return perm == sorted(perm)
    ids = [int(d) for d in devices.split(",") if d]
    if len(ids) != count:
        raise ValueError(f"{len(ids)} devices listed for {count} tiles")
    return ids == list(range(count))


def mesh_of(tilings: list[Tiling], devices: int | None) -> Mesh | None:
    """The mesh the tilings share (see the module's docstring); None on one device."""
    usable = [t for t in tilings if t.default_order and (devices is None or math.prod(t.tiles) == devices)]
    if usable:
        factors = max((t.factors for t in usable), key=len)
    elif devices and devices > 1:
        factors = (devices,)
    else:
        return None
    return Mesh(tuple((AXIS.format(i), size) for i, size in enumerate(factors)))


def sharding_of(tiling: Tiling | str, rank: int, mesh: Mesh | None) -> Sharding | None:
    """The tiling on `mesh`; None when it cannot be expressed there (the caller warns)."""
    if isinstance(tiling, str):
        return Sharding.replicated(rank)
    dims = len(tiling.tiles) - tiling.replicate_last
    if mesh is None or not tiling.default_order or dims != rank or math.prod(tiling.tiles) != mesh.devices:
        return None
    axes = iter(mesh.axes)
    split: list[tuple[str, ...]] = []
    for count in tiling.tiles:
        taken: list[str] = []
        while math.prod(mesh.size(a) for a in taken) < count:
            axis = next(axes, None)
            if axis is None:
                return None
            taken.append(axis[0])
        if math.prod(mesh.size(a) for a in taken) != count:
            return None
        split.append(tuple(taken))
    return Sharding(tuple(split[:dims]))
