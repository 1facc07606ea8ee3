"""What a measured op did, worked out from the shapes and dtypes its report lists: its useful FLOPs
(a matmul's 2MKN, a convolution's from its weight, per element what its kind's class counts, as
compiler/sim/flops.py counts a simulated op's) and the bytes it read and wrote in each memory, and
from them its roofline on a target (compiler/sim/bounds.py, as the simulator's).

A report gives tensors in tt-metal's W Z Y X order, padded and logical; FLOPs count logical
elements (padding is not work), bytes the padded ones (what is stored and moved).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from tilescope.compiler.ir.core_work import Compute
from tilescope.compiler.ir.dtypes import BYTES_PER_ELEMENT
from tilescope.compiler.ir.opset import ATTENTION, CONV, MATMUL, POOL, REDUCE, op_class
from tilescope.compiler.profiles.report import ReportOp, ReportTensor
from tilescope.compiler.sim import bounds
from tilescope.compiler.sim.flops import MAX_FLOPS
from tilescope.compiler.sim.records import NS
from tilescope.compiler.targets.chip import Target

DEFAULT_BYTES = 2.0  # an element of a dtype tilescope does not know: as bf16, the commonest
_TRUE = ("true", "1")


class OpWork(NamedTuple):
    """A measured op's work, and the lower bounds it sets on the target: no schedule runs faster."""

    flops: int
    bytes: dict[str, float]  # read and written, by the target's memory name (l1, dram)
    compute_ns: float  # the FLOPs at the engine's peak
    bandwidth_ns: float  # the busiest memory's bytes at its bandwidth
    peak_flops: float  # the engine's peak the FLOPs were set against; 0 for data movement

    @property
    def roofline_ns(self) -> float:
        return max(self.compute_ns, self.bandwidth_ns)


class TooMuchWork(ValueError):
    """The shapes give more FLOPs than a run stores (2^63): no real op does."""


def op_work(op: ReportOp, kind: str, target: Target) -> OpWork:
    """The work of `op`, of vocabulary kind `kind` ("" when its code is unknown: no FLOPs counted)."""
    count = op_flops(op, kind)
    if count > MAX_FLOPS:
        raise TooMuchWork(f"its shapes give {count:.3g} FLOPs, more than tilescope counts (2^63)")
    moved = op_bytes(op, target)
    engine = op_class(kind).engine if kind else "data"
    dtype = op.inputs[0].dtype if op.inputs else None
    peak = bounds.peak(target, Compute(engine, 0, 0.0, _fidelity(op, target), dtype))
    compute_s, memory_s = bounds.roofline_s(target, count, moved, peak)
    return OpWork(count, moved, compute_s * NS, memory_s * NS, peak)


def _fidelity(op: ReportOp, target: Target) -> str | None:
    """The fidelity the op ran at, when the target's matrix engine knows it (else its fastest)."""
    return op.fidelity if op.fidelity in target.matrix.fidelity_passes else None


def op_flops(op: ReportOp, kind: str) -> int:
    """Useful FLOPs of `op` from its logical shapes; 0 for data movement and unknown kinds."""
    if not kind or not op.outputs:
        return 0
    cls, out = op_class(kind), op.outputs[0]
    if cls.kind_class == MATMUL and len(op.inputs) >= 2:
        a = op.inputs[0].shape
        k = a[-2] if op.attributes.get("transpose_a", "").lower() in _TRUE else a[-1]
        return 2 * out.elements * k
    if cls.kind_class == CONV and len(op.inputs) >= 2:
        return 2 * out.elements * _conv_depth(op.inputs[1])
    if cls.kind_class == ATTENTION and len(op.inputs) >= 2:
        keys = op.inputs[1].shape[-2]  # K: (batch, heads, keys, head dim)
        scores = out.elements // max(out.shape[-1], 1) * keys
        return 2 * 2 * scores * out.shape[-1] + int(scores * cls.flops_per_element)  # Q K^T, P V, softmax
    if cls.kind_class in (REDUCE, POOL):
        return int(op.inputs[0].elements * cls.flops_per_element) if op.inputs else 0
    return int(math.ceil(out.elements * cls.flops_per_element))


def _conv_depth(weight: ReportTensor) -> int:
    """Multiply-adds per output element: the weight's rows as ttnn prepares it ((1, 1, KH*KW*C_in,
    C_out)), or its C_in*KH*KW as torch lays it out ((C_out, C_in, KH, KW))."""
    shape = weight.shape
    if len(shape) == 4 and shape[0] == 1 and shape[1] == 1:
        return shape[2]
    return math.prod(shape[1:])


def op_bytes(op: ReportOp, target: Target) -> dict[str, float]:
    """Bytes read and written in each of the target's memories: every operand's and result's padded
    size where it lives (a tensor in host memory, or where the report does not say, moves no
    device memory)."""
    names = {"l1": target.core_memory.name, "dram": target.dram.name}
    moved: dict[str, float] = {}
    for tensor in (*op.inputs, *op.outputs):
        memory = names.get(tensor.memory)
        if memory is not None:
            moved[memory] = moved.get(memory, 0.0) + tensor_bytes(tensor)
    return moved


def tensor_bytes(tensor: ReportTensor) -> float:
    """The tensor's stored size: its padded elements at its dtype's size."""
    return tensor.padded_elements * BYTES_PER_ELEMENT.get(tensor.dtype, DEFAULT_BYTES)


def l1_bytes_per_core(op: ReportOp, target: Target) -> float:
    """What the op's tensors take of one core's L1 while it runs (l1_tensors summed)."""
    return sum(held for _, _, held in l1_tensors(op, target))


def l1_tensors(op: ReportOp, target: Target) -> list[tuple[str, ReportTensor, float]]:
    """The op's tensors in L1, each with its role (in0, out0) and the bytes it takes of one core:
    its output's shard where its shard spec says, an L1-sharded operand's share of the op's cores
    (each core holds a shard), and an L1-interleaved tensor's share of every core of the chip (its
    pages go round all L1 banks)."""
    found = []
    roles = [(f"out{i}", t) for i, t in enumerate(op.outputs)] + [(f"in{i}", t) for i, t in enumerate(op.inputs)]
    for role, tensor in roles:
        if tensor.memory != "l1":
            continue
        size = BYTES_PER_ELEMENT.get(tensor.dtype, DEFAULT_BYTES)
        if role == "out0" and op.output_shard is not None:
            rows, cols = op.output_shard.shape
            held = rows * cols * size
        elif tensor.memory_layout.endswith("sharded"):
            held = math.ceil(tensor.padded_elements / max(op.cores or 1, 1)) * size
        else:
            held = math.ceil(tensor.padded_elements / target.cores) * size
        found.append((role, tensor, held))
    return found
