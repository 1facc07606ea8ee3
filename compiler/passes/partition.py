"""graph -> partition: the model split over the system's devices, one program every device runs.

    shardings  from the model (Shardy / GSPMD annotations), else chosen by the policy:
               inputs split along a `batch` axis by their leading dimension (data parallel), and
               matmul weights split Megatron-style along a `model` axis: column-parallel where
               the activation is whole, row-parallel where it arrives split along K
    propagate  op by op in program order (compiler/sharding/rules.py)
    reshard    where an op needs an operand split otherwise, the collectives that do it
               (compiler/sharding/resharding.py); the graph's results are returned whole
    localize   every tensor takes the shape of one device's piece

Weights, constants and inputs are loaded split: a tensor of those read by one op takes the
sharding that op wants at no cost. On a system of one device the level is the graph's own.

Sharding overrides (compiler/sharding/requests.py) set how an op reads an input (a tensor loaded
for that op alone is loaded so; another arrives through collectives) or what its result ends in
(the op computes by its rule, then collectives reshard it, as for a result the model annotates).
Their outcomes are kept in `meta[SHARDING_OUTCOMES]`, beside the requests they answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tilescope.compiler.ir.meta import COLLECTIVE_OPS, DEVICES, LOCAL, MESH, SHARDING_OUTCOMES, SHARDING_OVERRIDES
from tilescope.compiler.ir import attributes
from tilescope.compiler.ir import opset
from tilescope.compiler.sharding import rules
from tilescope.compiler.errors import ModelLoadError
from tilescope.compiler.ir.graph import Graph, Op, Tensor
from tilescope.compiler.pipeline.options import DEFAULT_OPTIONS, CompileOptions
from tilescope.compiler.ir.opset import COLLECTIVES
from tilescope.compiler.sharding.resharding import steps
from tilescope.compiler.sharding.mesh import SINGLE, Mesh, Sharding
from tilescope.compiler.sharding.requests import ShardingRequests
from tilescope.compiler.targets.chip import Target

DATA_AXES = ("batch", "data", "dp")
MODEL_AXES = ("model", "tp", "tensor")
CONSTRAINTS = ("sharding_constraint", "full_to_shard", "shard_to_full")


@dataclass(frozen=True)
class Partition:
    name = "partition"
    target: Target
    options: CompileOptions = DEFAULT_OPTIONS  # the shardings of its overrides

    def run(self, graph: Graph) -> Graph:
        mesh = self._mesh(graph)
        graph.meta[MESH] = mesh
        asked = self.options.sharding_requests
        requests = ShardingRequests(graph, mesh, asked, self.target.name)
        if mesh.devices > 1:
            graph = _Partitioner(graph, mesh, requests).run()
        graph.meta[SHARDING_OVERRIDES] = asked
        graph.meta[SHARDING_OUTCOMES] = requests.results()
        return graph

    def _mesh(self, graph: Graph) -> Mesh:
        given: Mesh | None = graph.meta.get(MESH)
        have = self.target.system.devices
        placed = graph.meta.get(DEVICES, ())
        if placed:  # a program that places each op on a device of its own: no split over a mesh
            if len(placed) > have:
                where = f"{self.target.name}'s {have}" if have > 1 else f"{self.target.name}'s one"
                graph.warnings.append(f"the program places its ops on {len(placed)} devices: they run on {where}")
            return SINGLE
        if given is None or given.devices <= 1:
            if have <= 1:
                return given or SINGLE
            if given is not None:
                graph.warnings.append(
                    f"the model's mesh @{given.name} has one device: it runs on one of {self.target.name}'s {have}"
                )
                return given
            return _policy_mesh(graph, have)
        if have == 1:
            graph.warnings.append(
                f"the model's mesh @{given.name} {given.mlir()} runs whole on {self.target.name}'s one device"
            )
            return SINGLE
        if given.devices > have:
            raise ModelLoadError(
                f"the model's mesh @{given.name} {given.mlir()} needs {given.devices} devices; "
                f"{self.target.name} has {have}"
            )
        if given.devices < have:
            graph.warnings.append(
                f"the model's mesh @{given.name} uses {given.devices} of {self.target.name}'s {have} devices"
            )
        return given


def _policy_mesh(graph: Graph, devices: int) -> Mesh:
    """The policy's mesh for a model that names none: for a CNN (convolutions, or no matmul) data
    parallel when the batch (the results' leading dimension) divides among the devices; else
    tensor parallel over every device, its matmul weights split Megatron-style."""
    kinds = {op.kind for op in graph.ops}
    results = [graph.tensors[t].shape for t in graph.outputs]
    batch = results[0][0] if results and results[0] else 1
    cnn = "conv2d" in kinds or "matmul" not in kinds
    return Mesh((("batch" if cnn and batch % devices == 0 else "model", devices),))


class _Partitioner:
    def __init__(self, graph: Graph, mesh: Mesh, requests: ShardingRequests) -> None:
        self.graph, self.mesh, self.requests = graph, mesh, requests
        self.ops: list[Op] = []
        self.alias: dict[str, str] = {}
        self.annotated = {name for name, t in graph.tensors.items() if t.sharding is not None}
        self.local: set[str] = set(graph.meta.get(LOCAL, ()))
        self.loaded = {name for name, t in graph.tensors.items() if t.is_parameter or t.is_constant}
        self.loaded.update(graph.inputs)
        # work done at load time (const-eval) makes weights too, but from a whole operand: splitting
        # its result is a cut of what it computed
        self.loaded.difference_update(t for op in graph.ops if op.kind != "constant" for t in op.outputs)
        # state an op writes in place (a KV cache): it lives split as its first reader reads it
        self.state = {op.inputs[0] for op in graph.ops if op.kind in opset.STATEFUL and op.inputs}
        self.readers: dict[str, int] = {}
        for op in graph.ops:
            for t in set(op.inputs):
                self.readers[t] = self.readers.get(t, 0) + 1
        self.taken = {op.name for op in graph.ops} | set(graph.tensors)
        self.suffixes: dict[str, int] = {}
        self.reductions: dict[str, str] = {}  # tensor -> how its partial sums combine (sum, max, min)
        self.plans: dict[tuple, rules.Plan] = {}  # see _planned
        self.by_policy = not self.annotated and not self.local
        self.model_axis = next((a for a, n in mesh.axes if a in MODEL_AXES and n > 1), None)

    def run(self) -> Graph:
        graph = self.graph
        if self.by_policy:
            self._split_batch()
        for op in graph.ops:
            op.inputs = [self.alias.get(t, t) for t in op.inputs]
            if op.kind in CONSTRAINTS and len(op.inputs) == 1 and len(op.outputs) == 1:
                self.requests.refuse(op, f"{op.name} is a {op.kind}: the model's sharding at that point, no op")
                self._constraint(op)
            elif op.kind in COLLECTIVES or any(t in self.local for t in op.inputs):
                self.requests.refuse(op, f"{op.name} ({op.kind}) works on each device's piece as the model wrote it")
                self._keep(op)
            else:
                self._partition(op)
        outputs = []
        for name in graph.outputs:
            name = self.alias.get(name, name)
            tensor = graph.tensors[name]
            if name in self.annotated:
                want = tensor.sharding
            elif name in self.loaded:  # state handed back (a cache): it stays where it lives
                want = self.sharding(name)
            else:
                want = Sharding.replicated(len(tensor.shape))
            outputs.append(name if name in self.local else self._reshard(name, want, source=name))
        graph.outputs = outputs
        graph.ops = self.ops
        _localize(graph, self.mesh, self.local)
        graph.meta[COLLECTIVE_OPS] = [op.name for op in graph.ops if op.kind in COLLECTIVES]
        return graph

    # --- shardings ------------------------------------------------------------------------

    def sharding(self, name: str) -> Sharding:
        tensor = self.graph.tensors[name]
        return tensor.sharding or Sharding.replicated(len(tensor.shape))

    def _split_batch(self) -> None:
        """Data parallel: inputs whose leading dimension is the batch (the results' leading one)."""
        axis = next((a for a, n in self.mesh.axes if a in DATA_AXES and n > 1), None)
        results = [self.graph.tensors[t].shape for t in self.graph.outputs]
        if axis is None or not results or not results[0]:
            return
        batch = results[0][0]
        for name in self.graph.inputs:
            tensor = self.graph.tensors[name]
            if tensor.is_parameter or not tensor.shape or tensor.shape[0] != batch:
                continue
            if batch % self.mesh.size(axis) == 0:
                tensor.sharding = Sharding(((axis,), *(() for _ in tensor.shape[1:])))

    def _megatron(self, op: Op, lhs_sharding: Sharding) -> Sharding | None:
        """How a weight nobody annotated is split: row-parallel when the activation arrives split
        along K, else column-parallel when its output columns divide over the model axis."""
        if self.model_axis is None or op.kind != "matmul" or len(op.inputs) < 2:
            return None
        rhs = op.inputs[1]
        weight = self.graph.tensors[rhs]
        if not weight.is_parameter or weight.sharding is not None or self.readers.get(rhs, 0) != 1:
            return None
        rule = rules.dim_map(self.graph, op)
        if rule is None:
            return None
        dims: list[tuple[str, ...]] = [()] * len(weight.shape)
        for (_, d), (_, e) in (tuple(g) for g in rule.summed if len(g) == 2):
            if lhs_sharding.dims[d]:
                dims[e] = lhs_sharding.dims[d]
        if not any(dims):
            used = set(lhs_sharding.axes)
            free = [e for e, o in enumerate(rule.maps[1]) if o is not None and o == rule.rank - 1]
            size = self.mesh.size(self.model_axis)
            if self.model_axis in used or not free or weight.shape[free[0]] % size:
                return None
            dims[free[0]] = (self.model_axis,)
        return Sharding(tuple(dims))

    # --- ops ------------------------------------------------------------------------------

    def _partition(self, op: Op) -> None:
        plan, weight = self._plan(op)
        if weight is not None:
            self.graph.tensors[op.inputs[1]].sharding = weight
        for i, want in self.requests.reads(op).items():
            name = op.inputs[i]
            if name in self.loaded and self.readers.get(name, 0) <= 1:
                self.graph.tensors[name].sharding = want  # loaded as the op reads it: no collective
        self.requests.read(op)
        op.inputs = [self._reshard(t, want, source=op.name) for t, want in zip(op.inputs, plan.inputs)]
        if plan.output.partial:
            op.attrs["partial"] = plan.reduce
        self.ops.append(op)
        rank = len(plan.output.dims)
        for i, name in enumerate(op.outputs):
            tensor = self.graph.tensors[name]
            given = plan.output if len(tensor.shape) == rank else Sharding.replicated(len(tensor.shape))
            wanted = self.requests.gives(op, i, len(tensor.shape))
            if wanted is None and name in self.annotated:
                wanted = tensor.sharding
            if wanted is not None and wanted != given:
                staged = self._tensor_like(name, given)
                op.outputs[i] = staged
                self.reductions[staged] = plan.reduce
                self.alias[name] = self._reshard(staged, wanted, source=op.name, into=name)
            else:
                tensor.sharding = given
                self.reductions[name] = plan.reduce

    def _plan(self, op: Op) -> tuple[rules.Plan, Sharding | None]:
        """The op's plan, reading inputs as the requests say where its rule can, and the sharding
        the policy gives its weight (None: none). A request the rule cannot honour is rejected
        and the op planned without it."""
        while True:
            reads = self.requests.reads(op)
            current = [reads.get(i, self.sharding(t)) for i, t in enumerate(op.inputs)]
            weight = self._megatron(op, current[0]) if self.by_policy and len(current) > 1 and 1 not in reads else None
            if weight is not None:
                current[1] = weight
            plan = self._planned(op, current, tuple(reads))
            unread = [i for i, want in reads.items() if plan.inputs[i] != want]
            if not unread:
                return plan, weight
            for i in unread:
                self.requests.unread(op, i, plan.inputs[i])

    def _planned(self, op: Op, current: list[Sharding], fixed: tuple[int, ...]) -> rules.Plan:
        """rules.plan, once per op of the same kind, attributes, shapes and operand
        shardings (every layer of a model asks again); plans are read, never changed."""
        shapes = tuple(self.graph.tensors[t].shape for t in (*op.inputs, *op.outputs[:1]))
        key = (op.kind, tuple(sorted(op.attrs.items())), shapes, len(op.outputs), tuple(current), fixed)
        try:
            found = self.plans.get(key)
        except TypeError:  # an attribute that cannot be compared: planned afresh
            return rules.plan(self.graph, op, current, self.mesh, fixed=fixed)
        if found is None:
            found = self.plans[key] = rules.plan(self.graph, op, current, self.mesh, fixed=fixed)
        return found

    def _constraint(self, op: Op) -> None:
        """A sharding the model asks for at this point: the collectives to it, no op of its own."""
        (src,), (dst,) = op.inputs, op.outputs
        want = self.graph.tensors[dst].sharding
        if op.kind == "full_to_shard" or dst in self.local:
            self.local.add(dst)
            want = self.graph.tensors[src].sharding or want
        if want is None:
            want = self.sharding(src)
        self.alias[dst] = self._reshard(src, want, source=op.name)
        if op.kind == "shard_to_full":
            self.graph.tensors[self.alias[dst]].sharding = self.graph.tensors[dst].sharding or want
        del self.graph.tensors[dst]  # read as its alias from here on: no op makes it

    def _keep(self, op: Op) -> None:
        """An explicit collective, or an op on per-device pieces: as written."""
        self.ops.append(op)
        for name in op.outputs:
            if any(t in self.local for t in op.inputs):
                self.local.add(name)

    def _reshard(self, name: str, want: Sharding, source: str, into: str | None = None) -> str:
        have = self.sharding(name)
        if have == want or name in self.local:
            return name
        if (
            name in self.loaded
            and have.is_replicated
            and name not in self.annotated
            and (self.readers.get(name, 0) <= 1 or name in self.state)
            and not want.partial
        ):
            self.graph.tensors[name].sharding = want  # loaded split: no collective
            return name
        found = steps(have, want)
        for i, step in enumerate(found):
            last = i == len(found) - 1
            op_name = self._unique(f"{_base(name)}.{step.kind}")  # stable: the same in every re-run
            out = into if last and into is not None else self._tensor_like(name, step.result, op_name)
            facts = {"axes": step.axes, "group": self.mesh.ways(step.axes)}
            if step.dim is not None:
                facts["dim"] = step.dim
            if step.from_dim is not None:
                facts["from_dim"] = step.from_dim
            if step.kind in ("all_reduce", "reduce_scatter"):
                facts["reduce"] = self.reductions.get(name, "sum")
            tensor = self.graph.tensors[out]
            tensor.sharding = step.result
            loaded = self.graph.tensors[name]
            if step.kind == "all_slice" and (loaded.is_parameter or loaded.is_constant):
                # a piece of a weight or constant: cut once when the model loads, not every step
                facts["const_eval"] = True
                tensor.is_parameter, tensor.is_constant = loaded.is_parameter, loaded.is_constant
            self.ops.append(Op(op_name, step.kind, [name], [out], facts, (source,)))
            name = out
        return name

    def _tensor_like(self, name: str, sharding: Sharding, new: str | None = None) -> str:
        """A tensor of `name`'s shape and dtype with `sharding`: `new`, or `name` staged."""
        tensor = self.graph.tensors[name]
        new = new or self._unique(f"{_base(name)}~staged")
        self.graph.tensors[new] = Tensor(new, tensor.shape, tensor.dtype, sharding=sharding)
        return new

    def _unique(self, stem: str) -> str:
        """`stem`, or `stem#k` when taken: named by what it is, not by a count over the model, so an
        override elsewhere leaves the names (and a diff's matching) as they were."""
        k = self.suffixes.get(stem, 0)
        while True:
            name = f"{stem}#{k}" if k else stem
            k += 1
            if name not in self.taken:
                self.suffixes[stem] = k
                self.taken.add(name)
                return name


def _base(name: str) -> str:
    return re.sub(r"~staged(#\d+)?$", "", name)


def _localize(graph: Graph, mesh: Mesh, local: set[str]) -> None:
    """Each tensor's shape becomes one device's piece; ops whose attributes spell out shapes follow."""
    whole = {name: t.shape for name, t in graph.tensors.items()}
    for name, tensor in graph.tensors.items():
        if tensor.sharding is not None and name not in local:
            tensor.shape = tensor.sharding.local_shape(tensor.shape, mesh)
    for op in graph.ops:
        if not op.outputs:
            continue
        out = graph.tensors[op.outputs[0]].shape
        if op.kind == "reshape" and "shape" in op.attrs:
            op.attrs["shape"] = "[" + ", ".join(f"{d} : i32" for d in out) + "]"
        elif op.kind == "slice" and "ends" in op.attrs and whole[op.outputs[0]] != out:
            op.attrs["ends"] = _sliced_ends(op.attrs["ends"], whole[op.outputs[0]], out)
        elif op.kind.startswith("scaled_dot_product_attention") and len(op.inputs) >= 2:
            q, k = (graph.tensors[t].shape for t in op.inputs[:2])
            if len(q) == 4 and len(k) == 4:
                op.attrs.update(batch=q[0], heads=q[1], kv_heads=k[1], q_len=q[2], kv_len=k[2])


def _sliced_ends(text: str, whole: tuple[int, ...], local: tuple[int, ...]) -> str:
    """A slice's ends with each split dimension's end scaled to the piece."""
    ends = list(attributes.ints(text))
    if len(ends) != len(whole):
        return text
    for d, (w, n) in enumerate(zip(whole, local)):
        if w != n and w:
            ends[d] = ends[d] * n // w
    return "[" + ", ".join(f"{e} : i32" for e in ends) + "]"
