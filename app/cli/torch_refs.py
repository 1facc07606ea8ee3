"""PyTorch models named on the command line: a `.pt2` file of torch.export.save, or
`model.py:build`, a function of the user's own Python file returning a module and its example
inputs. Both run code the user chose (a .pt2 holds pickled data; a .py file is a program), so
only a path the user typed comes here: the command line and the Python API, never a server."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

from tilescope.compiler.errors import ModelLoadError
from tilescope.compiler.frontend.mlir_import import ImportedModel

_BUILD = re.compile(r"^(?P<path>.+\.py):(?P<function>[A-Za-z_]\w*)$")


def is_torch_ref(ref: str) -> bool:
    """Whether `ref` names a PyTorch model: `model.pt2` or `model.py:build`."""
    return ref.endswith(".pt2") or _BUILD.match(ref) is not None


def load_torch_ref(ref: str, dtype: str | None = None) -> ImportedModel:
    """The model `ref` names, imported (see is_torch_ref)."""
    from tilescope.compiler.frontend.torch_models import import_pt2, import_torch

    if ref.endswith(".pt2"):
        return _named(import_pt2(Path(ref).expanduser(), dtype), ref)
    match = _BUILD.match(ref)
    if match is None:
        raise ModelLoadError(f"{ref}: not a PyTorch model reference (model.pt2 or model.py:build)")
    built = _call_build(Path(match.group("path")).expanduser(), match.group("function"), ref)
    module, inputs = built if isinstance(built, tuple) and len(built) == 2 else (built, None)
    return _named(import_torch(module, inputs, dtype), ref)


def _call_build(path: Path, function: str, ref: str) -> object:
    """`function()` of the Python file at `path`: the user's own code, run as they asked."""
    if not path.is_file():
        raise ModelLoadError(f"{path}: no such file")
    spec = importlib.util.spec_from_file_location(f"tilescope_user_model_{abs(hash(str(path)))}", path)
    if spec is None or spec.loader is None:
        raise ModelLoadError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))  # the file's own imports of its neighbours
    sys.modules[spec.name] = module  # as an import registers it (dataclasses look themselves up there)
    try:
        spec.loader.exec_module(module)
        build = getattr(module, function, None)
        if not callable(build):
            raise ModelLoadError(f"{ref}: {path.name} has no function {function}()")
        return build()
    except ModelLoadError:
        raise
    except Exception as err:  # the user's code failed: its own message, on one line
        first = (str(err).strip().splitlines() or [type(err).__name__])[0][:300]
        raise ModelLoadError(f"{ref}: {type(err).__name__}: {first}") from None
    finally:
        sys.modules.pop(spec.name, None)
        if str(path.parent) in sys.path:  # unless the user's code took it off itself
            sys.path.remove(str(path.parent))


def _named(model: ImportedModel, ref: str) -> ImportedModel:
    """`model` under the reference the user typed: its runs are stored under it."""
    model.ref = ref
    return model
