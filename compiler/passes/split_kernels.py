"""layout -> kernel: split each op's work over its grid into reads, compute and writes per core.

Matmuls and convolutions (as implicit GEMMs) split their output tiles in blocks over the grid, as
tt-metal's multicast matmul programs do (compiler/analysis/gemm_kernel.py); fused attention runs
as flash attention (attention_kernel.py); every other op streams its tiles in even shares over the
grid (stream_kernel.py). Where a tensor lives decides the path of each read and write
(core_transfers.py). Each core gets circular buffers sized for double buffering. An op whose
kernel an earlier compile or an op like it made already takes that kernel.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tilescope.compiler.ir.meta import KERNEL, KERNELS
from tilescope.compiler.analysis.attention_kernel import attention_kernel
from tilescope.compiler.analysis.face_line_kernel import face_line_kernel
from tilescope.compiler.analysis.gemm_kernel import gemm_kernel
from tilescope.compiler.analysis.group_norm_kernel import group_norm_kernel
from tilescope.compiler.analysis.l1_budget import L1Budget
from tilescope.compiler.analysis import pool_kernel
from tilescope.compiler.analysis.reshape_kernel import reshape_kernel
from tilescope.compiler.analysis.stream_kernel import stream_kernel
from tilescope.compiler.ir import opset
from tilescope.compiler.ir.core_work import Kernel, SplitKernel, Transfer
from tilescope.compiler.ir.graph import Graph, Layout, Op, Tensor
from tilescope.compiler.ir.tiles import at_address, is_view
from tilescope.compiler.targets.chip import Target


# attributes that name other ops, which no kernel depends on (a fused op's kind is in fused_kinds)
NAMING_ATTRS = frozenset({"fused"})


def kernel_key(graph: Graph, op: Op) -> tuple | None:
    """Everything an op's kernel depends on besides the target and the L1 its buffers may take:
    its kind and attributes, its operands' and results' names, shapes and layouts (where in L1
    they lie aside). None when an attribute cannot be compared (the op is split afresh). Which
    budgets of L1 give the same kernel, the kernel's SplitKernel says."""
    tensors = tuple((t, graph.tensors[t].shape, _placed_anywhere(graph.tensors[t])) for t in (*op.inputs, *op.outputs))
    attrs = tuple(sorted((k, v) for k, v in op.attrs.items() if k not in NAMING_ATTRS))
    key = (op.kind, attrs, tensors)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _placed_anywhere(tensor: Tensor) -> Layout | None:
    """`tensor`'s layout but its L1 address, which no kernel depends on."""
    return None if tensor.layout is None else at_address(tensor.layout, None)


def _by_position(key: tuple) -> tuple:
    """A kernel key with each tensor's name replaced by where the op first names it: ops of the
    same shapes, layouts and attributes (every layer of a transformer) split the same way, and a
    kernel made for one serves the others with their tensors' names."""
    kind, attrs, tensors = key
    names = [name for name, _, _ in tensors]
    return kind, attrs, tuple((names.index(n), shape, layout) for n, shape, layout in tensors)


def _renamed(kernel: Kernel, names: dict[str, str]) -> Kernel:
    """`kernel` reading and writing the tensors `names` maps its own to."""

    def moves(transfers: tuple[Transfer, ...]) -> tuple[Transfer, ...]:
        return tuple(_with(t, tensor=names[t.tensor]) for t in transfers)

    groups = tuple(
        _with(
            g,
            reads=moves(g.reads),
            writes=moves(g.writes),
            cbs=tuple(_with(cb, tensor=names[cb.tensor]) for cb in g.cbs),
        )
        for g in kernel.groups
    )
    return Kernel(kernel.grid, groups, kernel.program, kernel.block, kernel.subblock, kernel.like or kernel)


def _with(record, **changes):
    """`record` (a frozen dataclass of plain fields, checked by none) with `changes`: as
    dataclasses.replace makes it, at a fraction of its cost, which a 100,000-op model's renamed
    kernels pay once per transfer."""
    made = object.__new__(type(record))
    made.__dict__.update(record.__dict__)
    made.__dict__.update(changes)
    return made


@dataclass(frozen=True)
class SplitKernels:
    """Splits every op; an op whose kernel key is in `known` (a previous compilation's kernels,
    graph.meta[KERNELS] of its kernel level) with a kernel for its L1 budget reuses that kernel,
    so a re-run after an override splits only the ops the override changed (a tensor moved into
    L1 changes the budget of every op it is live beside, mostly within the range their kernels
    hold for). Within a compile, an op shaped like one split before takes that op's kernel
    renamed (a 1,000-layer model splits each layer's ops once)."""

    name = "split-kernels"
    target: Target
    known: Mapping[tuple, list[SplitKernel]] = field(default_factory=dict, compare=False)

    def run(self, graph: Graph) -> Graph:
        out = graph
        split: dict[tuple, list[SplitKernel]] = {}
        # by position -> each kernel split for it, and the names of the op it was split for
        alike: dict[tuple, list[tuple[tuple[str, ...], SplitKernel]]] = {}
        for op in out.ops:
            key = kernel_key(out, op)
            budget = L1Budget.of(op, self.target)
            if key is None:
                op.meta[KERNEL] = self._split(out, op, budget)
                continue
            made = _holding(self.known.get(key, ()), budget.bytes)
            if made is None:
                made = self._alike(out, op, key, budget, alike)
            op.meta[KERNEL] = made.kernel
            kept = split.setdefault(key, [])
            if not any(m is made for m in kept):
                kept.append(made)
        out.meta[KERNELS] = split
        return out

    def _alike(self, graph: Graph, op: Op, key: tuple, budget: L1Budget, alike: dict) -> SplitKernel:
        """The kernel of an op split before in this compile for the same key but names, renamed,
        if it holds for `budget`; else the op split now."""
        names = (*op.inputs, *op.outputs)
        found = alike.setdefault(_by_position(key), [])
        for first, made in found:
            if made.holds(budget.bytes):
                if made.kernel is None or first == names:
                    return made
                return SplitKernel(_renamed(made.kernel, dict(zip(first, names))), made.low, made.high)
        kernel = self._split(graph, op, budget)
        made = SplitKernel(kernel, budget.low, budget.high)
        found.append((names, made))
        return made

    def _split(self, graph: Graph, op: Op, budget: L1Budget) -> Kernel | None:
        """The op's kernel, its buffers sized in `budget` (which keeps what was asked of it)."""
        cls = opset.op_class(op.kind)
        if cls.engine == "none" or is_view(graph, op):
            return None
        if cls.kind_class in opset.MATRIX_CLASSES and len(op.inputs) >= 2:
            return gemm_kernel(graph, op, self.target, budget)
        if cls.kind_class == opset.ATTENTION and len(op.inputs) >= 3:
            return attention_kernel(graph, op, cls, self.target, budget)
        if op.kind == "groupnorm" and op.inputs and op.outputs:
            return group_norm_kernel(graph, op, cls, self.target, budget)
        if op.kind in pool_kernel.KINDS:
            found = pool_kernel.pool_kernel(graph, op, self.target)
            if found is not None:
                return found
        if op.kind in ("transpose", "permute") and op.inputs and op.outputs:
            found = face_line_kernel(graph, op, self.target)
            if found is not None:
                return found
        if op.kind in ("reshape", "permute") and op.inputs and op.outputs:
            return reshape_kernel(graph, op, self.target) or stream_kernel(graph, op, cls, self.target, budget)
        return stream_kernel(graph, op, cls, self.target, budget)


def _holding(made: list[SplitKernel] | tuple, budget: float) -> SplitKernel | None:
    """The kernel among `made` (one key's) that holds for `budget` bytes of L1, if any."""
    return next((m for m in made if m.holds(budget)), None)
