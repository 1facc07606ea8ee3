"""Every key a graph's or an op's `meta` may hold: its name, what it is about (the whole graph or
one op), the level that first holds it, the passes that write it and the type of its value, and
the records those values are. Keys are `MetaKey[T]` objects (compiler/ir/meta_key.py), so that
`op.meta[KERNEL]` is typed `Kernel | None`.

Keys carry down: a level is a copy of the one above it, `meta` included (Graph.with_level), so a
key appears at its level and every level below. The verifier refuses a key not declared here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from tilescope.compiler.ir.meta_key import MetaKey

if TYPE_CHECKING:  # the types of values only: the IR imports nothing from the rooms above it
    import numpy as np

    from tilescope.compiler.analysis.l1_usage import L1Peak
    from tilescope.compiler.ir.core_work import Kernel, SplitKernel
    from tilescope.compiler.ir.graph import Graph, Layout
    from tilescope.compiler.pipeline.op_override import OpOverride, OverrideOutcome
    from tilescope.compiler.sharding.mesh import Mesh
    from tilescope.compiler.targets.links import LinkPlan


class LineSpan(NamedTuple):
    """An op's first and last line in its MLIR text (1-based); one per op, so a tuple's cost."""

    first: int
    last: int


class CodeLine(NamedTuple):
    """The line of the model's own source code that made an op (a PyTorch model's Python): its
    file, line number and the line's code, as the import's loc names them."""

    file: str
    line: int
    code: str = ""

    def __str__(self) -> str:
        return f"{self.file.rsplit('/', 1)[-1]}:{self.line}"


@dataclass(frozen=True)
class Dropped:
    """An op a rewrite removed, and why (views say where an op went)."""

    op: str
    reason: str


@dataclass(frozen=True)
class CancelledPair:
    """An unpack and the pack that packed its result again the same way: data-tiling removed both."""

    unpack: str
    pack: str


@dataclass(frozen=True)
class OperandOf:
    """The op and operand index a `to_layout` op converts for."""

    op: str
    index: int


@dataclass(frozen=True)
class Placement:
    """What a policy made of a `partition` level before any override: each tensor's layout and
    each op's grid. It depends on the level, the target, the policy and its L1 cap alone, so a
    re-run with other overrides on the same level starts from it (`graph.meta[PLACED]`)."""

    made_by: tuple[str, float]  # policy, L1 usage cap
    layouts: dict[str, Layout]
    grids: dict[str, tuple[int, int]]

    @classmethod
    def of(cls, graph: Graph, made_by: tuple[str, float]) -> Placement:
        layouts = {name: t.layout for name, t in graph.tensors.items()}
        return cls(made_by, layouts, {op.name: op.attrs["grid"] for op in graph.ops})

    def restore(self, graph: Graph) -> None:
        for name, tensor in graph.tensors.items():
            tensor.layout = self.layouts[name]
        for op in graph.ops:
            op.attrs["grid"] = self.grids[op.name]


# about the whole graph
MESH: MetaKey[Mesh] = MetaKey("mesh", "graph", "input", ("mesh-import", "partition"))
# the devices a multi-device IREE program places its ops on (#hal.device.affinity), in the order it
# declares them; each op's attrs["device"] names one, a transfer's attrs["from_device"] where it leaves
DEVICES: MetaKey[tuple[str, ...]] = MetaKey("devices", "graph", "input", ("mlir-import",))
LOCAL: MetaKey[set[str]] = MetaKey("local", "graph", "input", ("mesh-import", "normalize"))  # per-device tensors
CANONICALIZED: MetaKey[list[Dropped]] = MetaKey(
    "canonicalized", "graph", "graph", ("canonicalize", "fold-broadcasts", "fold-transposes", "fuse-attention")
)
# ops an override asked to fuse (fuse#true) that no fusion could take, and why
FUSIONS: MetaKey[dict[str, str]] = MetaKey("fusions", "graph", "graph", ("fuse-heads",))
CONST_EVAL: MetaKey[list[str]] = MetaKey("const_eval", "graph", "graph", ("const-eval",))  # ops run at load time
SHARDING_OVERRIDES: MetaKey[tuple[OpOverride, ...]] = MetaKey(
    "sharding_overrides", "graph", "partition", ("partition",)
)
SHARDING_OUTCOMES: MetaKey[tuple[OverrideOutcome, ...]] = MetaKey(
    "sharding_outcomes", "graph", "partition", ("partition",)
)
COLLECTIVE_OPS: MetaKey[list[str]] = MetaKey("collectives", "graph", "partition", ("partition",))  # their names
PLACED: MetaKey[Placement] = MetaKey("placed", "graph", "layout", ("assign-layouts",))  # the policy's, before overrides
CANCELLED_PACKS: MetaKey[list[CancelledPair]] = MetaKey(
    "cancelled_packs", "graph", "partition", ("materialize-encodings",)
)
# tensors data-tiling packed, and the inner tile each is stored in (its last two dims)
PACKED_TILES: MetaKey[dict[str, tuple[int, int]]] = MetaKey(
    "packed_tiles", "graph", "partition", ("materialize-encodings",)
)
OVERRIDES: MetaKey[list[OverrideOutcome]] = MetaKey("overrides", "graph", "layout", ("assign-layouts", "plan-memory"))
# the layouts ops read their operands in, by what decides them (insert_to_layout's key)
REQUIRED_LAYOUTS: MetaKey[dict[tuple, Layout]] = MetaKey("required_layouts", "graph", "layout", ("insert-to-layout",))
L1_PEAK: MetaKey[L1Peak] = MetaKey("l1_peak", "graph", "layout", ("plan-memory",))
L1_PER_CORE: MetaKey[dict[str, float]] = MetaKey("l1_per_core", "graph", "layout", ("plan-memory",))  # "r,c" -> bytes
DIAGNOSTICS: MetaKey[list[str]] = MetaKey("diagnostics", "graph", "layout", ("plan-memory", "check-l1"))
KERNELS: MetaKey[dict[tuple, list[SplitKernel]]] = MetaKey(
    "kernels", "graph", "kernel", ("split-kernels",)
)  # by kernel key, each for its range of L1 budgets

# about one op
LINES: MetaKey[LineSpan] = MetaKey("lines", "op", "input", ("mlir-import",))
LOC: MetaKey[str] = MetaKey("loc", "op", "input", ("mlir-import",))  # its MLIR loc name
# the source line that made it, where the loc names one: loc("name"("code"("file":line:col)))
CODE_LINE: MetaKey[CodeLine] = MetaKey("code_line", "op", "input", ("mlir-import",))
OPERAND_LAYOUTS: MetaKey[dict[int, Layout]] = MetaKey("operand_layouts", "op", "layout", ("assign-layouts",))
OPERAND_OF: MetaKey[OperandOf] = MetaKey("operand_of", "op", "layout", ("insert-to-layout",))
L1_LIVE: MetaKey[float] = MetaKey("l1_live", "op", "layout", ("plan-memory",))  # bytes on the fullest core
# the same for every core; None: nothing in L1
L1_LIVE_PER_CORE: MetaKey[np.ndarray | None] = MetaKey("l1_live_per_core", "op", "layout", ("plan-memory",))
KERNEL: MetaKey[Kernel | None] = MetaKey("kernel", "op", "kernel", ("split-kernels",))  # None: no work
LINKS: MetaKey[LinkPlan] = MetaKey("links", "op", "kernel", ("lower-collectives",))  # what the simulator times
L1_BYTES: MetaKey[float] = MetaKey("l1_bytes", "op", "kernel", ("check-l1",))  # L1 live plus circular buffers
