"""A measured op as a one-op model, being written: the report op's non-empty inputs as arguments,
the op as the kind its code names over them, and the overrides that lay it out as the report
recorded (replay_layouts.py). Element types MLIR cannot spell (bfp8, bfp4) are written as bf16 and
laid out in their own dtype by the overrides.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tilescope.compiler.frontend.zoo.builder import MlirBuilder
from tilescope.compiler.pipeline.op_override import OpOverride
from tilescope.compiler.profiles.replay_layouts import OP, placement
from tilescope.compiler.profiles.report import ReportOp
from tilescope.compiler.targets.chip import Target

# element types an MLIR tensor type spells as tilescope does; others are written as bf16
MLIR_DTYPES = frozenset({"bf16", "f16", "f32", "f64", "i1", "i8", "i16", "i32", "i64", "ui8", "ui16", "ui32"})
STAND_IN_DTYPE = "bf16"


class NotBuilt(Exception):
    """Why a measured op is not built: the message is the reason, one line."""


@dataclass(frozen=True)
class Built:
    """A measured op as a one-op model: its MLIR text, the overrides that lay it out, and what the
    build could not say as the report did."""

    text: str
    overrides: tuple[OpOverride, ...]
    notes: tuple[str, ...] = ()


def mlir_dtype(dtype: str) -> str:
    return dtype if dtype in MLIR_DTYPES else STAND_IN_DTYPE


class OneOp:
    """The one-op model being written. Its operands are the report op's non-empty inputs (an empty
    one, with a zero dimension, holds no data and is left out), each an argument named by its
    index (in0, in1, ...) once the op reads it."""

    def __init__(self, op: ReportOp) -> None:
        self.op = op
        self.builder = MlirBuilder()
        self.inputs = tuple(i for i, t in enumerate(op.inputs) if t.elements)
        self.args: dict[int, str] = {}

    def arg(self, index: int) -> str:
        if index not in self.args:
            t = self.op.inputs[index]
            self.args[index] = self.builder.arg(f"in{index}", t.shape, mlir_dtype(t.dtype))
        return self.args[index]

    def results(self) -> list[tuple[tuple[int, ...], str]]:
        """The report's non-empty outputs as (shape, MLIR dtype)."""
        found = [(t.shape, mlir_dtype(t.dtype)) for t in self.op.outputs if t.elements]
        if not found:
            raise NotBuilt("no result holds data (every output has a zero dimension)")
        return found

    def emit(self, kind: str, operands: Sequence[int], props: str = "", results=None) -> list[str]:
        """`kind` over the arguments of inputs `operands`, giving `results` (the report's outputs)."""
        values = [self.arg(i) for i in operands]
        return self.builder.emit(kind, values, results if results is not None else self.results(), OP, props)

    def done(
        self, kind: str, outputs: list[str], operands: Sequence[int], target: Target, notes=(), results=None
    ) -> Built:
        """The model giving `outputs`, laid out as the report's inputs `operands` and outputs
        `results` (every non-empty one by default) were."""
        laid = placement(self.op, kind, tuple(operands), target, results)
        return Built(self.builder.text(outputs), laid.overrides, (*notes, *laid.notes))
