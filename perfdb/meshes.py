"""The devices a run ran on and their mesh, and the collectives it ran over them: what a diff of a
run on one device against one on eight (or of two meshes) compares besides the ops.

Every device runs the same program on its piece, so a compute op's name and its duration (one
device's) match across device counts; the collectives exist only where a mesh has more than one
device, each on the link row of the mesh axes its devices differ along (compiler/tracks.py).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from sqlalchemy import select
from sqlalchemy.orm import Session

from tilescope.compiler.ir.opset import COLLECTIVES
from tilescope.compiler.sim.tracks import is_device_track, is_link_track, link_axes

from tilescope.perfdb import blocks
from tilescope.perfdb.schema import OpRecord, Run, TimelineBlock


class RunMesh(NamedTuple):
    devices: int
    mesh: tuple[tuple[str, int], ...]  # (axis, size) major to minor; () on one device
    target: str

    def as_dict(self) -> dict:
        return {"devices": self.devices, "mesh": [list(axis) for axis in self.mesh], "target": self.target}


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


def collective_groups(session: Session, run_id: int, mesh: RunMesh) -> dict[str, tuple[str, int]]:
    """collective op name -> (the link row it ran on, how many devices exchange data in it): the
    devices along the row's axes."""
    b = TimelineBlock.__table__.c
    data = session.scalar(select(b.data).where(b.run_id == run_id, b.kind == blocks.NAMES))
    names, _ = blocks.unpack_names(data) if data is not None else ([], {})
    sizes = dict(mesh.mesh)
    found: dict[str, tuple[str, int]] = {}
    rows = session.execute(
        select(b.track, b.data).where(b.run_id == run_id, b.kind == blocks.ZONES, b.track.startswith("link "))
    )
    for track, packed in rows:
        axes = link_axes(track)
        # an axis of unknown size (a run stored before meshes were kept): all of the devices
        group = math.prod(sizes.get(a, 0) for a in axes) or mesh.devices
        for op in blocks.unpack(packed)[0]["op"].tolist():
            found.setdefault(names[op], (track, group))
    return found


def collectives_only_in(session: Session, run_id: int, names: list[str], mesh: RunMesh) -> list[dict]:
    """The collectives among `names` (ops of the run the other run lacks), in execution order:
    [{name, kind, group (devices exchanging data), axes (its link row's), bytes_per_device (sent
    by each), ns (one device's time)}]."""
    if not names:
        return []
    wanted = set(names)
    groups = collective_groups(session, run_id, mesh)
    rows = session.execute(
        select(OpRecord.name, OpRecord.kind, OpRecord.duration_ns, OpRecord.bytes)
        .where(OpRecord.run_id == run_id, OpRecord.kind.in_(COLLECTIVES))
        .order_by(OpRecord.start_ns, OpRecord.id)
    )
    found: dict[str, dict] = {}
    for name, kind, duration, moved in rows:
        if name not in wanted:
            continue
        if name in found:
            found[name]["ns"] += duration
            continue
        track, group = groups.get(name, ("", mesh.devices))
        found[name] = {
            "name": name,
            "kind": kind,
            "group": group,
            "axes": ",".join(link_axes(track)),
            "bytes_per_device": (moved or {}).get("link", 0.0),
            "ns": duration,
        }
    return list(found.values())
