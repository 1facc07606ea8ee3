"""What a user asks of one op: the compiler's input for tuning.

The `overrides` package reads and writes the formats users exchange (tt-mlir option strings and
friends) and turns them into these records. The partition pass applies their shardings, the layout
pass the rest, and the layout pass reports each override's outcome, the partition's included.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tilescope.compiler.sharding.mesh import Sharding

APPLIED, ADJUSTED, REJECTED = "applied", "adjusted", "rejected"


@dataclass(frozen=True)
class OpOverride:
    """Output layout of one op, as in tt-mlir's `override-output-layout`. None = keep the default.

    With `operand` set it is the layout the op reads that input in (a `to_layout` converts it);
    with `result` set it lays out that output only (else every output)."""

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
    tile: tuple[int, int] | None = None  # tile rows x cols, e.g. 1x32 for a one-row activation
    # a data-tiled matmul's inner tiles M0 x N0 x K0 (materialize_encodings.py), e.g. 16x16x1
    inner_tiles: tuple[int, int, int] | None = None
    # whether the graph's fusions take the op (passes/fuse_heads.py): True fuses where the compiler
    # would not by default, False keeps the op as it is; None, the compiler's default
    fuse: bool | None = None
    # over a mesh of devices: how the op reads input `operand`, or gives its result(s); no
    # dimensions means whole on every device
    sharding: Sharding | None = None
    operand: int | None = None
    result: int | None = None
    spec: str = ""  # as the user wrote it, for reports

    @property
    def key(self) -> tuple[str, int | None, int | None]:
        """What the override lays out; a set holds one override per key."""
        return self.op, self.operand, self.result

    @property
    def fuses(self) -> bool:
        """Whether it asks the graph level's fusions for something (the graph passes' part)."""
        return self.fuse is not None and self.operand is None and self.result is None

    @property
    def lays_out(self) -> bool:
        """Whether it sets a layout or kernel parameter (the layout pass's part)."""
        return any(getattr(self, name) is not None for name in LAYOUT_FIELDS)

    @property
    def target(self) -> str:
        """`op`, `op operand 1` or `op result 0`, for messages."""
        return f"{self.op} {self.part}" if self.part else self.op

    @property
    def part(self) -> str:
        """`operand 1`, `result 0`, or '' for the op's results."""
        if self.operand is not None:
            return f"operand {self.operand}"
        if self.result is not None:
            return f"result {self.result}"
        return ""


LAYOUT_FIELDS = (
    "grid",
    "memory",
    "memory_layout",
    "layout",
    "dtype",
    "fidelity",
    "block",
    "subblock",
    "double_buffer",
    "tile",
    "inner_tiles",
)


def fusion_requests(overrides: Iterable[OpOverride]) -> tuple[tuple[str, bool], ...]:
    """The graph level's part of `overrides`: each op a fusion is asked of or refused, sorted (what a
    graph level made with them is the same for)."""
    return tuple(sorted({ov.op: ov.fuse for ov in overrides if ov.fuses}.items()))


def sharding_requests(overrides: Iterable[OpOverride]) -> tuple[OpOverride, ...]:
    """The partition pass's part of `overrides`: each sharding and the op part it names, in order
    (what a partition level made with them is the same for)."""
    return tuple(
        OpOverride(ov.op, sharding=ov.sharding, operand=ov.operand, result=ov.result)
        for ov in overrides
        if ov.sharding is not None
    )


NAME_SHOWN = 80  # characters of a name in a message: names taken from a model's locations run to 512


def short_name(name: str) -> str:
    """`name` for a message, cut in its middle past NAME_SHOWN characters: names of a model's ops
    differ mostly at their ends (a layer's index, a hash the importer added)."""
    if len(name) <= NAME_SHOWN:
        return name
    kept = (NAME_SHOWN - 3) // 2
    return f"{name[:kept]}...{name[-kept:]}"


@dataclass(frozen=True)
class OverrideOutcome:
    op: str
    spec: str
    status: str  # applied | adjusted | rejected
    reason: str = ""
    operand: int | None = None  # the override laid out this input of the op

    def as_dict(self) -> dict[str, str]:
        return {"op": self.op, "spec": self.spec, "status": self.status, "reason": self.reason}
