"""No pass imports another: what two passes share lives in a module outside compiler/passes, so a
pass can change, move in the pipeline or go without touching the others."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.import_graph import imports

PASSES = Path(__file__).resolve().parents[2] / "compiler" / "passes"


@pytest.mark.parametrize("path", sorted(PASSES.glob("*.py")), ids=lambda p: p.name)
def test_a_pass_imports_no_other_pass(path):
    others = {f"tilescope.compiler.passes.{p.stem}" for p in PASSES.glob("*.py") if p != path and p.stem != "__init__"}
    found = (
        imports(path) & others
    )  # `from .x import y`, `from . import x` and `import tilescope.compiler.passes.x` alike
    assert not found, f"{path.name} imports {sorted(found)}"


def test_the_app_imports_no_pass():
    """The app reaches what a pass computes through the compiler's analyses (compiler/analysis),
    the pipeline's options and its results, never a pass's helpers (compiler/pipeline assembles
    the passes; tests/compiler/test_imports.py keeps them from the override tools)."""
    app = PASSES.parents[1] / "app"
    found = [
        f"{path.relative_to(app.parent)} imports {module}"
        for path in sorted(app.rglob("*.py"))
        for module in sorted(imports(path))
        if module.startswith("tilescope.compiler.passes")
    ]
    assert not found, found
