"""MlirBuilder: emits one func.func of TTIR generic-form ops, shapes checked, each op named by a loc."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from tilescope.compiler.ir.printer import mlir_string

Shape = tuple[int, ...]

DTYPES = ("bf16", "f32", "f16")  # element types a zoo model may be generated in
ACC = "f32"  # attention scores and softmax run in f32, as real exports do
MAX_INT = 1 << 20  # upper bound of any integer parameter
MAX_LAYERS = 10_000  # ~1M ops for the transformers; more is a typo, not a model
# `ttcore.argument_type` of a function argument, as tt-xla and tt-torch mark them: `parameter` (a
# weight) and `constant` (a registered buffer) are loaded once, `input` may change every step
ARG_KINDS = ("input", "parameter", "constant")


# --- property text ------------------------------------------------------------------------------


def _i32_list(values: Iterable[int]) -> str:
    return "[" + ", ".join(f"{v} : i32" for v in values) + "]"


def _array(kind: str, values: Iterable[int]) -> str:
    body = ", ".join(map(str, values))
    return f"array<{kind}: {body}>" if body else f"array<{kind}>"


def _float(value: float) -> str:
    return f"{value:e}"


class MlirBuilder:
    """Emits one func.func of TTIR generic-form ops, each named by a loc.

    `op` and `emit` write any op; the shape-aware helpers (`reshape`, `dot_general`, `conv2d`, ...)
    compute each result type from their operands and properties and raise ValueError on operands
    that do not fit, so a generated model is consistent by construction.
    """

    def __init__(self, func_name: str = "forward", devices: int = 1) -> None:
        self.func_name = func_name
        # tensor parallel over a Shardy mesh of `devices` along one axis, "model", when more than one
        self.devices = devices
        self.args: list[str] = []
        self.lines: list[str] = []
        self.types: dict[str, str] = {}  # SSA value -> its type text
        self.shapes: dict[str, tuple[Shape, str]] = {}  # SSA value -> (shape, dtype)
        self.locs: set[str] = set()
        # where the next ops came from, when a front end knows it: (file, line) of its source
        self.source: tuple[str, int] | None = None
        self.source_code = ""  # and the code on that line
        self.next_id = 0
        self._type_text: dict[tuple[Shape, str], str] = {}

    @staticmethod
    def tensor_type(shape: Sequence[int], dtype: str) -> str:
        dims = "x".join(map(str, shape))
        return f"tensor<{dims}x{dtype}>" if dims else f"tensor<{dtype}>"

    def _type(self, shape: Shape, dtype: str) -> str:
        text = self._type_text.get((shape, dtype))
        if text is None:
            text = self._type_text[(shape, dtype)] = self.tensor_type(shape, dtype)
        return text

    def shape(self, value: str) -> Shape:
        return self.shapes[value][0]

    def dtype(self, value: str) -> str:
        return self.shapes[value][1]

    def arg(self, name: str, shape: Sequence[int], dtype: str, kind: str = "input", split: int | None = None) -> str:
        """A function argument named `name`, marked with its `ttcore.argument_type` `kind`; with
        several devices, dimension `split` is split along the mesh's "model" axis (sdy.sharding)."""
        if kind not in ARG_KINDS:
            raise ValueError(f"{name}: argument kind {kind!r} is not one of {', '.join(ARG_KINDS)}")
        value = f"%arg{len(self.args)}"
        shape = tuple(shape)
        ttype = self._type(shape, dtype)
        attrs = f'ttcore.argument_type = #ttcore.argument_type<{kind}>, ttir.name = "{name}"'
        if self.devices > 1 and split is not None:
            dims = ", ".join('{"model"}' if d == split else "{}" for d in range(len(shape)))
            attrs += f", sdy.sharding = #sdy.sharding<@mesh, [{dims}]>"
        self.args.append(f"{value}: {ttype} {{{attrs}}}")
        self.types[value] = ttype
        self.shapes[value] = (shape, dtype)
        return value

    def emit(
        self,
        kind: str,
        operands: Sequence[str],
        results: Sequence[tuple[Sequence[int], str]],
        loc: str,
        props: str = "",
    ) -> list[str]:
        """One op with any number of results (0, 1 or more); returns the result values.
        `kind` without a dialect is a ttir op; `props` is the text inside `<{...}>`."""
        if loc in self.locs:
            raise ValueError(f"two ops named {loc!r}")
        self.locs.add(loc)
        name = kind if "." in kind else f"ttir.{kind}"
        in_types = ", ".join(self.types[o] for o in operands)
        outs = [(tuple(shape), dtype) for shape, dtype in results]
        out_types = [self._type(shape, dtype) for shape, dtype in outs]
        if not outs:
            lhs, values, out = "", [], "()"
        else:
            base = f"%{self.next_id}"
            self.next_id += 1
            if len(outs) == 1:
                lhs, values, out = f"{base} = ", [base], out_types[0]
            else:
                lhs = f"{base}:{len(outs)} = "
                values = [f"{base}#{i}" for i in range(len(outs))]
                out = f"({', '.join(out_types)})"
        for value, ttype, shaped in zip(values, out_types, outs):
            self.types[value] = ttype
            self.shapes[value] = shaped
        attrs = f" <{{{props}}}>" if props else ""
        where = f'"{loc}"'
        if self.source is not None:
            position = f"{mlir_string(self.source[0])}:{self.source[1]}:0"
            where += f"({mlir_string(self.source_code)}({position}))" if self.source_code else f"({position})"
        self.lines.append(f'    {lhs}"{name}"({", ".join(operands)}){attrs} : ({in_types}) -> {out} loc({where})')
        return values

    def op(self, kind: str, operands: list[str], shape: Sequence[int], dtype: str, loc: str, props: str = "") -> str:
        return self.emit(kind, operands, [(shape, dtype)], loc, props)[0]

    def text(self, outputs: list[str]) -> str:
        out_types = ", ".join(self.types[o] for o in outputs)
        return "\n".join(
            [
                "module {",
                *([f'  sdy.mesh @mesh = <["model"={self.devices}]>'] if self.devices > 1 else []),
                f"  func.func @{self.func_name}({', '.join(self.args)}) -> ({out_types}) {{",
                *self.lines,
                f"    return {', '.join(outputs)} : {out_types}",
                "  }",
                "}",
                "",
            ]
        )

    # --- shape-aware TTIR ops -------------------------------------------------------------------

    def _fail(self, loc: str, message: str) -> ValueError:
        return ValueError(f"{loc}: {message}")

    def constant(self, value: float, shape: Sequence[int], dtype: str, loc: str) -> str:
        shape = tuple(shape)
        text = str(int(value)) if dtype.startswith(("i", "ui", "si")) else _float(value)
        return self.op("constant", [], shape, dtype, loc, f"value = dense<{text}> : {self._type(shape, dtype)}")

    def reshape(self, x: str, shape: Sequence[int], loc: str) -> str:
        src, dtype = self.shapes[x]
        shape = tuple(shape)
        if math.prod(src) != math.prod(shape):
            raise self._fail(loc, f"cannot reshape {src} to {shape}")
        return self.op("reshape", [x], shape, dtype, loc, f"shape = {_i32_list(shape)}")

    def permute(self, x: str, permutation: Sequence[int], loc: str) -> str:
        src, dtype = self.shapes[x]
        if sorted(permutation) != list(range(len(src))):
            raise self._fail(loc, f"permutation {permutation} of a rank-{len(src)} tensor")
        shape = tuple(src[p] for p in permutation)
        return self.op("permute", [x], shape, dtype, loc, f"permutation = {_array('i64', permutation)}")

    def broadcast(self, x: str, shape: Sequence[int], loc: str) -> str:
        src, dtype = self.shapes[x]
        shape = tuple(shape)
        if len(src) != len(shape) or any(s not in (1, d) for s, d in zip(src, shape)):
            raise self._fail(loc, f"cannot broadcast {src} to {shape}")
        factors = [d // s for s, d in zip(src, shape)]
        return self.op("broadcast", [x], shape, dtype, loc, f"broadcast_dimensions = {_array('i64', factors)}")

    def typecast(self, x: str, dtype: str, loc: str) -> str:
        """A typecast, or `x` itself when it already has `dtype`."""
        src, have = self.shapes[x]
        if have == dtype:
            return x
        return self.op("typecast", [x], src, dtype, loc, "conservative_folding = false")

    def eltwise(self, kind: str, operands: Sequence[str], loc: str) -> str:
        """An elementwise op; operands must agree in shape and dtype (exports broadcast explicitly)."""
        shaped = self.shapes[operands[0]]
        for other in operands[1:]:
            if self.shapes[other] != shaped:
                raise self._fail(loc, f"{kind} of {shaped} and {self.shapes[other]}")
        return self.op(kind, list(operands), shaped[0], shaped[1], loc)

    def dot_general(self, a: str, b: str, loc: str, batch: int = 0, rhs_contract: int | None = None) -> str:
        """lhs contracts its last dim with rhs dim `rhs_contract` (default: the first after the
        `batch` leading batch dims both share). Result: batch dims, lhs free dims, rhs free dims."""
        sa, da = self.shapes[a]
        sb, db = self.shapes[b]
        lc, rc = len(sa) - 1, batch if rhs_contract is None else rhs_contract
        if sa[:batch] != sb[:batch] or sa[lc] != sb[rc] or da != db:
            raise self._fail(loc, f"dot_general of {sa}x{da} and {sb}x{db}")
        shape = (
            sa[:batch]
            + tuple(d for i, d in enumerate(sa) if i >= batch and i != lc)
            + tuple(d for i, d in enumerate(sb) if i >= batch and i != rc)
        )
        dims = _array("i64", range(batch))
        props = (
            f"batch_dims_lhs = {dims}, batch_dims_rhs = {dims}, "
            f"contract_dims_lhs = {_array('i64', [lc])}, contract_dims_rhs = {_array('i64', [rc])}"
        )
        return self.op("dot_general", [a, b], shape, da, loc, props)

    def embedding(self, ids: str, table: str, loc: str) -> str:
        width = self.shape(table)[1]
        return self.op("embedding", [ids, table], self.shape(ids) + (width,), self.dtype(table), loc)

    def slice(self, x: str, begins: Sequence[int], ends: Sequence[int], loc: str) -> str:
        src, dtype = self.shapes[x]
        if (
            len(begins) != len(src)
            or len(ends) != len(src)
            or any(not 0 <= b < e <= s for b, e, s in zip(begins, ends, src))
        ):
            raise self._fail(loc, f"slice [{begins}, {ends}) of {src}")
        shape = tuple(e - b for b, e in zip(begins, ends))
        props = f"begins = {_i32_list(begins)}, ends = {_i32_list(ends)}, step = {_i32_list([1] * len(src))}"
        return self.op("slice_static", [x], shape, dtype, loc, props)

    def concat(self, parts: Sequence[str], dim: int, loc: str) -> str:
        first, dtype = self.shapes[parts[0]]
        rank = len(first)
        axis = dim % rank
        for p in parts[1:]:
            s, d = self.shapes[p]
            if d != dtype or len(s) != rank or any(s[i] != first[i] for i in range(rank) if i != axis):
                raise self._fail(loc, f"concat of {first} and {s}")
        shape = first[:axis] + (sum(self.shape(p)[axis] for p in parts),) + first[axis + 1 :]
        return self.op("concat", list(parts), shape, dtype, loc, f"dim = {dim} : si32")

    def norm(self, kind: str, x: str, params: Sequence[str], eps: str, loc: str) -> str:
        shape, dtype = self.shapes[x]
        for p in params:
            if self.shape(p) != shape[-1:]:
                raise self._fail(loc, f"{kind} of {shape} with a {self.shape(p)} parameter")
        segments = ", ".join(["1"] + ["1"] * len(params) + ["0"] * (2 - len(params)))
        props = (
            f"epsilon = {eps} : f32, normalized_shape = {_array('i64', shape[-1:])}, "
            f"operandSegmentSizes = array<i32: {segments}>"
        )
        return self.op(kind, [x, *params], shape, dtype, loc, props)

    def layer_norm(self, x: str, weight: str, bias: str, loc: str, eps: str = "9.99999996E-13") -> str:
        return self.norm("layer_norm", x, [weight, bias], eps, loc)

    def rms_norm(self, x: str, weight: str, loc: str, eps: str = "9.99999974E-6") -> str:
        return self.norm("rms_norm", x, [weight], eps, loc)

    def softmax(self, x: str, loc: str, dim: int = -1) -> str:
        shape, dtype = self.shapes[x]
        return self.op("softmax", [x], shape, dtype, loc, f"dimension = {dim} : si32")

    def reduce(self, kind: str, x: str, dims: Sequence[int], loc: str) -> str:
        src, dtype = self.shapes[x]
        shape = tuple(d for i, d in enumerate(src) if i not in dims)
        return self.op(kind, [x], shape, dtype, loc, f"dim_arg = {_i32_list(dims)}, keep_dim = false")

    def conv2d(self, x: str, weight: str, loc: str, stride: int = 1, padding: int = 0) -> str:
        """NHWC input, OIHW weight, as TTIR's conv2d takes them; the dims are spelled out."""
        (n, h, w, c), dtype = self.shapes[x]
        out_c, in_c, kh, kw = self.shape(weight)
        if in_c != c:
            raise self._fail(loc, f"conv2d of {self.shape(x)} with weight {self.shape(weight)}")
        oh, ow = (h + 2 * padding - kh) // stride + 1, (w + 2 * padding - kw) // stride + 1
        props = (
            "batch_dim = 0 : i64, channel_dim = 3 : i64, dilation = array<i32: 1, 1>, groups = 1 : i32, "
            f"height_dim = 1 : i64, padding = {_array('i32', [padding] * 4)}, "
            f"stride = {_array('i32', [stride, stride])}, width_dim = 2 : i64"
        )
        return self.op("conv2d", [x, weight], (n, oh, ow, out_c), dtype, loc, props)

    def batch_norm(self, x: str, params: Sequence[str], loc: str, dim: int = 3) -> str:
        """Inference batch norm; params are scale, offset, mean, variance, each of the channel size."""
        shape, dtype = self.shapes[x]
        if len(params) != 4 or any(self.shape(p) != (shape[dim],) for p in params):
            raise self._fail(loc, f"batch norm of {shape} with {[self.shape(p) for p in params]}")
        props = f"dimension = {dim} : i32, epsilon = 9.99999974E-6 : f32"
        return self.op("batch_norm_inference", [x, *params], shape, dtype, loc, props)

    def max_pool2d(self, x: str, loc: str, kernel: int, stride: int, padding: int) -> str:
        (n, h, w, c), dtype = self.shapes[x]
        oh, ow = (h + 2 * padding - kernel) // stride + 1, (w + 2 * padding - kernel) // stride + 1
        props = (
            f"ceil_mode = false, dilation = array<i32: 1, 1>, kernel = {_array('i32', [kernel, kernel])}, "
            f"padding = {_array('i32', [padding] * 4)}, stride = {_array('i32', [stride, stride])}"
        )
        return self.op("max_pool2d", [x], (n, oh, ow, c), dtype, loc, props)

    def update_cache(self, cache: str, update: str, index: str, loc: str) -> None:
        """Write one position per user into `cache` [users, heads, len, dim] in place; `update` is
        [1, heads, users, dim] as tt-metal's update_cache takes it. No result, as in real exports."""
        users, heads, _, dim = self.shape(cache)
        if self.shape(update) != (1, heads, users, dim) or self.dtype(update) != self.dtype(cache):
            raise self._fail(loc, f"update_cache of {self.shape(cache)} with {self.shape(update)}")
        self.emit("update_cache", [cache, update, index], [], loc, "batch_offset = 0 : i32")

    def fill_cache(self, cache: str, update: str, loc: str, user: int = 0) -> None:
        """Write a prompt's keys or values [1, heads, seq, dim] into user `user`'s cache rows."""
        users, heads, length, dim = self.shape(cache)
        _, uh, seq, ud = self.shape(update)
        if (uh, ud) != (heads, dim) or seq > length or user >= users:
            raise self._fail(loc, f"fill_cache of {self.shape(cache)} with {self.shape(update)}")
        self.emit("fill_cache", [cache, update], [], loc, f"batch_offset = {user} : i32")
