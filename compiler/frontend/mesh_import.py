"""Multi-device models: the device mesh, tensor shardings and collectives, read while a model is
imported, from any of the three ways models say them:

- Shardy: `sdy.mesh` declarations, `sdy.sharding` attributes on arguments, results and ops, its
  explicit collectives, and `sdy.manual_computation`, whose body is inlined between one
  `full_to_shard` op per operand and one `shard_to_full` op per result;
- GSPMD: `mhlo.sharding` strings and the `@Sharding`, `@SPMDFullToShardShape` and
  `@SPMDShardToFullShape` custom calls (the mesh made as compiler/frontend/gspmd.py says);
- TTIR: the `ttcore.meshes` module attribute (axes "axis_0", "axis_1", ... by position, which
  `cluster_axis` indexes), `ttir.mesh_shard` and TTIR's collectives.

What the graph gets (the contract with the passes that partition it):
- graph.meta[MESH]: the Mesh; graph.meta[LOCAL]: names of tensors whose written shape is
  already one device's piece (manual bodies; from a TTIR or GSPMD full_to_shard to shard_to_full);
- Tensor.sharding where the source gives one;
- each collective and sharding op: attrs["axes"] (mesh axes it communicates over), attrs["dim"]
  (the dimension gathered, scattered or split, where it has one), attrs["reduce"] (e.g. "sum").
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from tilescope.compiler.ir.meta import LOCAL, MESH
from tilescope.compiler.frontend import gspmd
from tilescope.compiler.errors import ModelLoadError, clip
from tilescope.compiler.ir.graph import Graph, Op
from tilescope.compiler.frontend.mesh_collectives import annotate
from tilescope.compiler.sharding.mesh import Mesh, Sharding, check_mesh
from tilescope.compiler.frontend.shardy_syntax import ShardingSpec, parse_all_to_all, parse_axes_per_dim, parse_axis_set
from tilescope.compiler.frontend.shardy_syntax import parse_sharding, parse_sharding_list, sub_axis
from tilescope.compiler.frontend.shardy_text import Declared

_TTCORE_MESH = re.compile(r'ttcore\.meshes[ \t]*+=[ \t]*+#ttcore\.meshes<\[<"([^"\n]*+)"[ \t]*+=[ \t]*+([\dx]++)>')
_PARTITIONS = re.compile(r"mhlo\.num_partitions[ \t]*+=[ \t]*+(\d++)")
_SDY_AXES = {"all_gather": "gathering_axes", "all_slice": "slicing_axes", "reduce_scatter": "scattering_axes"}
_SUMMED = ("all_reduce", "reduce_scatter")


@dataclass
class _Spec:
    written: ShardingSpec | gspmd.Tiling | str  # Shardy's, or GSPMD's (a tiling or its kind)
    where: str


@dataclass
class MeshReader:
    """Collects what the importer meets, then `finish` resolves it against the one mesh."""

    ref: str
    declared: Declared
    text: str  # the module, for its mesh attributes
    specs: dict[str, _Spec] = field(default_factory=dict)  # by tensor name
    local: set[str] = field(default_factory=set)
    manual_depth: int = 0  # inside how many manual_computation bodies the importer is
    warnings: list[str] = field(default_factory=list)
    _read: dict[tuple, object] = field(default_factory=dict, repr=False)  # see _parsed

    def value(self, tensor: str, attributes, where: str) -> None:
        """An argument's or result's attributes (an ir.DictAttr or None)."""
        if attributes is None:
            return
        for key in ("sdy.sharding", "mhlo.sharding"):
            if key in attributes and tensor not in self.specs:
                self.specs[tensor] = _Spec(self._written(key, _string(attributes[key]), where), where)

    def op(self, op: Op, attributes, where: str) -> None:
        """An op's sharding attributes (`attributes`: the bindings' map, whose keys op.attrs has
        and whose values it may hold clipped), and what its kind says about communication."""
        if self.manual_depth:
            self.local.update(op.outputs)
        kind = op.kind.removeprefix("sdy.")
        if "sdy.sharding" in op.attrs:
            self._per_value(op.outputs, _string(attributes["sdy.sharding"]), where)
        if "mhlo.sharding" in op.attrs and len(op.outputs) == 1:
            text = _string(attributes["mhlo.sharding"])
            self.specs[op.outputs[0]] = _Spec(self._written("mhlo.sharding", text, where), where)
        for key in ("sharding", "out_sharding"):
            if op.kind.startswith("sdy.") and key in attributes and op.outputs:
                spec = self._parsed(parse_sharding, _string(attributes[key]), where)
                self.specs[op.outputs[0]] = _Spec(spec, where)
                op.attrs["axes"] = tuple(_base(a) for dim in spec.dims for a in dim)  # the op's own say more
        if op.kind.startswith("sdy.") and kind in (*_SDY_AXES, "all_reduce", "all_to_all", "collective_permute"):
            self._sdy_collective(op, kind, attributes, where)

    def _sdy_collective(self, op: Op, kind: str, attributes, where: str) -> None:
        if kind in _SDY_AXES:
            op.attrs[_SDY_AXES[kind]] = _attr(attributes, _SDY_AXES[kind], op.kind, where)
            per_dim = self._parsed(parse_axes_per_dim, op.attrs[_SDY_AXES[kind]], where)
            op.attrs["axes"] = tuple(_base(a) for dim in per_dim for a in dim)
            op.attrs["dim"] = next((i for i, dim in enumerate(per_dim) if dim), 0)
        elif kind == "all_reduce":
            op.attrs["reduction_axes"] = _attr(attributes, "reduction_axes", op.kind, where)
            op.attrs["axes"] = tuple(_base(a) for a in self._parsed(parse_axis_set, op.attrs["reduction_axes"], where))
        elif kind == "all_to_all":
            op.attrs["params"] = _attr(attributes, "params", op.kind, where)
            params = self._parsed(parse_all_to_all, op.attrs["params"], where)
            if not params:
                raise ModelLoadError(f"{where}: {op.kind} moves no axes")
            op.attrs["axes"] = tuple(_base(a) for axes, _, _ in params for a in axes)
            op.attrs["dim"], op.attrs["concat_dim"] = params[0][2], params[0][1]
        if kind in _SUMMED:
            op.attrs["reduce"] = "sum"

    def manual(self, operation, where: str) -> tuple[list[ShardingSpec], list[ShardingSpec], tuple[str, ...]]:
        """(in shardings, out shardings, manual axes) of a manual_computation."""
        attributes = operation.attributes
        kind = "sdy.manual_computation"
        ins = self._parsed(parse_sharding_list, _attr(attributes, "in_shardings", kind, where), where)
        outs = self._parsed(parse_sharding_list, _attr(attributes, "out_shardings", kind, where), where)
        axes = self._parsed(parse_axis_set, _attr(attributes, "manual_axes", kind, where), where)
        if len(ins) != len(operation.operands) or len(outs) != len(operation.results):
            raise ModelLoadError(
                f"{where}: manual_computation has {len(ins)} in_shardings for "
                f"{len(operation.operands)} operands, {len(outs)} out_shardings for "
                f"{len(operation.results)} results"
            )
        return ins, outs, tuple(_base(a) for a in axes)

    def boundary(self, op: Op, spec: ShardingSpec, axes: tuple[str, ...], where: str) -> None:
        """A full_to_shard or shard_to_full op of a manual_computation: its output's sharding."""
        op.attrs["axes"] = axes
        self.specs[op.outputs[0]] = _Spec(spec, where)
        if op.kind == "sdy.full_to_shard" or self.manual_depth:
            self.local.update(op.outputs)

    def _per_value(self, outputs: list[str], text: str, where: str) -> None:
        specs = self._parsed(parse_sharding_list, text, where)
        if len(specs) != len(outputs):
            raise ModelLoadError(f"{where}: {len(specs)} shardings for {len(outputs)} results")
        for name, spec in zip(outputs, specs):
            self.specs[name] = _Spec(spec, where)

    def _written(self, key: str, text: str, where: str):
        return self._parsed(parse_sharding if key == "sdy.sharding" else gspmd.parse, text, where)

    def _parsed(self, reader, text: str, where: str):
        # a model writes the same few shardings on every layer: each text is read once (the
        # specs are frozen, and lists of them only read)
        key = (reader, text)
        if key not in self._read:
            try:
                self._read[key] = reader(text)
            except (ValueError, IndexError) as err:
                raise ModelLoadError(f"{where}: malformed sharding '{clip(text, 60)}': {err}") from None
        return self._read[key]

    def finish(self, graph: Graph) -> None:
        """Choose the mesh, resolve every sharding on it, give mesh ops their axes and check each
        sharding against its tensor. Run once op lines are known (error messages name them)."""
        mesh = self._mesh()
        if mesh is not None:
            graph.meta[MESH] = mesh
        dropped: dict[str, int] = {}
        resolved: dict[str, tuple[Sharding, str]] = {}
        for name, spec in self.specs.items():
            tensor = graph.tensors.get(name)
            sharding = self._resolve(spec, len(tensor.shape), mesh, dropped) if tensor is not None else None
            if sharding is not None:
                resolved[name] = (sharding, spec.where)
        annotate(graph, mesh, self.local, resolved, self.ref)
        for name, (sharding, where) in resolved.items():
            tensor = graph.tensors[name]
            problem = sharding.problem(self._global_shape(tensor.shape, sharding, mesh, name), mesh or Mesh(()))
            if problem is not None:
                shown = f"sharding {clip(sharding.text(), 60)} of {clip(name)}"
                raise ModelLoadError(f"{where}: {shown}: {clip(problem, 120)}")
            tensor.sharding = sharding
        for why, count in dropped.items():
            self.warnings.append(f"{count} shardings not modelled ({why}): read as replicated")
        if mesh is not None or self.local:
            graph.meta[LOCAL] = self.local & set(graph.tensors)
        graph.warnings.extend(self.warnings)

    def _global_shape(self, shape: tuple[int, ...], sharding: Sharding, mesh: Mesh | None, name: str):
        if name not in self.local or mesh is None or len(shape) != len(sharding.dims):
            return shape
        return tuple(d * math.prod(mesh.size(a) for a in dim if mesh.has(a)) for d, dim in zip(shape, sharding.dims))

    def _resolve(self, spec: _Spec, rank: int, mesh: Mesh | None, dropped: dict[str, int]) -> Sharding | None:
        written = spec.written
        if not isinstance(written, ShardingSpec):
            sharding = gspmd.sharding_of(written, rank, mesh)
            if sharding is None or written == "maximal":
                why = "maximal: on one device" if sharding else "a GSPMD device order or tiling the mesh lacks"
                dropped[why] = dropped.get(why, 0) + 1
            return sharding
        if mesh is None or (written.mesh or "mesh") != mesh.name:
            reason = f"on mesh @{written.mesh}, not the model's @{mesh.name if mesh else '?'}"
            dropped[reason] = dropped.get(reason, 0) + 1
            return None
        dims = []
        for dim in written.dims:
            axes = tuple(_whole_axis(a, mesh) for a in dim)
            if None in axes:
                dropped["sub-axes of part of an axis"] = dropped.get("sub-axes of part of an axis", 0) + 1
            dims.append(tuple(a for a in axes if a is not None))
        return Sharding(tuple(dims), tuple(_whole_axis(a, mesh) or _base(a) for a in written.unreduced))

    def _mesh(self) -> Mesh | None:
        """The model's one mesh: the first one a Shardy sharding names, else the first declared,
        else GSPMD's, else TTIR's."""
        declared = {name: spec for name, (spec, _) in self.declared.meshes.items()}
        sdy = [s.written for s in self.specs.values() if isinstance(s.written, ShardingSpec)]
        for written in sdy:
            if written.mesh and written.mesh not in declared:
                where = next(s.where for s in self.specs.values() if s.written is written)
                raise ModelLoadError(f"{where}: sharding names mesh @{clip(written.mesh)}, which is not declared")
        name = next((w.mesh for w in sdy), None) if sdy else next(iter(declared), None)
        if name == "":
            spec, name = next(w.inline_mesh for w in sdy), "mesh"
        elif name is not None:
            spec = declared[name]
        else:
            other = self._other_mesh()
            if other is not None:
                check_mesh(other, self.ref)
            return other
        others = [n for n in declared if n != name]
        if others:
            self.warnings.append(
                f"one mesh per model: @{clip(name)} modelled, {', '.join('@' + clip(o) for o in others[:5])} not"
            )
        if spec.device_ids is not None and list(spec.device_ids) != list(range(len(spec.device_ids))):
            self.warnings.append(f"mesh @{clip(name)} lists its devices in another order: the default order assumed")
        line = self.declared.meshes.get(name, (None, None))[1]
        mesh = Mesh(spec.axes, name)
        check_mesh(mesh, f"{self.ref}:{line}" if line else self.ref)
        return mesh

    def _other_mesh(self) -> Mesh | None:
        tilings = [s.written for s in self.specs.values() if not isinstance(s.written, ShardingSpec)]
        partitions = _PARTITIONS.search(self.text)
        devices = int(partitions.group(1)) if partitions else None
        if tilings or (devices and devices > 1):
            return gspmd.mesh_of([t for t in tilings if isinstance(t, gspmd.Tiling)], devices)
        ttcore = _TTCORE_MESH.search(self.text)
        if ttcore is None:
            return None
        sizes = [int(s) for s in ttcore.group(2).split("x") if s]
        return Mesh(tuple((gspmd.AXIS.format(i), size) for i, size in enumerate(sizes)), ttcore.group(1) or "mesh")


def _attr(attributes, key: str, kind: str, where: str) -> str:
    if key not in attributes:
        raise ModelLoadError(f"{where}: {kind} without its {key}")
    return _string(attributes[key])


def _string(attr) -> str:
    """An attribute's text; a string attribute's value unquoted."""
    value = getattr(attr, "value", None)
    if isinstance(value, str):
        return value
    text = str(attr)
    if text.startswith('"'):
        from iree.compiler import ir  # noqa: PLC0415

        return ir.StringAttr(attr).value
    return text


def _base(axis: str) -> str:
    found = sub_axis(axis)
    return found[0] if found else axis


def _whole_axis(axis: str, mesh: Mesh) -> str | None:
    """A sub-axis that is its whole axis (`"x":(1)2` of an "x" of 2) is that axis; another is None."""
    found = sub_axis(axis)
    if found is None:
        return axis
    name, pre, size = found
    return name if pre == 1 and mesh.has(name) and mesh.size(name) == size else None
