"""Small models: a transformer-style MLP stack and a single matmul."""

from __future__ import annotations

from tilescope.compiler.frontend.zoo.builder import MlirBuilder


def _linear(b: MlirBuilder, x: str, m: int, k: int, n: int, dtype: str, scope: str) -> str:
    weight = b.arg(f"{scope}.weight", (k, n), dtype, "parameter")
    bias = b.arg(f"{scope}.bias", (1, n), dtype, "parameter")
    y = b.op("matmul", [x, weight], (m, n), dtype, f"{scope}.matmul")
    return b.op("add", [y, bias], (m, n), dtype, f"{scope}.bias_add")


def mlp(batch: int = 128, width: int = 1024, hidden: int = 4096, layers: int = 2, dtype: str = "bf16") -> str:
    """A transformer-style MLP stack: per layer fc1 (width->hidden), gelu, fc2 (hidden->width)."""
    b = MlirBuilder()
    x = b.arg("input", (batch, width), dtype, "input")
    for i in range(layers):
        scope = f"mlp.layer.{i}"
        h = _linear(b, x, batch, width, hidden, dtype, f"{scope}.fc1")
        h = b.op("gelu", [h], (batch, hidden), dtype, f"{scope}.gelu")
        x = _linear(b, h, batch, hidden, width, dtype, f"{scope}.fc2")
    return b.text([x])


def matmul(m: int, k: int, n: int, dtype: str = "bf16") -> str:
    """One matmul, as an op benchmark runs it: both operands arrive with each run."""
    b = MlirBuilder()
    a = b.arg("a", (m, k), dtype, "input")
    w = b.arg("b", (k, n), dtype, "input")
    return b.text([b.op("matmul", [a, w], (m, n), dtype, "matmul")])
