"""What TTIR's mesh ops and GSPMD's sharding custom calls say, once the mesh is known: the axes
each communicates over, the dimension it gathers, scatters or splits, the sharding of the tensors
it makes whole or splits, and which tensors hold one device's piece (see mesh_import.py).

TTIR: `ttir.mesh_shard` splits or joins a tensor; `shard_dims[i]` is the tensor dimension mesh axis
i splits (-1: none). TTIR's collectives name the mesh axis by position (`cluster_axis`), and work
on per-device tensors: so does everything between a full_to_shard and a shard_to_full.
"""

from __future__ import annotations

import math
import re

from tilescope.compiler.ir.meta import LINES
from tilescope.compiler.ir import attributes
from tilescope.compiler.errors import ModelLoadError, clip
from tilescope.compiler.ir.graph import Graph, Op
from tilescope.compiler.sharding.mesh import Mesh, Sharding

TTIR_COLLECTIVES = frozenset(
    {"ttir.all_gather", "ttir.reduce_scatter", "ttir.all_reduce", "ttir.collective_permute", "ttir.all_to_all"}
)
STABLEHLO_COLLECTIVES = frozenset(
    {
        "stablehlo.all_gather",
        "stablehlo.reduce_scatter",
        "stablehlo.all_reduce",
        "stablehlo.collective_permute",
        "stablehlo.all_to_all",
    }
)
_WORD = re.compile(r"<(\w+)>")
_FIRST_GROUP = re.compile(r"\[\[?([\d, ]*+)\]")
_CUSTOM_CALL = "stablehlo.custom_call"


def call_target(op: Op) -> str:
    return op.attrs.get("call_target_name", "").strip('"')


def is_shard_to_full(op: Op) -> bool:
    if op.kind == "ttir.mesh_shard":
        return "shard_to_full" in op.attrs.get("shard_direction", "")
    return op.kind == "sdy.shard_to_full" or (op.kind == _CUSTOM_CALL and call_target(op) == "SPMDShardToFullShape")


def annotate(
    graph: Graph, mesh: Mesh | None, local: set[str], shardings: dict[str, tuple[Sharding, str]], ref: str
) -> None:
    """Give TTIR's and GSPMD's mesh ops their attributes, add the shardings they make to
    `shardings` and the per-device tensors to `local`."""
    spreads = False
    for op in graph.ops:
        where = f"{ref}:{op.meta[LINES][0]}" if LINES in op.meta else ref
        if op.kind == "ttir.mesh_shard":
            _mesh_shard(graph, op, mesh, local, shardings, where)
            spreads = True
        elif op.kind in STABLEHLO_COLLECTIVES:
            _stablehlo_collective(op, mesh)
        elif op.kind in TTIR_COLLECTIVES:
            _ttir_collective(op, mesh, where)
            local.update(op.inputs[:1] + op.outputs)
            spreads = True
        elif op.kind == _CUSTOM_CALL and call_target(op) in ("Sharding", "SPMDShardToFullShape"):
            found = shardings.get(op.outputs[0]) if op.outputs else None
            op.attrs["axes"] = found[0].axes if found else ()
        elif op.kind == _CUSTOM_CALL and call_target(op) == "SPMDFullToShardShape" and op.inputs:
            found = shardings.get(op.inputs[0])
            op.attrs["axes"] = found[0].axes if found else ()
            if found:
                shardings[op.outputs[0]] = found
            local.update(op.outputs)
            spreads = True
    if spreads:  # what is computed from a device's piece is a device's piece, up to a shard_to_full
        for op in graph.ops:
            if not is_shard_to_full(op) and any(t in local for t in op.inputs):
                local.update(op.outputs)


def _mesh_axis(mesh: Mesh | None, index: int, where: str) -> str:
    if mesh is None:
        raise ModelLoadError(f"{where}: a mesh op, and no mesh (ttcore.meshes) in the module")
    if not 0 <= index < len(mesh.axes):
        raise ModelLoadError(f"{where}: mesh axis {index} of a {len(mesh.axes)}-axis mesh")
    return mesh.axes[index][0]


def _int(op: Op, key: str, where: str) -> int:
    found = attributes.ints(op.attrs.get(key))
    if len(found) != 1:
        raise ModelLoadError(f"{where}: {op.kind} needs an integer {key}")
    return found[0]


def _ttir_collective(op: Op, mesh: Mesh | None, where: str) -> None:
    a = op.attrs
    if "cluster_axis" in a:
        op.attrs["axes"] = (_mesh_axis(mesh, _int(op, "cluster_axis", where), where),)
    else:  # permutes and all-to-alls may name devices instead: every axis that has several
        split = attributes.ints(a.get("split_count"))
        axes = tuple(name for name, size in (mesh.axes if mesh else ()) if size > 1)
        if split and mesh is not None:
            single = [name for name, size in mesh.axes if size == split[0]]
            axes = (single[0],) if single and math.prod(mesh.size(x) for x in axes) != split[0] else axes
        op.attrs["axes"] = axes
    dim_key = {"ttir.all_gather": "all_gather_dim", "ttir.reduce_scatter": "scatter_dim"}
    dim_key["ttir.all_to_all"] = "split_dim"
    if op.kind in dim_key:
        op.attrs["dim"] = _int(op, dim_key[op.kind], where)
    if op.kind == "ttir.all_to_all":
        op.attrs["concat_dim"] = _int(op, "concat_dim", where)
    if "reduce_type" in a:
        word = _WORD.search(a["reduce_type"])
        op.attrs["reduce"] = word.group(1) if word else clip(a["reduce_type"], 20)


def _mesh_shard(graph: Graph, op: Op, mesh: Mesh | None, local: set[str], shardings: dict, where: str) -> None:
    to_full = is_shard_to_full(op)
    whole = graph.tensors[op.outputs[0] if to_full else op.inputs[0]]
    if "replicate" in op.attrs.get("shard_type", ""):
        sharding = Sharding.replicated(len(whole.shape))
    else:
        dims: list[list[str]] = [[] for _ in whole.shape]
        for axis, dim in enumerate(attributes.ints(op.attrs.get("shard_dims"))):
            if dim < 0:
                continue
            if dim >= len(dims):
                raise ModelLoadError(f"{where}: shard_dims names dimension {dim} of a rank-{len(dims)} tensor")
            dims[dim].append(_mesh_axis(mesh, axis, where))
        sharding = Sharding(tuple(tuple(d) for d in dims))
    op.attrs["axes"] = sharding.axes
    shardings[op.outputs[0]] = (sharding, where)
    if to_full:
        local.update(op.inputs[:1])
    else:
        local.update(op.outputs)


def _stablehlo_collective(op: Op, mesh: Mesh | None) -> None:
    """StableHLO's collectives name device groups, not axes: the group's devices, numbered
    row-major over the mesh, are the run of axes whose sizes multiply to the group's size and whose
    stride is the distance between its first two devices. No such run: every axis with several."""
    group = _FIRST_GROUP.search(op.attrs.get("replica_groups", ""))
    devices = [int(d) for d in group.group(1).split(",") if d.strip()] if group else []
    axes = tuple(name for name, size in (mesh.axes if mesh else ()) if size > 1)
    if mesh is not None and len(devices) > 1:
        spans = sorted((j - i, i) for i in range(len(mesh.axes)) for j in range(i + 1, len(mesh.axes) + 1))
        runs = [mesh.axes[i : i + n] for n, i in spans]  # the fewest axes first: size-1 axes left out
        for run in runs:
            names = tuple(name for name, _ in run)
            size = math.prod(s for _, s in run)
            if size == len(devices) and mesh.stride(names[-1]) == devices[1] - devices[0]:
                axes = names
                break
    op.attrs["axes"] = axes
    for key in ("all_gather_dim", "scatter_dimension", "split_dimension"):
        if attributes.ints(op.attrs.get(key)):
            op.attrs["dim"] = attributes.ints(op.attrs[key])[0]
    if attributes.ints(op.attrs.get("concat_dimension")):
        op.attrs["concat_dim"] = attributes.ints(op.attrs["concat_dimension"])[0]
    if op.kind in ("stablehlo.all_reduce", "stablehlo.reduce_scatter"):
        op.attrs["reduce"] = "sum"  # ASSUMED: the reduction body is not read; models reduce by sum
