"""Attention and collectives as a report measured them.

Attention: the queries, keys and values are picked from the operands by shape (a ring attention
lists its own chunk's keys and values, empty joint ones, then the keys and values gathered from
the ring: the gathered ones are what it reads), with a mask when one is [.., Sq, Sk].

Collectives: one device's part of an all_gather, reduce_scatter or all_reduce, over the mesh axis
the attributes name (cluster_axis), on the system the report is replayed on, between a
mesh_shard that gives each device its piece and one that joins them, so the links are costed as
the system's (compiler/sim/collectives.py). On a single device a collective is costed as its copy.
"""

from __future__ import annotations

import re

from tilescope.compiler.frontend.zoo.builder import MlirBuilder
from tilescope.compiler.profiles.replay_layouts import OP, placement
from tilescope.compiler.profiles.replay_model import Built, NotBuilt, OneOp, mlir_dtype
from tilescope.compiler.profiles.report import ReportOp, ReportTensor
from tilescope.compiler.targets.chip import Target

_INT = re.compile(r"-?\d{1,4}")


def attention(op: ReportOp, kind: str, target: Target) -> Built:
    """Scaled dot-product attention of Q [B, Hq, Sq, D] over K [B, Hk, Sk, D] and V [B, Hk, Sk, Dv]."""
    model = OneOp(op)
    present = [i for i in model.inputs if len(op.inputs[i].shape) == 4]
    if len(present) < 3:
        raise NotBuilt("attention needs queries, keys and values of four dimensions")
    q, rest = present[0], present[1:]
    qs = op.inputs[q].shape
    keys = [i for i in rest if op.inputs[i].shape[-1] == qs[-1]] or rest[:1]
    k = max(keys, key=lambda i: (op.inputs[i].shape[-2], -i))
    ks = op.inputs[k].shape
    values = [i for i in rest if i != k and op.inputs[i].shape[-2] == ks[-2]]
    if not values:
        raise NotBuilt(f"no values of {ks[-2]} positions beside keys {ks}")
    v = values[0]
    decode = kind.endswith("_decode")
    batch, heads, q_len = (qs[1], qs[2], 1) if decode else (qs[0], qs[1], qs[2])
    masks = [i for i in rest if i not in (k, v) and op.inputs[i].shape[-2:] == (q_len, ks[-2])]
    operands = [q, k, v, *masks[:1]]
    props = (
        f"batch = {batch} : i64, heads = {heads} : i64, kv_heads = {ks[1]} : i64, q_len = {q_len} : i64, "
        f"kv_len = {ks[-2]} : i64, head_dim = {qs[-1]} : i64"
    )
    result = op.outputs[0] if op.outputs else None
    if result is None or not result.elements:
        raise NotBuilt("attention gives no result")
    notes = []
    if op.attributes.get("is_causal", "").lower() in ("true", "1"):
        props += ", causal = true"
        ring = _attr_int(op, "ring_size") or 1
        if ring > 1 and ks[-2] >= ring * q_len:
            # a ring attention's device holds one of `ring` query shards; which one the report
            # does not say, so its queries sit at the ring's mean place among the keys
            props += f", q_offset = {(ring - 1) * q_len // 2} : i64"
            notes.append(f"causal ring attention over {ring} devices: queries costed at the ring's mean position")
    out = model.emit(kind, operands, props, [_typed(result)])
    if op.inputs[v].shape[-1] != qs[-1]:
        notes.append(f"values' head dim {op.inputs[v].shape[-1]} costed as the queries' {qs[-1]}")
    # one result: the others (a ring attention's joint output, its log-sum-exp) are not built
    return model.done(kind, out, operands, target, notes, results=(0,))


def collective(op: ReportOp, kind: str, target: Target) -> Built:
    """One device's part of a collective over one mesh axis of the target's system."""
    model = OneOp(op)
    if not model.inputs or not op.outputs:
        raise NotBuilt(f"{kind} needs an operand and a result")
    source = op.inputs[model.inputs[0]]
    index = _result(op, kind)
    result = op.outputs[index]
    mesh = target.system.mesh
    dim = _attr_int(op, "dim", "scatter_dim", "all_gather_dim")
    if dim is None or not -len(source.shape) <= dim < len(source.shape):
        if kind != "all_reduce":
            raise NotBuilt(f"{kind} without a dimension it gathers or scatters")
        dim = 0
    dim %= len(source.shape)
    laid = placement(op, kind, model.inputs[:1], target, (index,))
    if target.system.devices <= 1:  # a mesh of one: the collective is its copy
        text = _mesh_module(kind, source, result, dim, 0, 1, (1, 1), pieces=False)
        return Built(text, laid.overrides, (f"{kind} on one device: costed as its copy", *laid.notes))
    factor = _factor(kind, source, result, dim)
    axis = _axis(op, mesh, factor)
    if axis is None:
        raise NotBuilt(f"{kind} over {factor} devices fits no axis of {target.name}'s {mesh[0]}x{mesh[1]} mesh")
    return Built(_mesh_module(kind, source, result, dim, axis, factor, mesh), laid.overrides, laid.notes)


def _result(op: ReportOp, kind: str) -> int:
    """Which output is the collective's result: a reduce_scatter lists an intermediate buffer
    first, the scattered result (the smallest output) last."""
    outputs = [i for i, t in enumerate(op.outputs) if t.elements]
    if not outputs:
        raise NotBuilt(f"{kind} gives no result")
    if kind == "reduce_scatter":
        return min(outputs, key=lambda i: op.outputs[i].elements)
    return outputs[0]


def _factor(kind: str, source: ReportTensor, result: ReportTensor, dim: int) -> int:
    """How many devices the shapes say the collective spans."""
    have, give = source.shape[dim], result.shape[dim]
    if kind == "all_gather" and have and give % have == 0:
        return give // have
    if kind == "reduce_scatter" and give and have % give == 0:
        return have // give
    if kind == "all_reduce":
        return 0  # any: the axis the attributes name
    raise NotBuilt(
        f"{kind} of {source.shape} to {result.shape} along dimension {dim} splits no whole number of devices"
    )


def _axis(op: ReportOp, mesh: tuple[int, int], factor: int) -> int | None:
    """The mesh axis the collective runs over: the one its cluster_axis names when it spans
    `factor` devices (any, for 0), else any axis of that many."""
    named = _attr_int(op, "cluster_axis")
    if named is not None and 0 <= named < len(mesh) and factor in (0, mesh[named]):
        return named
    return next((i for i, size in enumerate(mesh) if size == factor and size > 1), None)


def _attr_int(op: ReportOp, *keys: str) -> int | None:
    for key in keys:
        found = _INT.fullmatch(op.attributes.get(key, "").strip())
        if found:
            return int(found[0])
    return None


def _typed(t: ReportTensor) -> tuple[tuple[int, ...], str]:
    return t.shape, mlir_dtype(t.dtype)


def _mesh_module(
    kind: str,
    source: ReportTensor,
    result: ReportTensor,
    dim: int,
    axis: int,
    factor: int,
    mesh: tuple[int, int],
    pieces: bool = True,
) -> str:
    """The TTIR module: the whole tensor split into each device's piece (or given whole), the
    collective, and the pieces joined again; without `pieces`, the collective alone (a mesh of one)."""
    dtype = mlir_dtype(source.dtype)
    local_in, local_out = MlirBuilder.tensor_type(source.shape, dtype), MlirBuilder.tensor_type(result.shape, dtype)
    split_dims = ", ".join(str(dim) if i == axis else "-1" for i in range(len(mesh)))
    split_shape = ", ".join(str(factor) if d == dim else "1" for d in range(len(source.shape)))
    split = (
        f"shard_dims = array<i64: {split_dims}>, shard_shape = array<i64: {split_shape}>, "
        "shard_type = #ttcore.shard_type<devices>"
    )
    whole = "shard_dims = array<i64: -1>, shard_shape = array<i64: 1>, shard_type = #ttcore.shard_type<replicate>"
    if kind == "all_gather":
        full_in, full_out, into, out_of = MlirBuilder.tensor_type(result.shape, dtype), local_out, split, whole
        props = f"all_gather_dim = {dim} : si32, cluster_axis = {axis} : ui32"
    elif kind == "reduce_scatter":
        full_in, full_out, into, out_of = local_in, MlirBuilder.tensor_type(source.shape, dtype), whole, split
        props = f"cluster_axis = {axis} : ui32, reduce_type = #ttcore.reduce_type<sum>, scatter_dim = {dim} : si32"
    else:
        full_in, full_out, into, out_of = local_in, local_out, whole, whole
        props = f"cluster_axis = {axis} : ui32, reduce_type = #ttcore.reduce_type<sum>"
    direction = "#ttcore.shard_direction<{}>"
    module = f'module attributes {{ttcore.meshes = #ttcore.meshes<[<"mesh" = {mesh[0]}x{mesh[1]}>]>}} {{'
    if not pieces:
        return "\n".join(
            [
                module,
                f"  func.func @forward(%arg0: {local_in}) -> {local_out} {{",
                f'    %0 = "ttir.{kind}"(%arg0) <{{{props}}}> : ({local_in}) -> {local_out} loc("{OP}")',
                f"    return %0 : {local_out}",
                "  }",
                "}",
            ]
        )
    return "\n".join(
        [
            module,
            f"  func.func @forward(%arg0: {full_in}) -> {full_out} {{",
            f'    %0 = "ttir.mesh_shard"(%arg0) <{{{into}, shard_direction = {direction.format("full_to_shard")}}}> '
            f': ({full_in}) -> {local_in} loc("in")',
            f'    %1 = "ttir.{kind}"(%0) <{{{props}}}> : ({local_in}) -> {local_out} loc("{OP}")',
            f'    %2 = "ttir.mesh_shard"(%1) <{{{out_of}, shard_direction = {direction.format("shard_to_full")}}}> '
            f': ({local_out}) -> {full_out} loc("out")',
            f"    return %2 : {full_out}",
            "  }",
            "}",
        ]
    )
