"""The graph IR every compiler level shares.

One IR through all stages (as in tinygrad): a level is a `Graph` whose ops carry more detail than the
level above. Like torch.fx nodes, an `Op` has a kind, inputs and a `meta` dict where passes and
the simulator write their results (keyed by compiler/ir/meta.py), so a stage adds facts without
changing the shape of the IR.

    graph @forward
      %input_1: 1x784xf32
      matmul_0 = matmul(input_1, linear_relu_stack.0.weight) -> matmul_0: 1x512xf32
      ...
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from tilescope.compiler.ir.meta_key import Meta
from tilescope.compiler.sharding.mesh import Sharding

LEVELS = ("input", "graph", "partition", "layout", "kernel")

MEMORY_LAYOUTS = ("interleaved", "height_sharded", "width_sharded", "block_sharded")
TENSOR_LAYOUTS = ("tile", "row_major")


@dataclass(frozen=True)
class Layout:
    """Where and how a tensor is stored: the tensor encoding at the `layout` level and below."""

    memory: str = "dram"  # a memory name the target declares
    memory_layout: str = "interleaved"
    grid: tuple[int, int] = (1, 1)  # cores holding shards; for interleaved, the producing op's grid
    dtype: str = "f32"
    layout: str = "tile"  # tile or row_major
    tile: tuple[int, int] = (32, 32)  # tile shape when layout is tile
    address: int | None = None  # L1 byte offset on every core holding a shard (memory planner)

    @property
    def sharded(self) -> bool:
        return self.memory_layout != "interleaved"

    def __hash__(self) -> int:
        # hashed in every kernel key a compile looks up, many times each: worked out once per
        # object (a layout is immutable)
        found = self.__dict__.get("_hash")
        if found is None:
            found = self.__dict__["_hash"] = hash(
                (self.memory, self.memory_layout, self.grid, self.dtype, self.layout, self.tile, self.address)
            )
        return found

    def __eq__(self, other: object) -> bool:
        # most comparisons are of a layout with itself (a tensor's, and the one an op reads it
        # in): the generated __eq__ built both field tuples every time
        if self is other:
            return True
        if other.__class__ is not Layout:
            return NotImplemented
        return (self.memory, self.memory_layout, self.grid, self.dtype, self.layout, self.tile, self.address) == (
            other.memory,
            other.memory_layout,
            other.grid,
            other.dtype,
            other.layout,
            other.tile,
            other.address,
        )

    def __getstate__(self) -> dict:
        # a hash is its process's own (a string's is salted per process): not pickled with it
        return {name: value for name, value in self.__dict__.items() if name != "_hash"}

    def mlir(self) -> str:
        rows, cols = self.grid
        at = f", addr {self.address:#x}" if self.address is not None else ""
        form = f"tile {self.tile[0]}x{self.tile[1]}" if self.layout == "tile" else self.layout
        return f"#ts.layout<{self.memory}, {self.memory_layout}, grid {rows}x{cols}, {self.dtype}, {form}{at}>"


@dataclass
class Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: str
    layout: Layout | None = None
    is_constant: bool = False  # known when compiling: a constant, or computed from constants only
    # known once the model is loaded: a weight the runtime loads before the first step (an argument
    # with ttcore.argument_type parameter or constant), or computed from such tensors and constants
    is_parameter: bool = False
    # how the tensor is split over the device mesh (Graph.meta[MESH]); None: whole on every device
    sharding: Sharding | None = None
    # a layout the source gave the tensor's type, kept as it was written (IREE's
    # `#iree_encoding.encoding<...>` on a contraction's operand): MLIR text, printed at every level
    encoding: str | None = None

    @property
    def numel(self) -> int:
        return math.prod(self.shape) if self.shape else 1

    def copy(self) -> Tensor:
        # by hand: copy.copy's generic protocol was most of the cost of a level's copy
        return Tensor(
            self.name,
            self.shape,
            self.dtype,
            self.layout,
            self.is_constant,
            self.is_parameter,
            self.sharding,
            self.encoding,
        )

    def type_str(self) -> str:
        dims = "x".join(str(d) for d in self.shape)
        body = f"{dims}x{self.dtype}" if dims else self.dtype
        return f"tensor<{body}, {self.encoding}>" if self.encoding else f"tensor<{body}>"


@dataclass
class Op:
    name: str  # stable: from the MLIR loc name, else <kind>_<n>
    kind: str  # source op name at `input` (e.g. ttir.matmul), vocabulary kind below
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)
    source: tuple[str, ...] = ()  # provenance: op names at the level above
    meta: Meta = field(default_factory=Meta)  # pass results about the op, by key (compiler/ir/meta.py)


@dataclass
class Graph:
    name: str
    level: str
    tensors: dict[str, Tensor]
    ops: list[Op]  # topological order
    inputs: list[str]
    outputs: list[str]
    warnings: list[str] = field(default_factory=list)
    meta: Meta = field(default_factory=Meta)  # pass results about the whole graph
    _by_name: dict[str, Op] = field(default_factory=dict, repr=False, compare=False)
    # the op list `_by_name` indexes, and its length then. The list itself, not its id: CPython
    # gives a freed list's id to a later list, which an index keyed by id took for the old one
    _indexed: tuple[list[Op] | None, int] = field(default=(None, 0), repr=False, compare=False)

    def op(self, name: str) -> Op:
        indexed, length = self._indexed
        if indexed is not self.ops or length != len(self.ops):  # passes replace or grow the list
            self._by_name = {op.name: op for op in self.ops}
            self._indexed = (self.ops, len(self.ops))
        return self._by_name[name]

    def has_op(self, name: str) -> bool:
        try:
            self.op(name)
            return True
        except KeyError:
            return False

    def with_level(self, level: str, same_tensors: bool = False) -> Graph:
        """A copy for the next stage, so every level stays inspectable. Ops, tensors and their
        lists and dicts are new; values inside (layouts, kernels) are immutable and shared.
        `same_tensors`: the tensors are this level's own, for a stage that changes none of them."""
        return Graph(
            name=self.name,
            level=level,
            tensors=dict(self.tensors) if same_tensors else {k: t.copy() for k, t in self.tensors.items()},
            ops=[
                Op(op.name, op.kind, list(op.inputs), list(op.outputs), dict(op.attrs), op.source, Meta(op.meta))
                for op in self.ops
            ],
            inputs=list(self.inputs),
            outputs=list(self.outputs),
            warnings=list(self.warnings),
            meta=Meta(self.meta),
        )
