"""Built-in models, generated as TTIR MLIR text with realistic shapes and no weights.

Zoo models go through the same MLIR parser as user files, so the `input` level of a zoo model is
real MLIR and every later stage sees one kind of input. Ops carry hierarchical loc names
(`mlp.layer.0.fc1`) so views can group them by scope.

References: `zoo:mlp`, `zoo:mlp?batch=64&hidden=2048&layers=3`, `zoo:matmul:2048x2048x2048`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from urllib.parse import parse_qsl

from .errors import ModelLoadError

PREFIX = "zoo:"


class MlirBuilder:
    """Emits one func.func of TTIR generic-form ops, each named by a loc."""

    def __init__(self, func_name: str = "forward") -> None:
        self.func_name = func_name
        self.args: list[str] = []
        self.lines: list[str] = []
        self.types: dict[str, str] = {}
        self.next_id = 0

    @staticmethod
    def tensor_type(shape: tuple[int, ...], dtype: str) -> str:
        return f"tensor<{'x'.join(map(str, shape))}x{dtype}>"

    def arg(self, name: str, shape: tuple[int, ...], dtype: str) -> str:
        value = f"%arg{len(self.args)}"
        ttype = self.tensor_type(shape, dtype)
        self.args.append(f'{value}: {ttype} {{ttir.name = "{name}"}}')
        self.types[value] = ttype
        return value

    def op(self, kind: str, operands: list[str], shape: tuple[int, ...], dtype: str, loc: str) -> str:
        value = f"%{self.next_id}"
        self.next_id += 1
        ttype = self.tensor_type(shape, dtype)
        in_types = ", ".join(self.types[o] for o in operands)
        self.lines.append(
            f'    {value} = "ttir.{kind}"({", ".join(operands)}) : ({in_types}) -> {ttype} loc("{loc}")'
        )
        self.types[value] = ttype
        return value

    def text(self, outputs: list[str]) -> str:
        out_types = ", ".join(self.types[o] for o in outputs)
        return "\n".join(
            [
                "module {",
                f"  func.func @{self.func_name}({', '.join(self.args)}) -> ({out_types}) {{",
                *self.lines,
                f"    return {', '.join(outputs)} : {out_types}",
                "  }",
                "}",
                "",
            ]
        )


def _linear(b: MlirBuilder, x: str, m: int, k: int, n: int, dtype: str, scope: str) -> str:
    weight = b.arg(f"{scope}.weight", (k, n), dtype)
    bias = b.arg(f"{scope}.bias", (1, n), dtype)
    y = b.op("matmul", [x, weight], (m, n), dtype, f"{scope}.matmul")
    return b.op("add", [y, bias], (m, n), dtype, f"{scope}.bias_add")


def mlp(batch: int = 128, width: int = 1024, hidden: int = 4096, layers: int = 2, dtype: str = "bf16") -> str:
    """A transformer-style MLP stack: per layer fc1 (width->hidden), gelu, fc2 (hidden->width)."""
    b = MlirBuilder()
    x = b.arg("input", (batch, width), dtype)
    for i in range(layers):
        scope = f"mlp.layer.{i}"
        h = _linear(b, x, batch, width, hidden, dtype, f"{scope}.fc1")
        h = b.op("gelu", [h], (batch, hidden), dtype, f"{scope}.gelu")
        x = _linear(b, h, batch, hidden, width, dtype, f"{scope}.fc2")
    return b.text([x])


def matmul(m: int, k: int, n: int, dtype: str = "bf16") -> str:
    b = MlirBuilder()
    a = b.arg("a", (m, k), dtype)
    w = b.arg("b", (k, n), dtype)
    return b.text([b.op("matmul", [a, w], (m, n), dtype, "matmul")])


_INT_PARAMS = {"batch", "width", "hidden", "layers"}
MODELS: dict[str, Callable[..., str]] = {"mlp": mlp}


def names() -> list[str]:
    return [f"{PREFIX}{name}" for name in MODELS] + [f"{PREFIX}matmul:2048x2048x2048"]


def is_zoo(ref: str) -> bool:
    return ref.startswith(PREFIX)


@lru_cache(maxsize=8)
def generate(ref: str) -> str:
    """MLIR text of a zoo reference such as 'zoo:mlp?layers=4' or 'zoo:matmul:512x512x512'."""
    body = ref[len(PREFIX) :]
    body, _, query = body.partition("?")
    params = dict(parse_qsl(query))
    if body.startswith("matmul:"):
        dims = body.split(":", 1)[1].split("x")
        if len(dims) != 3 or not all(d.isdigit() and int(d) > 0 for d in dims):
            raise ModelLoadError(f"{ref}: expected zoo:matmul:MxKxN with positive integers")
        unknown = set(params) - {"dtype"}
        if unknown:
            raise ModelLoadError(f"{ref}: unknown parameter {sorted(unknown)[0]!r} (zoo:matmul takes dtype)")
        return matmul(*map(int, dims), **params)
    if body not in MODELS:
        raise ModelLoadError(f"unknown zoo model {ref!r}; known: {', '.join(names())}")
    kwargs: dict[str, object] = {}
    for key, value in params.items():
        if key in _INT_PARAMS:
            if not value.isdigit() or int(value) <= 0:
                raise ModelLoadError(f"{ref}: parameter {key} must be a positive integer, got {value!r}")
            kwargs[key] = int(value)
        elif key == "dtype":
            kwargs[key] = value
        else:
            raise ModelLoadError(f"{ref}: unknown parameter {key!r}")
    return MODELS[body](**kwargs)
