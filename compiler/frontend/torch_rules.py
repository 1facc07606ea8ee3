"""The table of aten ops the PyTorch import translates, and what its rules share: the call a rule
is given, the values' shapes and types fitted to an op's, and the channels-last layout kept
between the convolution-family ops (an activation stays N, H, W, C, as TTIR's convolutions take
it, until an op needs torch's N, C, H, W: then one permute)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tilescope.compiler.errors import ModelLoadError
from tilescope.compiler.frontend.zoo.builder import MlirBuilder


# torch dtypes by name (str(torch.float32) == "torch.float32") -> MLIR element types
DTYPES = {
    "float32": "f32",
    "float": "f32",
    "bfloat16": "bf16",
    "float16": "f16",
    "half": "f16",
    "float64": "f64",
    "int64": "i64",
    "long": "i64",
    "int32": "i32",
    "int": "i32",
    "int16": "i16",
    "int8": "i8",
    "uint8": "ui8",
    "bool": "i1",
}
FLOATS = ("f32", "bf16", "f16", "f64")


@dataclass
class Value:
    """A tensor the program computes: the builder's SSA value and torch's shape of it. The SSA
    value may hold it otherwise until an op needs torch's own (torch_rules.logical), so that no
    op runs for what the next op can read as it is: channels-last between the convolution-family
    ops (`nhwc`: N, H, W, C for torch's N, C, H, W), with its last two dims swapped for a matmul
    to contract in place (`transposed`), or with leading dims not yet merged (a batched matmul's
    [B x H, M, K] view of [B, H, M, K]: the SSA value's shape differs from `shape`)."""

    ssa: str
    shape: tuple[int, ...]
    dtype: str
    nhwc: bool = False
    transposed: bool = False


@dataclass
class Translation:
    """The state of one program's translation: the builder, each node's value, the ops' names."""

    builder: MlirBuilder
    float_dtype: str | None = None  # every floating tensor made this type (None: as exported)
    values: dict[str, Any] = field(default_factory=dict)
    names: dict[str, int] = field(default_factory=dict)
    # a view already made of a value: torch views a module's input once per use (each Linear
    # flattens it), one reshape serves them all
    views: dict[tuple[str, tuple], str] = field(default_factory=dict)
    where: str = ""  # the node being translated, for errors: "model.py:57: attn.query"

    def dtype_of(self, torch_dtype: object) -> str:
        name = str(torch_dtype).removeprefix("torch.")
        dtype = DTYPES.get(name)
        if dtype is None:
            raise self.error(f"tensors of {name} are not supported")
        return self.float_dtype if self.float_dtype and dtype in FLOATS else dtype

    def unique(self, name: str) -> str:
        """`name`, or `name.k` for its k-th repeat: every op's name is its own."""
        count = self.names.get(name, 0)
        self.names[name] = count + 1
        return name if count == 0 else f"{name}.{count}"

    def error(self, message: str) -> ModelLoadError:
        return ModelLoadError(f"{self.where}: {message}" if self.where else message)


@dataclass(frozen=True)
class Call:
    """One aten call as a rule sees it: the op's base name (`addmm`), its arguments with nodes
    replaced by their values (keyword arguments last, as a dict), torch's result (a fake tensor,
    or a tuple of them) and the name its first TTIR op takes."""

    name: str
    args: list
    kwargs: dict
    out: Any
    loc: str

    def arg(self, index: int, keyword: str, default: Any = None) -> Any:
        if index < len(self.args):
            return self.args[index]
        return self.kwargs.get(keyword, default)


Rule = Callable[[Translation, Call], Any]
RULES: dict[str, Rule] = {}


def rule(*names: str) -> Callable[[Rule], Rule]:
    """Register a rule for the aten ops `names` (base names: `addmm`, `_softmax`)."""

    def register(function: Rule) -> Rule:
        for name in names:
            RULES[name] = function
        return function

    return register


def shape_of(out: Any) -> tuple[int, ...]:
    return tuple(int(d) for d in out.shape)


def value(tr: Translation, ssa: str, shape: tuple[int, ...], nhwc: bool = False) -> Value:
    """A value of the builder's SSA value `ssa`, of torch's `shape`: a rule whose ops made another
    shape than torch says its op has is one line, not a wrong graph."""
    made, shape = tr.builder.shape(ssa), tuple(shape)
    if made != (channels_last(shape) if nhwc else shape):
        raise tr.error(f"made {made} where torch's op gives {shape}: a case this import does not express")
    return Value(ssa, shape, tr.builder.dtype(ssa), nhwc)


def fit(tr: Translation, v: Value, shape: tuple[int, ...], dtype: str, loc: str) -> str:
    """`v` (torch's layout) reshaped to the rank of `shape`, broadcast to it and cast to `dtype`."""
    b, ssa = tr.builder, v.ssa
    if len(v.shape) < len(shape):
        ssa = b.reshape(ssa, (1,) * (len(shape) - len(v.shape)) + v.shape, f"{loc}.reshape")
    if b.shape(ssa) != shape:
        ssa = b.broadcast(ssa, shape, f"{loc}.broadcast")
    return b.typecast(ssa, dtype, f"{loc}.typecast")


def channels_last(shape: tuple[int, ...]) -> tuple[int, ...]:
    n, c, h, w = shape
    return (n, h, w, c)


def logical(tr: Translation, v: Any, loc: str) -> Value:
    """`v` as torch holds it: a channels-last activation permuted back to N, C, H, W, a swap of
    its last two dims made, its leading dims merged."""
    if not isinstance(v, Value):
        raise tr.error(f"{loc}: expected a tensor operand, got {type(v).__name__}")
    ssa = v.ssa
    if v.nhwc:
        ssa = once(tr, (ssa, ("nchw",)), lambda: tr.builder.permute(v.ssa, (0, 3, 1, 2), f"{loc}.to_nchw"))
    if v.transposed:
        rank, held = len(tr.builder.shape(ssa)), ssa
        swap = (*range(rank - 2), rank - 1, rank - 2)
        ssa = once(tr, (held, ("T",)), lambda: tr.builder.permute(held, swap, f"{loc}.transpose"))
    if tr.builder.shape(ssa) != v.shape:
        held = ssa
        ssa = once(tr, (held, v.shape), lambda: tr.builder.reshape(held, v.shape, f"{loc}.reshape"))
    return v if ssa == v.ssa else Value(ssa, v.shape, v.dtype)


def once(tr: Translation, key: tuple, make: Callable[[], str]) -> str:
    """The value `make` makes, made once per key: a tensor read as torch holds it by several ops
    (a transposed view relu'd and cast) is permuted once."""
    if key not in tr.views:
        tr.views[key] = make()
    return tr.views[key]


def plain(tr: Translation, v: Any, loc: str) -> Value:
    """`v` as torch holds it but channels-last where it is (what an element-wise op keeps)."""
    if isinstance(v, Value) and v.nhwc:
        return v
    return logical(tr, v, loc)


def stored_shape(tr: Translation, v: Value) -> tuple[int, ...]:
    """The shape `v` has as torch holds it, its leading dims as its SSA value has them (unmerged)."""
    shape = tr.builder.shape(v.ssa)
    return (*shape[:-2], shape[-1], shape[-2]) if v.transposed else shape


def to_nhwc(tr: Translation, v: Any, loc: str) -> Value:
    """`v` channels-last: an N, C, H, W tensor permuted once."""
    if not isinstance(v, Value) or len(v.shape) != 4:
        raise tr.error(f"{loc}: expected an N, C, H, W tensor")
    if v.nhwc:
        return v
    held = logical(tr, v, loc).ssa  # permuted once, whatever reads it so (a block's conv and shortcut)
    made = once(tr, (held, ("nhwc",)), lambda: tr.builder.permute(held, (0, 2, 3, 1), f"{loc}.to_nhwc"))
    return Value(made, v.shape, v.dtype, True)
