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
