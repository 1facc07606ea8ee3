"""Empty Python modules for the dialects the MLIR bindings ship none for.

The bindings look for a Python module per dialect each time they wrap an op; for dialects they
ship none for (ttir, stablehlo, ...) that is a failed import per op. One empty module per such
namespace makes the lookup succeed once and for all; ops stay generic OpViews.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import types

_DIALECT_PACKAGE = "iree.compiler.dialects"
# A dialect namespace: quoted generic op names, or a bare `dialect.op ` not inside a longer dotted
# word. Possessive quantifiers and the look-behind make the scan linear: an op name in a long
# dotted loc name ("a.a.a...") is tried from its first word only, and never backtracked into.
_OP_NAMESPACES = re.compile(r'"([A-Za-z_][\w$]*+)\.[\w.$]++"\s*+\(|(?<![\w.$])([a-z_]\w*+)\.[a-z_][\w.]*+\s')
# Dialects real models use, stubbed whenever seen; any other name only while fewer than
# MAX_OTHER_STUBS have been, so a server fed random input keeps sys.modules bounded.
_KNOWN_DIALECTS = frozenset(
    {
        "ttir",
        "ttnn",
        "ttcore",
        "ttkernel",
        "ttmetal",
        "d2m",
        "stablehlo",
        "mhlo",
        "chlo",
        "vhlo",
        "sdy",
        "jax",
        "tosa",
        "linalg",
        "tensor",
        "arith",
        "math",
        "func",
        "builtin",
        "cf",
        "scf",
        "memref",
        "bufferization",
        "quant",
        "ml_program",
        "shape",
        "emitc",
        "tt",
    }
)
MAX_OTHER_STUBS = 64
_stubbed: set[str] = set()  # namespaces looked up, stubbed or not
_others: set[str] = set()  # those of them not in _KNOWN_DIALECTS


def stub_unknown_dialect_modules(text: str) -> None:
    """The bindings look for a Python module per dialect each time they wrap an op; for dialects
    they ship none for (ttir, stablehlo, ...) that is a failed import per op. One empty module per
    such namespace makes the lookup succeed once and for all; ops stay generic OpViews."""
    for match in _OP_NAMESPACES.finditer(text[:200_000]):
        namespace = match.group(1) or match.group(2)
        if namespace in _stubbed or not namespace.isidentifier():
            continue
        if namespace not in _KNOWN_DIALECTS:
            if len(_others) >= MAX_OTHER_STUBS:
                continue  # an unknown dialect past the cap only costs its failed imports
            _others.add(namespace)
        _stubbed.add(namespace)
        module_name = f"{_DIALECT_PACKAGE}.{namespace}"
        if module_name in sys.modules:
            continue
        try:
            found = importlib.util.find_spec(module_name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            sys.modules[module_name] = types.ModuleType(module_name)
