"""Which rows of measured reports a fit may see: half of the shapes, the other half held out.

A row goes with its shape (op code, operand and result shapes as the report padded them), so
every repetition of one op (each layer of a model) falls on one side: a fit never sees the shape
it is judged on. The side is a hash of the shape, so it is the same on every machine and in every
run, and a report added later does not move the rows of the others.
"""

from __future__ import annotations

import hashlib

from tilescope.compiler.profiles.report import ReportOp

FIT, HELD_OUT = "fit", "held out"


def shape_key(op: ReportOp) -> str:
    """What a row's side is decided by: its op code and its tensors' padded shapes."""
    shapes = ";".join("x".join(map(str, t.padded)) for t in (*op.inputs, *op.outputs))
    return f"{op.op_code}|{shapes}"


def side_of(op: ReportOp) -> str:
    """FIT or HELD_OUT, by the hash of the row's shape."""
    digest = hashlib.sha256(shape_key(op).encode()).digest()
    return FIT if digest[0] % 2 == 0 else HELD_OUT
