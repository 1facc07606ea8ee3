"""The ops of two runs' steps paired for a diff: by stable name, or, where names are no identity
across the runs (a measured report names an op by its op code and count, so one op inserted renames
every later one of its code), as sequences, device by device (perfdb.op_alignment).

An op of device d > 0 is named with its device in a diff (`Matmul#3 (device 2)`): every device of a
measured run runs ops of the same names. A simulated run's ops are one device's (device 0).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlalchemy import Text, cast, select
from sqlalchemy.orm import Session

from tilescope.compiler.ir.opset import COLLECTIVES
from tilescope.compiler.sim.tracks import link_axes

from tilescope.perfdb.meshes import CollectiveGroup, CollectiveOp, RunMesh, collective_groups
from tilescope.perfdb.op_alignment import align
from tilescope.perfdb.schema import OpRecord, Run

BY_NAME, BY_SEQUENCE = "name", "sequence"  # how a diff paired the ops
REPORT_REF = "report:"  # the model reference of a run made of a measured report
MEASURED = "measured"  # a run's kind, when it was measured
# a measured op named by position: its op code (any the report reader takes, but a MLIR location's
# quotes and brackets), then its count among that code's ops on its device
_POSITIONAL = re.compile(r'[^#\s"()]{1,128}#[0-9]+')
# a tensor's name within an op record's tensors (JSON text): it names, not describes, the tensor
_TENSOR_NAME = re.compile(r'"name":\s*"(?:[^"\\]|\\.)*"')


# Slotted and not frozen: one per op of a 100k-op run, as perfdb.diff's records.
@dataclass(slots=True)
class StepOp:
    """The records of one op in a run's step, as a diff reads them."""

    name: str  # as stored
    device: int
    kind: str
    ns: float  # device time, summed over the records of its name (by name) or its own (by sequence)
    params: tuple  # of its first record: RecordedParams' fields as stored (RecordedParams.recorded)
    # the band of a predicted time (ns), summed like it: one op's repeats err alike; None: measured
    error_ns: float | None = None

    @property
    def label(self) -> str:
        """Its name in a diff: with its device past the first."""
        return f"{self.name} (device {self.device})" if self.device else self.name


@dataclass(frozen=True)
class Pairing:
    """Two runs' step ops paired: both runs' op of each pair, and those of one run alone, each in
    execution order (device by device)."""

    how: str  # BY_NAME or BY_SEQUENCE
    pairs: tuple[tuple[StepOp, StepOp], ...]
    removed: tuple[StepOp, ...]  # only in run a
    inserted: tuple[StepOp, ...]  # only in run b


def read_step_ops(session: Session, run_id: int) -> list[StepOp]:
    """Every op record of a run's step, device by device, each in execution order. The tensors come
    as JSON text, decoded only for the ops whose records differ: decoding every op's took a diff of
    two 10k-op runs from 0.2 to 0.8 s."""
    rows = session.execute(
        select(
            OpRecord.name,
            OpRecord.device,
            OpRecord.kind,
            OpRecord.duration_ns,
            OpRecord.error_band,
            OpRecord.memory,
            OpRecord.grid,
            OpRecord.cores,
            OpRecord.fidelity,
            OpRecord.config,
            cast(OpRecord.tensors, Text),
        )
        .where(OpRecord.run_id == run_id)
        .order_by(OpRecord.device, OpRecord.start_ns, OpRecord.id)
    )
    # RecordedParams are made only of the records that differ: of 100k ops each, the rows as read
    return [
        StepOp(row[0], row[1], row[2], row[3], row[5:], None if row[4] is None else row[4] * row[3]) for row in rows
    ]


def named_by_position(run: Run, ops: list[StepOp]) -> bool:
    """Whether a run names its ops by position (op code and count), as a report without LOC
    column does: such a name is no identity across two reports."""
    if run.kind != MEASURED and not run.model_ref.startswith(REPORT_REF):
        return False
    return any(_POSITIONAL.fullmatch(op.name) for op in ops)


def pair_ops(a: list[StepOp], b: list[StepOp], by_sequence: bool, codes: bool) -> Pairing:
    """The ops of two runs paired by name, or as sequences when `by_sequence`: by op code and kind
    when both runs name ops by `codes`, else by kind alone (a simulated op has no op code)."""
    return _by_sequence(a, b, codes) if by_sequence else _by_name(a, b)


def _by_name(a: list[StepOp], b: list[StepOp]) -> Pairing:
    """Pairs of equal name and device; an op recorded twice (a loop) counts once, its times summed."""
    x, y = _summed(a), _summed(b)
    return Pairing(
        BY_NAME,
        tuple((op, y[key]) for key, op in x.items() if key in y),
        tuple(op for key, op in x.items() if key not in y),
        tuple(op for key, op in y.items() if key not in x),
    )


def _summed(ops: list[StepOp]) -> dict[str | tuple[int, str], StepOp]:
    """Its name (device 0's, as all of a simulated run's) or (device, name) -> its first op, the
    times of the others so named added to it."""
    found: dict[str | tuple[int, str], StepOp] = {}
    for op in ops:
        known = found.setdefault((op.device, op.name) if op.device else op.name, op)
        if known is not op:
            known.ns += op.ns
            if known.error_ns is not None and op.error_ns is not None:
                known.error_ns += op.error_ns
    return found


def _by_sequence(a: list[StepOp], b: list[StepOp], codes: bool) -> Pairing:
    """Each device's ops aligned as two sequences, as many of the same op paired as can be, and
    among those alignments one pairing most ops that ran alike (every parameter recorded the same),
    then most that also took the same time (a report and an edited copy of it): op_alignment.align."""
    x, y = _devices(a), _devices(b)
    pairs, removed, inserted = [], [], []
    for device in sorted(x.keys() | y.keys()):
        left, right = x.get(device, []), y.get(device, [])
        found = align([_op(op, codes) for op in left], [_op(op, codes) for op in right], _likeness(left, right))
        pairs += [(left[i], right[j]) for i, j in found]
        paired_a, paired_b = {i for i, _ in found}, {j for _, j in found}
        removed += [op for i, op in enumerate(left) if i not in paired_a]
        inserted += [op for j, op in enumerate(right) if j not in paired_b]
    return Pairing(BY_SEQUENCE, tuple(pairs), tuple(removed), tuple(inserted))


def _devices(ops: list[StepOp]) -> dict[int, list[StepOp]]:
    found: dict[int, list[StepOp]] = {}
    for op in ops:
        found.setdefault(op.device, []).append(op)
    return found


def _op(op: StepOp, codes: bool) -> tuple[str, str] | str:
    """Which op it is: its op code (a positional name's stem) and kind, or its kind alone."""
    return (op.name.partition("#")[0], op.kind) if codes else op.kind


def _likeness(a: list[StepOp], b: list[StepOp]):
    """How alike a[i] and b[j] ran: (every parameter recorded the same, and the same time too)."""

    def likeness(i: int, j: int) -> tuple[int, int]:
        x, y = a[i], b[j]
        alike = _described(x.params) == _described(y.params)
        return (alike, alike and x.ns == y.ns)

    return likeness


def _described(params: tuple) -> tuple:
    """What an op's record says of how it ran, tensor names left out (they name, not describe)."""
    *own, tensors = params
    return (*own, _TENSOR_NAME.sub("", tensors) if tensors else "")


def collectives_only_in(session: Session, run_id: int, ops: list[StepOp], mesh: RunMesh) -> tuple[CollectiveOp, ...]:
    """The collectives among `ops` (ops of the run the other run lacks), in execution order: kind,
    the devices exchanging data and their link row's axes (a simulated run's link rows), the bytes
    each sends (its first record's), one device's time."""
    wanted = [op for op in ops if op.kind in COLLECTIVES]
    if not wanted:
        return ()
    groups = collective_groups(session, run_id, mesh)
    sent: dict[tuple[int, str], float] = {}
    rows = session.execute(
        select(OpRecord.device, OpRecord.name, OpRecord.bytes)
        .where(OpRecord.run_id == run_id, OpRecord.kind.in_(COLLECTIVES))
        .order_by(OpRecord.start_ns, OpRecord.id)
    )
    for device, name, moved in rows:
        sent.setdefault((device, name), (moved or {}).get("link", 0.0))
    found = []
    for op in wanted:
        group = groups.get(op.name, CollectiveGroup("", mesh.devices))
        axes = ",".join(link_axes(group.row))
        found.append(CollectiveOp(op.label, op.kind, group.devices, axes, sent.get((op.device, op.name), 0.0), op.ns))
    return tuple(found)
