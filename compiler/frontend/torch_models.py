"""A PyTorch model imported as tilescope's `input` level: exported (compiler/frontend/
torch_export.py), written as MLIR text (torch_graph.py) and imported as any MLIR model is, so a
stored run keeps its text and re-runs without torch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tilescope.compiler.errors import ModelLoadError
from tilescope.compiler.frontend import torch_export
from tilescope.compiler.frontend.mlir_import import ImportedModel, import_mlir
from tilescope.compiler.frontend.torch_graph import program_text

FLOAT_DTYPES = ("bf16", "f32", "f16")


def import_torch(model: Any, example_inputs: Any = None, dtype: str | None = None) -> ImportedModel:
    """An nn.Module run on `example_inputs`, or an ExportedProgram, at the `input` level; `dtype`
    makes every floating tensor that type (as `model.to(torch.bfloat16)` would), else as exported."""
    name = type(model).__name__
    _check_dtype(dtype)  # before the export, which is most of the work
    return _imported(torch_export.export(model, example_inputs), f"torch:{name}", name, dtype)


def import_pt2(source: str | Path | bytes, dtype: str | None = None, name: str | None = None) -> ImportedModel:
    """The program of a `.pt2` file of torch.export.save, a path or its bytes (an upload, named
    `name`): its graph is read, no pickle in it opened (compiler/frontend/torch_archive.py)."""
    ref = name or str(source)
    _check_dtype(dtype)
    program = torch_export.decompose(torch_export.load_pt2(source if isinstance(source, bytes) else Path(source), ref))
    return _imported(program, ref, Path(ref).name.removesuffix(".pt2"), dtype)


def _check_dtype(dtype: str | None) -> None:
    if dtype is not None and dtype not in FLOAT_DTYPES:
        raise ModelLoadError(f"dtype {dtype!r}: a PyTorch model's floats can be made {', '.join(FLOAT_DTYPES)}")


def _imported(program: Any, ref: str, name: str, dtype: str | None) -> ImportedModel:
    return import_mlir(program_text(program, name, dtype), ref, name)
