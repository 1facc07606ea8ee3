"""What a user asks of one op: the compiler's input for tuning.

The `overrides` package reads and writes the formats users exchange (tt-mlir option strings and
friends) and turns them into these records; the layout pass applies them and reports each outcome.
"""

from __future__ import annotations

from dataclasses import dataclass

APPLIED, ADJUSTED, REJECTED = "applied", "adjusted", "rejected"


@dataclass(frozen=True)
class OpOverride:
    """Output layout of one op, as in tt-mlir's `override-output-layout`. None = keep the default."""

    op: str
    grid: tuple[int, int] | None = None
    memory: str | None = None
    memory_layout: str | None = None
    layout: str | None = None
    dtype: str | None = None
    fidelity: str | None = None  # math fidelity of the op's matrix work (lofi, hifi2, hifi3, hifi4)
    block: tuple[int, int, int] | None = None  # matmul pass: output tiles M x N, inner K step, per core
    subblock: tuple[int, int] | None = None  # matmul output sub-block h x w (tiles in destination registers)
    double_buffer: bool | None = None  # circular buffers hold two steps (overlap) or one
    spec: str = ""  # as the user wrote it, for reports


@dataclass(frozen=True)
class OverrideOutcome:
    op: str
    spec: str
    status: str  # applied | adjusted | rejected
    reason: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"op": self.op, "spec": self.spec, "status": self.status, "reason": self.reason}
