"""A PyTorch model as an exported program: an `nn.Module` with example inputs exported with
`torch.export`, an `ExportedProgram` as given, or a `.pt2` file of `torch.export.save`; then
decomposed to the core aten vocabulary, attention kept whole (torch.export keeps what its table
leaves out). torch is imported only here, and only when a torch model is given."""

from __future__ import annotations

import importlib
import logging
import warnings
from pathlib import Path
from typing import Any

from tilescope.compiler.errors import ModelLoadError

INSTALL = "a PyTorch model needs PyTorch: pip install 'tilescope[torch]'"
# ops the decomposition leaves whole: tilescope costs them as the fused kernels accelerators run
KEPT = ("scaled_dot_product_attention",)


def torch_module() -> Any:
    """The torch package, or one line saying how to install it."""
    try:
        return importlib.import_module("torch")
    except ImportError:
        raise ModelLoadError(INSTALL) from None


def is_torch_model(model: object) -> bool:
    """Whether `model` is an nn.Module or an ExportedProgram (without importing torch if the caller
    has not: a torch object means torch is loaded)."""
    return any(c.__module__.startswith("torch.") for c in type(model).__mro__)


def export(model: Any, example_inputs: tuple | None = None) -> Any:
    """An ExportedProgram of `model` (a module run on `example_inputs`, or already exported), in
    the core aten vocabulary with attention kept whole."""
    torch = torch_module()
    program = model
    if isinstance(model, torch.nn.Module):
        if example_inputs is None:
            raise ModelLoadError(f"{type(model).__name__}: a module needs example inputs to export it")
        inputs = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
        training = model.training  # exported for inference, then left as the caller had it
        try:
            with warnings.catch_warnings():  # torch's deprecation notes about its own internals
                warnings.simplefilter("ignore", FutureWarning)
                program = torch.export.export(model.eval(), inputs)
        except Exception as err:  # torch's own reason, on one line
            raise ModelLoadError(f"{type(model).__name__}: torch.export failed: {_first_line(err)}") from None
        finally:
            model.train(training)
    if not isinstance(program, torch.export.ExportedProgram):
        raise ModelLoadError(f"{type(model).__name__}: not an nn.Module or a torch.export ExportedProgram")
    return decompose(program)


def decompose(program: Any) -> Any:
    """`program` in the core aten vocabulary, the ops of KEPT left whole."""
    torch = torch_module()
    table = torch.export.default_decompositions()
    for name in KEPT:
        packet = getattr(torch.ops.aten, name)
        for overload in packet.overloads():
            table.pop(getattr(packet, overload), None)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            return program.run_decompositions(table)
    except Exception as err:
        raise ModelLoadError(f"torch.export could not decompose the program: {_first_line(err)}") from None


def load_pt2(source: Path | bytes, name: str) -> Any:
    """The ExportedProgram in a `.pt2` file of torch.export.save (a path, or its bytes), read
    without opening any pickle in it: its graph, the weights as empty tensors of their shapes
    (compiler/frontend/torch_archive.py)."""
    from tilescope.compiler.frontend.torch_archive import read_pt2

    torch = torch_module()
    logger = logging.getLogger("torch._export")  # which logs its own tracebacks before it raises
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            return read_pt2(torch, source, name)
    finally:
        logger.setLevel(level)


def _first_line(err: Exception) -> str:
    text = str(err).strip()
    return text.splitlines()[0][:300] if text else type(err).__name__
