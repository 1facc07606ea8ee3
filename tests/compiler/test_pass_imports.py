"""No pass imports another: what two passes share lives in a module outside compiler/passes, so a
pass can change, move in the pipeline or go without touching the others."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..test_layers import _imports

PASSES = Path(__file__).resolve().parents[2] / "compiler" / "passes"


@pytest.mark.parametrize("path", sorted(PASSES.glob("*.py")), ids=lambda p: p.name)
def test_a_pass_imports_no_other_pass(path):
    others = {f"tilescope.compiler.passes.{p.stem}" for p in PASSES.glob("*.py") if p != path and p.stem != "__init__"}
    found = (
        _imports(path) & others
    )  # `from .x import y`, `from . import x` and `import tilescope.compiler.passes.x` alike
    assert not found, f"{path.name} imports {sorted(found)}"


OUTSIDE = ("app", "overrides", "perfdb")  # compiler/pipeline assembles the passes; nothing else names one


@pytest.mark.parametrize("package", OUTSIDE)
def test_nothing_outside_the_compiler_imports_a_pass(package):
    """The app and the override tools reach what a pass computes through the compiler's analyses
    (compiler/analysis), the pipeline's options and its results, never a pass's helpers."""
    root = PASSES.parents[1] / package
    found = [
        f"{path.relative_to(root.parent)} imports {module}"
        for path in sorted(root.rglob("*.py"))
        for module in sorted(_imports(path))
        if module.startswith("tilescope.compiler.passes")
    ]
    assert not found, found
