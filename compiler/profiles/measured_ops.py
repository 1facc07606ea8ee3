"""A measured report's device ops as op records (compiler.sim.records.OpTiming at level "measured"):
what perfdb stores of a measured run, as the simulator's records are what it stores of a simulated
one, so every view and diff reads both alike.

Each op is named as compiler/profiles/naming.py says, is of its code's vocabulary kind (the code
itself when tilescope has no kind for it), starts where its device's clock says (laid back to back
with its op-to-op latency when the report has no device clock), lasts its DEVICE KERNEL DURATION,
and counts the FLOPs and bytes its shapes give against the target's roofline.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilescope.compiler.ir.opset import kind_of as vocabulary_kind
from tilescope.compiler.profiles.naming import op_names
from tilescope.compiler.profiles.op_codes import kind_of
from tilescope.compiler.profiles.op_work import OpWork, TooMuchWork, op_work
from tilescope.compiler.profiles.report import Report, ReportOp, ReportTensor
from tilescope.compiler.sim.records import OpTiming, TensorUse
from tilescope.compiler.targets.chip import Target

MEASURED = "measured"  # an op record's level and bound
MAX_KIND = 64  # characters of a kind perfdb keeps (an unknown op code stands for its kind)


@dataclass(frozen=True)
class MeasuredOps:
    """A report's device ops as records, in report order, each with the report op it is of, and the
    rows left out, each with why."""

    ops: tuple[OpTiming, ...]
    measured: tuple[ReportOp, ...]  # aligned with ops
    skipped: tuple[str, ...]


def measured_kind(op: ReportOp) -> str:
    """The op's kind in tilescope's vocabulary; for a code it has none for, the code itself (a
    trace's event name read as an op name where it is one: `aten::linear` is a matmul)."""
    found = kind_of(op.op_code, op.attributes)
    if not found and op.track:
        found = vocabulary_kind(op.op_code.rpartition("::")[2]) or ""
    return (found or op.op_code)[:MAX_KIND]


def measured_ops(report: Report, target: Target) -> MeasuredOps:
    """Every device op of `report` as a measured op record on `target` (whose peaks bound it)."""
    names = op_names(report)
    starts = _starts(report)
    ops, measured, skipped = [], [], []
    for op, name, start in zip(report.ops, names, starts):
        kind = measured_kind(op)
        try:
            work = op_work(op, kind, target)
        except TooMuchWork as err:
            skipped.append(f"{report.source}:{op.line}: {op.op_code}: {err}")
            continue
        ops.append(_record(op, name, kind, start, work, report.source))
        measured.append(op)
    return MeasuredOps(tuple(ops), tuple(measured), tuple(skipped))


def _starts(report: Report) -> list[float]:
    """Each op's start (ns): on its device's clock when the report gives one for every op of the
    device, else each op after the one before it on its device, its op-to-op latency between."""
    clocked = {d: all(op.device_start_ns is not None for op in report.device_ops(d)) for d in report.devices}
    clock: dict[int, float] = {}
    starts = []
    for op in report.ops:
        if clocked[op.device]:
            start = op.device_start_ns
        else:
            start = clock.get(op.device, 0.0) + (op.op_to_op_ns or 0.0)
            clock[op.device] = start + (op.kernel_ns or 0.0)
        starts.append(start)
    return starts


def _record(op: ReportOp, name: str, kind: str, start: float, work: OpWork, source: str) -> OpTiming:
    duration = op.kernel_ns or 0.0
    seconds = duration * 1e-9  # a denormal duration's seconds are 0: no rate is measured then
    achieved = work.flops / seconds if seconds else 0.0
    out = op.outputs[0] if op.outputs else None
    why = f"measured ({source}:{op.line})"
    if work.roofline_ns > 0 and duration:
        why += f"; {duration / work.roofline_ns:.1f}x its roofline"
    return OpTiming(
        name=name,
        kind=kind,
        start_ns=start,
        duration_ns=duration,
        flops=work.flops,
        bytes=work.bytes,
        bound=MEASURED,
        why=why,
        memory=out.memory if out else "",
        grid="",
        cores=op.cores or 0,
        roofline_ns=work.roofline_ns,
        pct_peak=achieved / work.peak_flops * 100 if work.peak_flops and work.flops else 0.0,
        dispatch_wait_ns=op.op_to_op_ns or 0.0,
        level=MEASURED,
        fidelity=op.fidelity,
        tensors=_tensors(op),
        compute_ns=work.compute_ns,
        bandwidth_ns=work.bandwidth_ns,
        device=op.device,
        config=op.program_config,
        op_code=op.op_code,
    )


def _tensors(op: ReportOp) -> tuple[TensorUse, ...]:
    """The op's operands, then its results, as a simulated op record lists them (a report names
    no tensors, and a sharded tensor's grid only by its count of cores)."""
    return tuple(
        _use(f"{role}{i}", tensor)
        for role, tensors in (("in", op.inputs), ("out", op.outputs))
        for i, tensor in enumerate(tensors)
    )


def _use(role: str, tensor: ReportTensor) -> TensorUse:
    tile = "32x32" if tensor.layout == "tile" else ""
    return TensorUse(role, "", tensor.shape, tensor.dtype, tensor.memory, tensor.memory_layout, tensor.layout, tile, "")
