"""Every key a graph's or an op's `meta` may hold: its name, what it is about (the whole graph or
one op), the level that first holds it, the passes that write it and the type of its value. A key
is a `MetaKey[T]` object, named once here; `Meta` is the dict that holds them, typed so that
`op.meta[KERNEL]` is a `Kernel | None` (at run time it is a plain dict, as fast to read).

Keys carry down: a level is a copy of the one above it, `meta` included (Graph.with_level), so a
key appears at its level and every level below. The verifier refuses a key not declared here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, NamedTuple, TypeVar, overload

if TYPE_CHECKING:  # the values' types only: the IR imports nothing above it
    import numpy as np

    from tilescope.compiler.analysis.l1_usage import L1Peak
    from tilescope.compiler.ir.core_work import Kernel
    from tilescope.compiler.ir.graph import Layout
    from tilescope.compiler.passes.layout import Placement
    from tilescope.compiler.pipeline.op_override import OpOverride, OverrideOutcome
    from tilescope.compiler.sharding.mesh import Mesh
    from tilescope.compiler.targets.links import LinkPlan

T = TypeVar("T")
D = TypeVar("D")

_KEYS: dict[str, MetaKey[Any]] = {}  # name -> key, for unpickling and the verifier


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: one object per key, fast in a dict
class MetaKey(Generic[T]):
    name: str
    about: Literal["graph", "op"]
    level: str  # the first level that holds it
    written_by: tuple[str, ...]  # the passes (or importers) that write it

    def __post_init__(self) -> None:
        assert self.name not in _KEYS, f"meta key {self.name!r} declared twice"
        _KEYS[self.name] = self

    def __repr__(self) -> str:
        return f"MetaKey({self.name!r})"

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return key_named, (self.name,)  # unpickled as the one key of that name


def key_named(name: str) -> MetaKey[Any]:
    return _KEYS[name]


def declared(about: Literal["graph", "op"]) -> frozenset[MetaKey[Any]]:
    """The keys a graph's (or an op's) meta may hold."""
    return frozenset(key for key in _KEYS.values() if key.about == about)


class Meta(dict):
    """A graph's or an op's pass results, by `MetaKey`. The methods below only type it."""

    if TYPE_CHECKING:

        def __getitem__(self, key: MetaKey[T]) -> T: ...
        def __setitem__(self, key: MetaKey[T], value: T) -> None: ...
        def __contains__(self, key: object) -> bool: ...
        def __delitem__(self, key: MetaKey[Any]) -> None: ...
        @overload
        def get(self, key: MetaKey[T]) -> T | None: ...
        @overload
        def get(self, key: MetaKey[T], default: D) -> T | D: ...
        def get(self, key: MetaKey[T], default: object = None) -> object: ...
        def setdefault(self, key: MetaKey[T], default: T) -> T: ...


class LineSpan(NamedTuple):
    """An op's first and last line in its MLIR text (1-based); one per op, so a tuple's cost."""

    first: int
    last: int


@dataclass(frozen=True)
class Dropped:
    """An op a rewrite removed, and why (views say where an op went)."""

    op: str
    reason: str


@dataclass(frozen=True)
class OperandOf:
    """The op and operand index a `to_layout` op converts for."""

    op: str
    index: int


# about the whole graph
MESH: MetaKey[Mesh] = MetaKey("mesh", "graph", "input", ("mesh-import", "partition"))
LOCAL: MetaKey[set[str]] = MetaKey("local", "graph", "input", ("mesh-import", "normalize"))  # per-device tensors
CANONICALIZED: MetaKey[list[Dropped]] = MetaKey(
    "canonicalized", "graph", "graph", ("canonicalize", "fold-broadcasts", "fold-transposes", "fuse-attention")
)
CONST_EVAL: MetaKey[list[str]] = MetaKey("const_eval", "graph", "graph", ("const-eval",))  # ops run at load time
SHARDING_OVERRIDES: MetaKey[tuple[OpOverride, ...]] = MetaKey(
    "sharding_overrides", "graph", "partition", ("partition",)
)
SHARDING_OUTCOMES: MetaKey[tuple[OverrideOutcome, ...]] = MetaKey(
    "sharding_outcomes", "graph", "partition", ("partition",)
)
COLLECTIVE_OPS: MetaKey[list[str]] = MetaKey("collectives", "graph", "partition", ("partition",))  # their names
PLACED: MetaKey[Placement] = MetaKey("placed", "graph", "layout", ("assign-layouts",))  # the policy's, before overrides
POLICY: MetaKey[str] = MetaKey("policy", "graph", "layout", ("assign-layouts",))
OVERRIDES: MetaKey[list[OverrideOutcome]] = MetaKey("overrides", "graph", "layout", ("assign-layouts", "plan-memory"))
# the layouts ops read their operands in, by what decides them (insert_to_layout's key)
REQUIRED_LAYOUTS: MetaKey[dict[tuple, Layout]] = MetaKey("required_layouts", "graph", "layout", ("insert-to-layout",))
L1_PEAK: MetaKey[L1Peak] = MetaKey("l1_peak", "graph", "layout", ("plan-memory",))
L1_PER_CORE: MetaKey[dict[str, float]] = MetaKey("l1_per_core", "graph", "layout", ("plan-memory",))  # "r,c" -> bytes
DIAGNOSTICS: MetaKey[list[str]] = MetaKey("diagnostics", "graph", "layout", ("plan-memory", "check-l1"))
KERNELS: MetaKey[dict[tuple, Kernel | None]] = MetaKey(
    "kernels", "graph", "kernel", ("split-kernels",)
)  # by kernel key

# about one op
LINES: MetaKey[LineSpan] = MetaKey("lines", "op", "input", ("mlir-import",))
LOC: MetaKey[str] = MetaKey("loc", "op", "input", ("mlir-import",))  # its MLIR loc name
OPERAND_LAYOUTS: MetaKey[dict[int, Layout]] = MetaKey("operand_layouts", "op", "layout", ("assign-layouts",))
OPERAND_OF: MetaKey[OperandOf] = MetaKey("operand_of", "op", "layout", ("insert-to-layout",))
L1_LIVE: MetaKey[float] = MetaKey("l1_live", "op", "layout", ("plan-memory",))  # bytes on the fullest core
# the same for every core; None: nothing in L1
L1_LIVE_PER_CORE: MetaKey[np.ndarray | None] = MetaKey("l1_live_per_core", "op", "layout", ("plan-memory",))
KERNEL: MetaKey[Kernel | None] = MetaKey("kernel", "op", "kernel", ("split-kernels",))  # None: no work
LINKS: MetaKey[LinkPlan] = MetaKey("links", "op", "kernel", ("lower-collectives",))  # what the simulator times
L1_BYTES: MetaKey[float] = MetaKey("l1_bytes", "op", "kernel", ("check-l1",))  # L1 live plus circular buffers
