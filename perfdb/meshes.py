"""The devices a run ran on and their mesh, and the collectives it ran over them: what a diff of a
run on one device against one on eight (or of two meshes) compares besides the ops.

Every device runs the same program on its piece, so a compute op's name and its duration (one
device's) match across device counts; the collectives exist only where a mesh has more than one
device, each on the link row of the mesh axes its devices differ along (compiler/sim/tracks.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sqlalchemy.orm import Session

from tilescope.compiler.sim.tracks import is_device_track, is_link_track, link_axes

from tilescope.perfdb import blocks
from tilescope.perfdb import shared_blocks
from tilescope.perfdb.schema import Run, TimelineBlock
from tilescope.perfdb.timeline import zone_names


@dataclass(frozen=True)
class RunMesh:
    devices: int
    mesh: tuple[tuple[str, int], ...]  # (axis, size) major to minor; () on one device
    target: str


@dataclass(frozen=True)
class CollectiveGroup:
    """Where a collective ran: its link row, and how many devices exchange data in it (those along
    the row's axes)."""

    row: str
    devices: int


@dataclass(slots=True)  # one per collective op: not frozen, as perfdb.diff's records of ops
class CollectiveOp:
    """A collective one run has and the other lacks."""

    name: str
    kind: str
    group: int  # devices exchanging data
    axes: str  # its link row's, "batch,model"
    bytes_per_device: float  # sent by each
    ns: float  # one device's time, summed should the name occur twice


def run_mesh(run: Run) -> RunMesh:
    """The run's devices and mesh: as stored, or for a run stored before meshes were kept, its device
    rows and link rows (an axis's size is known then only when it is the one axis)."""
    devices = sum(is_device_track(t) for t in run.tracks) or 1
    mesh = tuple((axis, int(size)) for axis, size in run.mesh or ())
    if not mesh and devices > 1:
        axes = list(dict.fromkeys(a for t in run.tracks if is_link_track(t) for a in link_axes(t)))
        mesh = ((axes[0], devices),) if len(axes) == 1 else ()
    return RunMesh(math.prod(size for _, size in mesh) if mesh else devices, mesh, run.target.name)


def mesh_text(mesh: tuple[tuple[str, int], ...] | list) -> str:
    """`model=8`, `batch=2,model=4`; `-` for none."""
    return ",".join(f"{axis}={size}" for axis, size in mesh) or "-"


def devices_warning(a: RunMesh, b: RunMesh) -> str | None:
    """`devices: 1 vs 8 (mesh model=8 on t3k)`: the runs' devices, when their meshes differ. Op times
    are one device's in either run, so an op's delta is what each device gains or loses."""
    if (a.devices, a.mesh) == (b.devices, b.mesh):
        return None

    def where(side: RunMesh) -> str | None:
        return f"mesh {mesh_text(side.mesh)} on {side.target}" if side.devices > 1 else None

    said = [w for w in (where(a), where(b)) if w]
    return f"devices: {a.devices} vs {b.devices}" + (f" ({' vs '.join(said)})" if said else "")


def collective_groups(session: Session, run_id: int, mesh: RunMesh) -> dict[str, CollectiveGroup]:
    """collective op name -> where it ran."""
    b = TimelineBlock.__table__.c
    names, _ = zone_names(session, run_id)
    sizes = dict(mesh.mesh)
    found: dict[str, CollectiveGroup] = {}
    for track, _, packed, _ in shared_blocks.stored(session, run_id, blocks.ZONES, b.track.startswith("link ")):
        axes = link_axes(track)
        # an axis of unknown size (a run stored before meshes were kept): all of the devices
        group = CollectiveGroup(track, math.prod(sizes.get(a, 0) for a in axes) or mesh.devices)
        for op in blocks.unpack(packed)[0]["op"].tolist():
            found.setdefault(names[op], group)
    return found
