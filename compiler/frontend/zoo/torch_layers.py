"""torch.nn layers (Linear, Embedding, 1-D parameters) spelled as torch-xla exports spell them."""

from __future__ import annotations

import math

from tilescope.compiler.frontend.zoo.builder import MlirBuilder, Shape


def param_1d(b: MlirBuilder, name: str, size: int, dtype: str) -> str:
    """A [size] parameter through the 1x1xN round trip exports put around every bias and norm weight."""
    p = b.arg(name, (size,), dtype, "parameter")
    p = b.reshape(p, (1, 1, size), f"{name}.reshape.0")
    return b.reshape(p, (size,), f"{name}.reshape.1")


def dense(
    b: MlirBuilder,
    x: str,
    out: int,
    scope: str,
    unflatten: Shape,
    bias: bool = True,
    roundtrip: bool = False,
    split: int | None = None,
) -> str:
    """torch.nn.Linear on a [rows, in] input: the [out, in] weight transposed, a dot_general, the
    result reshaped to `unflatten`, and the bias reshaped, broadcast and added. `roundtrip` adds the
    1xOxI reshape round trip torch-xla exports put around the weight. `split`: the weight's
    dimension split over the devices (0: column-parallel, 1: row-parallel)."""
    width, dtype = b.shape(x)[1], b.dtype(x)
    w = b.arg(f"{scope}.weight", (out, width), dtype, "parameter", split)
    if roundtrip:
        w = b.reshape(w, (1, out, width), f"{scope}.weight.reshape.0")
        w = b.reshape(w, (out, width), f"{scope}.weight.reshape.1")
    w = b.permute(w, (1, 0), f"{scope}.weight.transpose")
    y = b.dot_general(x, w, f"{scope}.matmul")
    y = b.reshape(y, unflatten, f"{scope}.unflatten")
    if not bias:
        return y
    c = param_1d(b, f"{scope}.bias", out, dtype)
    c = b.reshape(c, (1,) * (len(unflatten) - 1) + (out,), f"{scope}.bias.reshape.2")
    c = b.broadcast(c, unflatten, f"{scope}.bias.broadcast")
    return b.eltwise("add", [y, c], f"{scope}.bias_add")


def gather(b: MlirBuilder, ids: str, table: str, scope: str) -> str:
    """Token ids [B, S] (i64) -> embeddings [B, S, width]: flattened, cast to ui32, gathered."""
    shape = b.shape(ids)
    flat = b.reshape(ids, (math.prod(shape),), f"{scope}.flatten_ids")
    flat = b.typecast(flat, "ui32", f"{scope}.ids_typecast")
    flat = b.reshape(flat, (1, math.prod(shape)), f"{scope}.ids_reshape")
    rows = b.embedding(flat, table, f"{scope}.gather")
    return b.reshape(rows, shape + b.shape(table)[1:], f"{scope}.unflatten")
