"""Device meshes and tensor shardings, in Shardy's terms.

A mesh names its axes and their sizes (`sdy.mesh @mesh = <["model"=1, "batch"=2]>`); a tensor's
sharding says, per dimension, which mesh axes split it, major to minor
(`#sdy.sharding<@mesh, [{"batch"}, {}]>`). Axes not named are replicated. `partial` lists axes over
which each device holds a partial sum that an all-reduce (or reduce-scatter) must still combine:
the state after a matmul whose contracted dimension is sharded.

Devices of a mesh are numbered row-major over its axes, as Shardy's default device order does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tilescope.compiler.errors import ModelLoadError

MAX_MESH_DEVICES = 2**32  # far beyond any system, small enough to print in an error


@dataclass(frozen=True)
class Mesh:
    axes: tuple[tuple[str, int], ...]  # (name, size), major to minor
    name: str = "mesh"

    @property
    def devices(self) -> int:
        return math.prod(size for _, size in self.axes)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(size for _, size in self.axes)

    def size(self, axis: str) -> int:
        for name, size in self.axes:
            if name == axis:
                return size
        raise KeyError(axis)

    def ways(self, axes: tuple[str, ...]) -> int:
        """How many devices `axes` span together: the product of their sizes."""
        return math.prod(self.size(a) for a in axes)

    def has(self, axis: str) -> bool:
        return any(name == axis for name, _ in self.axes)

    def stride(self, axis: str) -> int:
        """How far apart, in device numbers, neighbours along `axis` are."""
        names = [name for name, _ in self.axes]
        return math.prod(size for _, size in self.axes[names.index(axis) + 1 :])

    def mlir(self) -> str:
        return "<[" + ", ".join(f'"{name}"={size}' for name, size in self.axes) + "]>"


SINGLE = Mesh(())  # one device: every tensor whole


@dataclass(frozen=True)
class Sharding:
    dims: tuple[tuple[str, ...], ...]  # per tensor dimension, the axes splitting it, major to minor
    partial: tuple[str, ...] = ()  # axes over which values are partial sums still to be reduced

    @staticmethod
    def replicated(rank: int) -> Sharding:
        return Sharding(((),) * rank)

    @property
    def axes(self) -> tuple[str, ...]:
        """Every axis used, dimensions first, then partial ones."""
        return tuple(a for dim in self.dims for a in dim) + self.partial

    @property
    def is_replicated(self) -> bool:
        return not self.axes

    def ways(self, dim: int, mesh: Mesh) -> int:
        """Into how many pieces dimension `dim` is split."""
        return mesh.ways(self.dims[dim])

    def local_shape(self, shape: tuple[int, ...], mesh: Mesh) -> tuple[int, ...]:
        """Each device's piece of a tensor of `shape` (the dimensions must divide)."""
        return tuple(d // self.ways(i, mesh) for i, d in enumerate(shape))

    def problem(self, shape: tuple[int, ...], mesh: Mesh) -> str | None:
        """Why this sharding cannot apply to a tensor of `shape` on `mesh`; None when it can."""
        if len(self.dims) != len(shape):
            return f"{len(self.dims)} dimensions given for a rank-{len(shape)} tensor"
        used = self.axes
        for axis in used:
            if not mesh.has(axis):
                names = ", ".join(f'"{name}"' for name, _ in mesh.axes) or "none"
                return f'mesh has no axis "{axis}" (its axes: {names})'
        for axis in set(used):
            if used.count(axis) > 1:
                return f'axis "{axis}" used twice'
        for i, extent in enumerate(shape):
            ways = self.ways(i, mesh)
            if extent % ways:
                return f"dimension {i} ({extent}) does not divide into {ways}"
        return None

    def mlir(self, mesh: Mesh) -> str:
        dims = ", ".join("{" + ", ".join(f'"{a}"' for a in dim) + "}" for dim in self.dims)
        partial = f", partial={{{', '.join(repr(a) for a in self.partial)}}}" if self.partial else ""
        return f"#sdy.sharding<@{mesh.name}, [{dims}]{partial}>"

    def spec(self) -> str:
        """As an override spells it: `{},{model}`; `replicated` for no dimensions (an override's
        `replicated`: whole on every device, whatever the tensor's rank)."""
        if not self.dims:
            return "replicated"
        return ",".join("{" + ",".join(dim) + "}" for dim in self.dims)

    def ranked(self, rank: int) -> Sharding:
        """An override's `replicated` (no dimensions) at a tensor's rank; any other as it is."""
        return Sharding.replicated(rank) if not self.dims and not self.partial else self

    def text(self) -> str:
        """Compact, for tables and cards: [{batch}, {}]."""
        body = ", ".join("{" + ",".join(dim) + "}" for dim in self.dims)
        return f"[{body}]" + (f" partial {{{','.join(self.partial)}}}" if self.partial else "")


def check_mesh(mesh: Mesh, where: str) -> None:
    names = [name for name, _ in mesh.axes]
    if len(set(names)) != len(names):
        raise ModelLoadError(f"{where}: mesh @{mesh.name} names an axis twice")
    if any(size < 1 for _, size in mesh.axes):
        raise ModelLoadError(f"{where}: mesh @{mesh.name} has an axis of size < 1")
    devices = 1
    for _, size in mesh.axes:  # stop early: the product of many axes can have more digits than str() prints
        devices *= size
        if devices > MAX_MESH_DEVICES:
            raise ModelLoadError(f"{where}: mesh @{mesh.name} has more than {MAX_MESH_DEVICES} devices")
