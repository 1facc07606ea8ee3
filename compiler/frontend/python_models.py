"""A model given as a Python object: a PyTorch module or exported program (torch_models.py), or
a JAX function (jax_models.py), told apart without importing either framework."""

from __future__ import annotations

from typing import Any

from tilescope.compiler.errors import ModelLoadError
from tilescope.compiler.frontend.mlir_import import ImportedModel
from tilescope.compiler.frontend.torch_export import is_torch_model


def import_python_model(model: Any, example_inputs: Any = None, dtype: str | None = None) -> ImportedModel:
    """`model` at the `input` level: a torch object through the PyTorch import, any other callable
    as a JAX function (`dtype` is the PyTorch import's alone)."""
    if not is_torch_model(model):
        if not callable(model):
            raise ModelLoadError(
                f"{type(model).__name__}: not a model (a path, a PyTorch module or program, or a JAX function)"
            )
        from tilescope.compiler.frontend.jax_models import import_jax

        return import_jax(model, example_inputs)
    from tilescope.compiler.frontend.torch_models import import_torch

    return import_torch(model, example_inputs, dtype)
