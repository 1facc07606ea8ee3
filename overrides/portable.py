"""What tt-mlir's and TT-Explorer's formats carry of an override: its output layout only.

Fidelity, blocking, sub-blocks, double buffering, tile shapes and per-operand or per-result
layouts are tilescope's; written in those formats they would be misread or refused.
"""

from __future__ import annotations

from tilescope.compiler.pipeline.op_override import OpOverride

PORTABLE = ("grid", "memory", "memory_layout", "layout", "dtype")


def portable(ov: OpOverride) -> OpOverride | None:
    """What tt-mlir and TT-Explorer read of `ov`, or None when that is nothing."""
    if ov.operand is not None or ov.result is not None:
        return None
    kept = OpOverride(ov.op, **{name: getattr(ov, name) for name in PORTABLE})
    return kept if any(getattr(kept, name) is not None for name in PORTABLE) else None
