"""A wide StableHLO function as JAX lowers one (`jax.jit(f).lower(...).as_text()`): plain
arguments without attributes, each step a projection (dot_general), a broadcast bias, an add and
an activation, the steps of a layer side by side. What the bench times `tilescope run` on as a
whole process, against MLIR's bare parse of the same text, at two sizes."""

from __future__ import annotations

WIDTH = 8  # projections side by side in each layer
OPS_PER_STEP = 4  # dot_general, broadcast_in_dim, add, tanh
ROWS, COLS = 64, 256


def wide_stablehlo(ops: int) -> str:
    """The text of a function of about `ops` ops (whole layers of WIDTH steps)."""
    layers = max(1, ops // (WIDTH * OPS_PER_STEP))
    act, weight, bias = f"tensor<{ROWS}x{COLS}xf32>", f"tensor<{COLS}x{COLS}xf32>", f"tensor<{COLS}xf32>"
    args = [f"%arg0: {act}"]
    lines: list[str] = []
    value, n = "%arg0", 0
    for layer in range(layers):
        outs = []
        for step in range(WIDTH):
            w, b = 1 + 2 * (layer * WIDTH + step), 2 + 2 * (layer * WIDTH + step)
            args += [f"%arg{w}: {weight}", f"%arg{b}: {bias}"]
            lines += [
                f"    %{n} = stablehlo.dot_general {value}, %arg{w}, contracting_dims = [1] x [0]"
                f" : ({act}, {weight}) -> {act}",
                f"    %{n + 1} = stablehlo.broadcast_in_dim %arg{b}, dims = [1] : ({bias}) -> {act}",
                f"    %{n + 2} = stablehlo.add %{n}, %{n + 1} : {act}",
                f"    %{n + 3} = stablehlo.tanh %{n + 2} : {act}",
            ]
            outs.append(f"%{n + 3}")
            n += OPS_PER_STEP
        value = outs[0]  # the next layer reads the first step; the others are outputs
        for out in outs[1:]:
            lines.append(f"    %{n} = stablehlo.add {value}, {out} : {act}")
            value, n = f"%{n}", n + 1
    head = f"module @wide {{\n  func.func public @main({', '.join(args)}) -> ({act}) {{"
    return "\n".join([head, *lines, f"    return {value} : {act}", "  }", "}", ""])
