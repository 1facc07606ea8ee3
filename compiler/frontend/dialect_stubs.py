"""Empty Python modules for the dialects the MLIR bindings ship none for.

The bindings look for a Python module per dialect each time they wrap an op; for dialects they
ship none for (ttir, stablehlo, ...) that is a failed import per op. A finder placed after every
other answers such a lookup with one empty module per namespace, so it succeeds once and for
all; ops stay generic OpViews. It answers when asked rather than from a scan of the text, which
cost more than importing a small model.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types

_DIALECT_PACKAGE = "iree.compiler.dialects"
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
_others: set[str] = set()  # namespaces stubbed that are not in _KNOWN_DIALECTS


class _EmptyModule(importlib.abc.Loader):
    def create_module(self, spec):
        return types.ModuleType(spec.name)

    def exec_module(self, module) -> None:
        pass


class _DialectStubs(importlib.abc.MetaPathFinder):
    """An empty module for `iree.compiler.dialects.NAME` when no other finder has one."""

    def find_spec(self, fullname: str, path, target=None):
        package, _, namespace = fullname.rpartition(".")
        if package != _DIALECT_PACKAGE or not namespace.isidentifier():
            return None
        if namespace not in _KNOWN_DIALECTS and namespace not in _others:
            if len(_others) >= MAX_OTHER_STUBS:
                return None  # an unknown dialect past the cap only costs its failed imports
            _others.add(namespace)
        return importlib.machinery.ModuleSpec(fullname, _EmptyModule())


def install() -> None:
    """Answer the bindings' dialect lookups from now on (once per process)."""
    if not any(isinstance(finder, _DialectStubs) for finder in sys.meta_path):
        sys.meta_path.append(_DialectStubs())  # last: the bindings' own dialect modules first
