"""One measured op as a one-op model of tilescope's IR: its operands as the model's arguments, the op
of the kind its code names (compiler.profiles.op_codes) reading them, shaped as the report says
(logical shapes, W Z Y X), and the overrides that lay it out as the report recorded.

Each family of kinds has a builder: element-wise, normalization, reduction, sampling and
data-movement ops are the op over the report's tensors; matmuls, cache writes and lookups order
their operands; convolutions and pooling, attention and collectives read their sizes from the
attributes (replay_windows.py, replay_mesh.py). A kind no builder takes, or an op whose recorded
sizes do not make one, is not built, with the reason: never guessed.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from collections.abc import Callable

from tilescope.compiler.ir import opset
from tilescope.compiler.profiles import replay_mesh, replay_windows
from tilescope.compiler.profiles.matmul_configs import program_blocks
from tilescope.compiler.profiles.op_codes import UNARY_CODES, unary_chain
from tilescope.compiler.profiles.replay_model import Built, NotBuilt, OneOp
from tilescope.compiler.profiles.report import ReportOp
from tilescope.compiler.targets.chip import Target


# ops whose report lists their output buffer, allocated beforehand, as their last operand; an
# element-wise op given an output tensor lists it too, past the operands its kind takes
PREALLOCATED = ("MoveDeviceOperation",)
ARITY = {opset.ELTWISE_UNARY: 1, opset.ELTWISE_BINARY: 2, opset.ELTWISE_TERNARY: 3}
# copies between a shard and a slice of an interleaved tensor: the shard written into the tensor
# in place (the tensor listed as an operand), as a cache update is; or a slice of it read
PARTIAL_WRITES = ("ShardedToInterleavedPartialDeviceOperation",)
PARTIAL_READS = ("InterleavedToShardedPartialDeviceOperation",)
MAX_RANK = 8  # dims of a permutation a report may name
# attributes of the report a kind's kernel reads: the report's key, tilescope's, and whether a list
MINIMAL_MATMUL = "MinimalMatmulOp"  # pads M, N and K to whole blocks of its config's sizes
_BLOCK_SIZE = re.compile(r"\b([MNK]_block_size)=(\d{1,6})\b")
MAX_BLOCK = 1024
_TRANSPOSE_DIM = re.compile(r"TransposeOpDim::([NCHW]{2})\b")
KIND_ATTRIBUTES = {"groupnorm": (("num_groups", "num_groups", False),), "permute": (("dims", "permutation", True),)}


def streamed(op: ReportOp, kind: str, target: Target) -> Built:
    """An op over the report's tensors as they are: its non-empty inputs in, its outputs out."""
    op = logical_permute(op) if kind == "permute" else op
    model = OneOp(op)
    inputs = list(model.inputs)
    arity = ARITY.get(opset.op_class(kind).kind_class, len(inputs))
    if (
        (op.op_code.startswith(PREALLOCATED) or len(inputs) > arity)
        and len(inputs) > 1
        and op.outputs
        and op.inputs[inputs[-1]] == op.outputs[0]
    ):
        inputs.pop()  # its output, allocated before it runs, listed as an operand: written, not read
    if not inputs:
        raise NotBuilt("no operand holds data")
    props = ", ".join(filter(None, (_prop(op, *said) for said in KIND_ATTRIBUTES.get(kind, ()))))
    if kind == "transpose":
        props = _transposed(op.attributes.get("dim", ""), len(op.inputs[inputs[0]].shape))
    chain = unary_chain(op.attributes) if op.op_code in UNARY_CODES else ()
    if chain:  # the chain's later functions, applied to each tile in the same kernel
        props = ", ".join(filter(None, (props, f"fused_kinds = [{', '.join(map(json.dumps, chain))}]")))
    return model.done(kind, model.emit(kind, inputs, props), inputs, target)


def logical_permute(op: ReportOp) -> ReportOp:
    """A permute whose report lists one side with more elements than the other, the larger side
    taken as the other's dims permuted: a permute moves elements and adds none, so the report (a
    trace, which lists tiles' padded dims) listed that side padded."""
    dims = [int(v) for v in re.findall(r"-?\d{1,3}", op.attributes.get("dims", ""))]
    if not op.inputs or not op.outputs:
        return op
    source, out = op.inputs[0], op.outputs[0]
    rank = len(source.shape)
    if sorted(dims) != list(range(rank)) or len(out.shape) != rank or out.elements == source.elements:
        return op
    if out.elements > source.elements:  # the output padded: the input's dims permuted
        shape = tuple(source.shape[d] for d in dims)
        return replace(op, outputs=(replace(out, shape=shape, padded=shape), *op.outputs[1:]))
    inverse = sorted(range(rank), key=lambda axis: dims[axis])  # the input padded: the output's unpermuted
    shape = tuple(out.shape[d] for d in inverse)
    return replace(op, inputs=(replace(source, shape=shape, padded=shape), *op.inputs[1:]))


def _transposed(dim: str, rank: int) -> str:
    """The dims a TransposeOpDim (HC, WH, CN, ...: of N, C, H, W) swaps, as `dim0`, `dim1` of a
    tensor of `rank`; "" when the report names none."""
    found = _TRANSPOSE_DIM.search(dim)
    if not found or rank < 4:
        return ""
    first, second = ("NCHW".index(letter) + rank - 4 for letter in found[1])
    return f"dim0 = {first} : si32, dim1 = {second} : si32"


def _prop(op: ReportOp, key: str, name: str, is_list: bool) -> str:
    """`name = value` in MLIR of the report's positive integer (or permutation) attribute `key`;
    NotBuilt when the report gives one that is not."""
    value = op.attributes.get(key, "").strip()
    if not value:
        return ""
    if is_list:
        found = [int(v) for v in re.findall(r"-?\d{1,3}", value)[: MAX_RANK + 1]]
        if not found or sorted(found) != list(range(len(found))) or len(found) > MAX_RANK:
            raise NotBuilt(f"{key} {value[:40]!r} is not a permutation of at most {MAX_RANK} dims")
        return f"{name} = array<i64: {', '.join(map(str, found))}>"
    if not (value.isascii() and value.isdigit() and len(value) <= 9 and int(value) > 0):
        raise NotBuilt(f"{key} {value[:40]!r} is not a positive integer")
    return f"{name} = {int(value)} : i64"


def cache_write(op: ReportOp, kind: str, target: Target) -> Built:
    """A write of new rows into a larger tensor in place (a KV cache, a slice written back):
    tilescope's update_cache reads the tensor written first, then the rows. SliceWrite lists the
    rows first; the others the cache."""
    model = OneOp(op)
    if len(model.inputs) < 2:
        raise NotBuilt(f"{kind} needs the tensor written and the rows written into it")
    order = list(model.inputs)
    first, second = op.inputs[order[0]], op.inputs[order[1]]
    if first.elements < second.elements:  # the rows first (SliceWrite): the cache is the larger
        order[0], order[1] = order[1], order[0]
    return model.done("update_cache", model.emit("update_cache", order), order, target)


def lookup(op: ReportOp, kind: str, target: Target) -> Built:
    """An embedding: the ids, then the table (the larger input) it reads rows of."""
    model = OneOp(op)
    if len(model.inputs) < 2:
        raise NotBuilt("embedding needs its ids and its table")
    order = sorted(model.inputs, key=lambda i: op.inputs[i].elements)
    return model.done(kind, model.emit(kind, order), order, target)


def matmul(op: ReportOp, kind: str, target: Target) -> Built:
    """A matmul of A [.., M, K] and B [.., K, N] (transposed as the attributes say), the bias and
    any other input beside them as the report lists them."""
    model = OneOp(op)
    if len(model.inputs) < 2:
        raise NotBuilt("matmul needs two operands")
    a, b = (op.inputs[i].shape for i in model.inputs[:2])
    flags = {side: op.attributes.get(f"transpose_{side}", "").lower() in ("true", "1") for side in "ab"}
    k_a = a[-2] if flags["a"] else a[-1]
    k_b = b[-1] if flags["b"] else b[-2]
    if k_a != k_b:
        raise NotBuilt(f"matmul operands {a} and {b} do not share K")
    props = [f"transpose_{side} = true" for side, on in flags.items() if on]
    blocks = _padded_blocks(op.attributes.get("config", "")) if op.op_code == MINIMAL_MATMUL else ()
    if blocks:
        props.append(f"padded_block = array<i64: {', '.join(map(str, blocks))}>")
    props.extend(program_blocks(op.attributes.get("program_config", "")))
    return model.done(kind, model.emit(kind, model.inputs, ", ".join(props)), model.inputs, target)


def _padded_blocks(config: str) -> tuple[int, ...]:
    """M, N and K block sizes (tiles) of a MinimalMatmulConfig, or () when it does not give all three."""
    found = {key: int(value) for key, value in _BLOCK_SIZE.findall(config[:4096])}
    sizes = tuple(found.get(f"{side}_block_size", 0) for side in "MNK")
    return sizes if all(0 < size <= MAX_BLOCK for size in sizes) else ()


Builder = Callable[[ReportOp, str, Target], Built]


def _families() -> dict[str, Builder]:
    by_class = {
        cls: streamed for cls in (*opset.ELTWISE_CLASSES, opset.NORM, opset.REDUCE, opset.DATA_MOVEMENT, opset.SAMPLE)
    }
    by_kind: dict[str, Builder] = {
        "matmul": matmul,
        "embedding": lookup,
        "update_cache": cache_write,
        "fill_cache": cache_write,
        "conv2d": replay_windows.conv2d,
        "max_pool2d": replay_windows.pool2d,
        "avg_pool2d": replay_windows.pool2d,
        "scaled_dot_product_attention": replay_mesh.attention,
        "scaled_dot_product_attention_decode": replay_mesh.attention,
        **dict.fromkeys(opset.COLLECTIVES, replay_mesh.collective),
    }
    return {**{k: by_class[c.kind_class] for k, c in opset.KINDS.items() if c.kind_class in by_class}, **by_kind}


FAMILIES: dict[str, Builder] = _families()


def build(op: ReportOp, kind: str, target: Target) -> Built:
    """The one-op model of `op` as `kind`; NotBuilt when no builder takes the kind or the op."""
    if op.op_code.startswith(PARTIAL_WRITES):
        return cache_write(op, kind, target)
    if op.op_code.startswith(PARTIAL_READS):
        return streamed(op, "slice", target)
    builder = FAMILIES.get(kind)
    if builder is None:
        raise NotBuilt(f"no builder for kind {kind!r}" if kind else f"op code {op.op_code!r} has no kind in tilescope")
    return builder(op, kind, target)
