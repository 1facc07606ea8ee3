"""Resolve a model reference (a file path or a zoo name) to an imported model."""

from __future__ import annotations

from pathlib import Path

from tilescope.compiler.frontend import zoo
from tilescope.compiler.errors import ModelLoadError
from tilescope.compiler.frontend.mlir_import import ImportedModel, import_mlir, op_count

EXAMPLES = Path(__file__).parent / "examples"


def example_names() -> list[str]:
    """MLIR files shipped with tilescope, loadable by file name."""
    return sorted(p.name for p in EXAMPLES.glob("*.mlir"))


def split_function(ref: str) -> tuple[str, str | None]:
    """'model.mlir#gather_3' -> ('model.mlir', 'gather_3'): a file reference may pick its function."""
    if not zoo.is_zoo(ref) and "#" in ref:
        path, _, function = ref.rpartition("#")
        if function and not Path(ref).exists() and not (EXAMPLES / ref).exists():
            return path, function
    return ref, None


def read_source(ref: str) -> str:
    """The MLIR text behind a reference."""
    if zoo.is_zoo(ref):
        return zoo.generate(ref)
    file_ref = split_function(ref)[0]
    path = Path(file_ref).expanduser()
    if not path.exists() and (EXAMPLES / file_ref).exists():
        path = EXAMPLES / file_ref
    if not path.exists():
        raise ModelLoadError(f"{path}: no such file")
    if path.is_dir():
        raise ModelLoadError(f"{ref}: is a directory, expected an .mlir file")
    try:
        return path.read_text()
    except UnicodeDecodeError:
        raise ModelLoadError(f"{ref}: not a text file (MLIR is UTF-8 text)") from None
    except OSError as err:
        raise ModelLoadError(f"{ref}: cannot read: {err.strerror}") from None


def load_model(ref: str, text: str | None = None) -> ImportedModel:
    """Import `ref`; pass `text` to import stored source without touching the file system."""
    source = read_source(ref) if text is None else text
    file_ref, function = split_function(ref)
    name = ref if zoo.is_zoo(ref) else Path(file_ref).name.removesuffix(".mlir") + (f"#{function}" if function else "")
    return import_mlir(source, ref, name, function)


def count_ops(ref: str, text: str) -> int:
    """The ops `load_model(ref, text)` would import, counted at a fraction of its cost."""
    if zoo.is_zoo(ref):
        return zoo.op_count(ref)
    return op_count(text, ref, split_function(ref)[1])
