"""Built-in models, generated as TTIR MLIR text with realistic shapes and no weights.

Zoo models go through the same MLIR parser as user files, so the `input` level of a zoo model is
real MLIR and every later stage sees one kind of input. Ops carry hierarchical loc names
(`encoder.layer.3.attention.self.query.matmul`) so views can group them by scope; function
arguments are named by `ttir.name` and marked by `ttcore.argument_type` as tt-xla marks them:
weights `parameter`, registered buffers `constant` (both loaded once), and what changes every step
(tokens, masks, images, KV caches) `input`. Op spellings and properties follow real TTIR exports
from tt-mlir (`ttir.dot_general` with batch/contract dims, `ttir.reshape` with `shape = [..]`,
`ttir.permute`, `ttir.broadcast`, `ttir.typecast`, `ttir.conv2d` with explicit NHWC dims,
`ttir.update_cache`, ...), including the reshapes, broadcasts and typecasts around the compute ops
that make real exports fine-grained.

References:
    zoo:mlp                      zoo:mlp?batch=64&hidden=2048&layers=3
    zoo:matmul:2048x2048x2048
    zoo:bert-base                BERT-base encoder; batch (8), seq (384, at most 512), layers, dtype
    zoo:bert-large               BERT-large encoder; the same parameters
    zoo:llama-3.2-1b             Llama 3.2 1B prefill; batch (1), seq (128), layers, cache, dtype
    zoo:llama-3.2-1b?mode=decode one token per user against a KV cache of `cache` positions (128)
    zoo:llama-3.2-1b?devices=8   tensor parallel over a Shardy mesh of 8 devices (Megatron-style)
    zoo:llama-3.2-3b             Llama 3.2 3B; the same parameters and modes
    zoo:llama-3.1-8b             Llama 3.1 8B; the same parameters and modes
    zoo:resnet50                 ResNet-50, NHWC; batch, size (image side), layers (depth), dtype

`cache` is the number of positions the KV cache holds: the prompt in prefill (default `seq`),
the filled positions in decode.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache, partial
from urllib.parse import parse_qsl

from tilescope.compiler.errors import ModelLoadError
from tilescope.compiler.frontend.zoo.bert import BERTS, BertConfig, bert
from tilescope.compiler.frontend.zoo.builder import ARG_KINDS, DTYPES, MAX_INT, MAX_LAYERS, MlirBuilder
from tilescope.compiler.frontend.zoo.llama import LLAMAS, LlamaConfig, llama
from tilescope.compiler.frontend.zoo.mlp import matmul, mlp
from tilescope.compiler.frontend.zoo.resnet import resnet50, resnet_stages

PREFIX = "zoo:"

__all__ = [
    "ARG_KINDS",
    "BERTS",
    "LLAMAS",
    "PREFIX",
    "BertConfig",
    "LlamaConfig",
    "MlirBuilder",
    "bert",
    "check",
    "generate",
    "is_zoo",
    "llama",
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
_BERT_PARAMS = {"batch": _positive_int, "seq": _positive_int, "layers": _positive_int, "dtype": _DTYPE}
_LLAMA_PARAMS = {
    "batch": _positive_int,
    "seq": _positive_int,
    "layers": _positive_int,
    "mode": _choice("prefill", "decode"),
    "cache": _positive_int,
    "dtype": _DTYPE,
    "devices": _positive_int,
}
MODELS: dict[str, Callable[..., str]] = {
    "mlp": mlp,
    **{name: partial(bert, config) for name, config in BERTS.items()},
    **{name: partial(llama, config) for name, config in LLAMAS.items()},
    "resnet50": resnet50,
}
PARAMS: dict[str, dict[str, Callable[[str, str, str], object]]] = {
    "mlp": {**{k: _positive_int for k in ("batch", "width", "hidden", "layers")}, "dtype": _DTYPE},
    **dict.fromkeys(BERTS, _BERT_PARAMS),
    **dict.fromkeys(LLAMAS, _LLAMA_PARAMS),
    "resnet50": {"batch": _positive_int, "size": _positive_int, "layers": _positive_int, "dtype": _DTYPE},
}
VARIANTS = dict.fromkeys(LLAMAS, ["mode=decode"])  # listed by names() next to the default


def names() -> list[str]:
    listed = []
    for name in MODELS:
        listed.append(f"{PREFIX}{name}")
        listed.extend(f"{PREFIX}{name}?{query}" for query in VARIANTS.get(name, []))
    return listed + [f"{PREFIX}matmul:2048x2048x2048"]


def is_zoo(ref: str) -> bool:
    return ref.startswith(PREFIX)


def check(ref: str) -> tuple[str, dict[str, object]]:
    """The model and parameters a zoo reference names, checked without generating it; a bad one
    is a one-line ModelLoadError."""
    body = ref[len(PREFIX) :]
    body, _, query = body.partition("?")
    params = dict(parse_qsl(query, keep_blank_values=True))
    if body.startswith("matmul:"):
        dims = body.split(":", 1)[1].split("x")
        if len(dims) != 3 or not all(d.isascii() and d.isdigit() and int(d) > 0 for d in dims):
            raise ModelLoadError(f"{ref}: expected zoo:matmul:MxKxN with positive integers")
        unknown = set(params) - {"dtype"}
        if unknown:
            raise ModelLoadError(f"{ref}: unknown parameter {sorted(unknown)[0]!r} (zoo:matmul takes dtype)")
        return body, {"dtype": _DTYPE("dtype", params["dtype"], ref)} if "dtype" in params else {}
    if body not in MODELS:
        raise ModelLoadError(f"unknown zoo model {ref!r}; known: {', '.join(names())}")
    spec = PARAMS[body]
    kwargs: dict[str, object] = {}
    for key, value in params.items():
        if key not in spec:
            raise ModelLoadError(f"{ref}: unknown parameter {key!r} ({PREFIX}{body} takes {', '.join(spec)})")
        kwargs[key] = spec[key](key, value, ref)
    return body, kwargs


@lru_cache(maxsize=8)
def generate(ref: str) -> str:
    """MLIR text of a zoo reference such as 'zoo:mlp?layers=4' or 'zoo:matmul:512x512x512'."""
    body, kwargs = check(ref)
    if body.startswith("matmul:"):
        return matmul(*map(int, body.split(":", 1)[1].split("x")), **kwargs)
    try:
        return MODELS[body](**kwargs)
    except ModelLoadError as err:  # a constraint between parameters, e.g. BERT's seq <= 512
        raise ModelLoadError(f"{ref}: {err}") from None


def op_count(ref: str) -> int:
    """The ops of a zoo model, counted in its generated text without parsing it: MlirBuilder
    writes each op, and the return, on a line of its own indented four spaces."""
    return generate(ref).count("\n    ") - 1
