"""Built-in models, generated as TTIR MLIR text with realistic shapes and no weights.

Zoo models go through the same MLIR parser as user files, so the `input` level of a zoo model is
real MLIR and every later stage sees one kind of input. Ops carry hierarchical loc names
(`encoder.layer.3.attention.self.query.matmul`) so views can group them by scope; weights are
function arguments named by `{ttir.name = "..."}`. Op spellings and properties follow real TTIR
exports from tt-mlir (`ttir.dot_general` with batch/contract dims, `ttir.reshape` with
`shape = [..]`, `ttir.permute`, `ttir.broadcast`, `ttir.typecast`, `ttir.conv2d` with explicit
NHWC dims, `ttir.update_cache`, ...), including the reshapes, broadcasts and typecasts around the
compute ops that make real exports fine-grained.

References:
    zoo:mlp                      zoo:mlp?batch=64&hidden=2048&layers=3
    zoo:matmul:2048x2048x2048
    zoo:bert-base                BERT-base encoder; batch, seq (<= 512), layers, dtype
    zoo:llama-3.2-1b             Llama 3.2 1B prefill; batch, seq, layers, cache, dtype
    zoo:llama-3.2-1b?mode=decode one token against a KV cache of `cache` (1024) positions
    zoo:resnet50                 ResNet-50, NHWC; batch, size (image side), layers (depth), dtype
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from urllib.parse import parse_qsl

from ..errors import ModelLoadError
from .builder import DTYPES, MAX_INT, MAX_LAYERS, MlirBuilder
from .mlp import matmul, mlp
from .resnet import resnet50, resnet_stages
from .transformers import bert_base, llama_3_2_1b

PREFIX = "zoo:"

__all__ = [
    "PREFIX",
    "MlirBuilder",
    "bert_base",
    "generate",
    "is_zoo",
    "llama_3_2_1b",
    "matmul",
    "mlp",
    "names",
    "op_count",
    "resnet50",
    "resnet_stages",
]


def _positive_int(key: str, value: str, ref: str) -> int:
    if not (value.isascii() and value.isdigit()) or int(value) <= 0:
        raise ModelLoadError(f"{ref}: parameter {key} must be a positive integer, got {value!r}")
    number = int(value)
    limit = MAX_LAYERS if key == "layers" else MAX_INT
    if number > limit:
        raise ModelLoadError(f"{ref}: parameter {key} must be at most {limit}, got {number}")
    return number


def _choice(*allowed: str) -> Callable[[str, str, str], str]:
    def parse(key: str, value: str, ref: str) -> str:
        if value not in allowed:
            raise ModelLoadError(f"{ref}: parameter {key} must be one of {', '.join(allowed)}, got {value!r}")
        return value

    return parse


_DTYPE = _choice(*DTYPES)
MODELS: dict[str, Callable[..., str]] = {
    "mlp": mlp,
    "bert-base": bert_base,
    "llama-3.2-1b": llama_3_2_1b,
    "resnet50": resnet50,
}
PARAMS: dict[str, dict[str, Callable[[str, str, str], object]]] = {
    "mlp": {**{k: _positive_int for k in ("batch", "width", "hidden", "layers")}, "dtype": _DTYPE},
    "bert-base": {"batch": _positive_int, "seq": _positive_int, "layers": _positive_int, "dtype": _DTYPE},
    "llama-3.2-1b": {
        "batch": _positive_int,
        "seq": _positive_int,
        "layers": _positive_int,
        "mode": _choice("prefill", "decode"),
        "cache": _positive_int,
        "dtype": _DTYPE,
    },
    "resnet50": {"batch": _positive_int, "size": _positive_int, "layers": _positive_int, "dtype": _DTYPE},
}
VARIANTS = {"llama-3.2-1b": ["mode=decode"]}  # listed by names() next to the default


def names() -> list[str]:
    listed = []
    for name in MODELS:
        listed.append(f"{PREFIX}{name}")
        listed.extend(f"{PREFIX}{name}?{query}" for query in VARIANTS.get(name, []))
    return listed + [f"{PREFIX}matmul:2048x2048x2048"]


def is_zoo(ref: str) -> bool:
    return ref.startswith(PREFIX)


@lru_cache(maxsize=8)
def generate(ref: str) -> str:
    """MLIR text of a zoo reference such as 'zoo:mlp?layers=4' or 'zoo:matmul:512x512x512'."""
    body = ref[len(PREFIX) :]
    body, _, query = body.partition("?")
    params = dict(parse_qsl(query, keep_blank_values=True))
    if body.startswith("matmul:"):
        dims = body.split(":", 1)[1].split("x")
        if len(dims) != 3 or not all(d.isdigit() and int(d) > 0 for d in dims):
            raise ModelLoadError(f"{ref}: expected zoo:matmul:MxKxN with positive integers")
        unknown = set(params) - {"dtype"}
        if unknown:
            raise ModelLoadError(f"{ref}: unknown parameter {sorted(unknown)[0]!r} (zoo:matmul takes dtype)")
        kwargs = {"dtype": _DTYPE("dtype", params["dtype"], ref)} if "dtype" in params else {}
        return matmul(*map(int, dims), **kwargs)
    if body not in MODELS:
        raise ModelLoadError(f"unknown zoo model {ref!r}; known: {', '.join(names())}")
    spec = PARAMS[body]
    kwargs: dict[str, object] = {}
    for key, value in params.items():
        if key not in spec:
            raise ModelLoadError(f"{ref}: unknown parameter {key!r} ({PREFIX}{body} takes {', '.join(spec)})")
        kwargs[key] = spec[key](key, value, ref)
    try:
        return MODELS[body](**kwargs)
    except ModelLoadError as err:  # a constraint between parameters, e.g. bert-base's seq <= 512
        raise ModelLoadError(f"{ref}: {err}") from None


def op_count(ref: str) -> int:
    """The ops of a zoo model, counted in its generated text without parsing it: MlirBuilder
    writes each op, and the return, on a line of its own indented four spaces."""
    return generate(ref).count("\n    ") - 1
