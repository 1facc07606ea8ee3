"""A JAX function imported as tilescope's `input` level: jitted on its example arguments, lowered
to StableHLO with its debug locations (each op named by JAX's name stack, `jit(f)/dot_general`,
and located at its line of Python), and imported as any StableHLO model is. jax is imported only
here, and only when a JAX function is given."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from tilescope.compiler.errors import ModelLoadError
from tilescope.compiler.frontend.mlir_import import ImportedModel, import_mlir
from tilescope.compiler.ir.meta import CODE_LINE

INSTALL = "a JAX function needs JAX: pip install 'tilescope[jax]'"
PACKAGE = str(Path(__file__).resolve().parent)  # the front end: where the lowering is called


def import_jax(function: Any, example_args: Any = None) -> ImportedModel:
    """`function` (anything `jax.jit` takes) lowered on `example_args` (an array, a tuple of
    them, or `jax.ShapeDtypeStruct`s: only shapes and dtypes are read)."""
    try:
        jax = importlib.import_module("jax")
    except ImportError:
        raise ModelLoadError(INSTALL) from None
    name = getattr(function, "__name__", type(function).__name__)
    if example_args is None:
        raise ModelLoadError(f"{name}: a JAX function needs example arguments to lower it")
    args = example_args if isinstance(example_args, tuple) else (example_args,)
    try:
        text = jax.jit(function).lower(*args).as_text(debug_info=True)
    except Exception as err:  # jax's own reason, on one line
        first = (str(err).strip().splitlines() or [type(err).__name__])[0][:300]
        raise ModelLoadError(f"{name}: jax could not lower it: {first}") from None
    imported = import_mlir(text, f"jax:{name}", name)
    for op in imported.graph.ops:  # ops JAX places at the lowering's call, here, come from no line of the model
        line = op.meta.get(CODE_LINE)
        if line is not None and line.file.startswith(PACKAGE):
            del op.meta[CODE_LINE]
    return imported
