"""One op of a report row, built and timed as the replay builds it, and targets with a constant
changed: the per-kind tests' common ground."""

from __future__ import annotations

from dataclasses import replace

from tilescope.compiler.ir.meta import KERNEL
from tilescope.compiler.profiles.ops_report import read_ops_report
from tilescope.compiler.profiles.replay import compiled_op, op_timing
from tilescope.compiler.targets.catalog import load_target

from tests.compiler.profiles.replay_reports import report_text

BLACKHOLE = load_target("blackhole_p150")
WORMHOLE = load_target("wormhole_n150")


def built(row: dict, kind: str, target=BLACKHOLE):
    """The one-op model of the report row's op, compiled to its kernel level."""
    (measured,) = read_ops_report(report_text(row), "r.csv").ops
    made = compiled_op(measured, kind, target)
    assert not isinstance(made, str), made
    return made[0]


def ns(row: dict, kind: str, target=BLACKHOLE) -> float:
    """The row's op's predicted duration."""
    return op_timing(built(row, kind, target), target)[0].duration_ns


def kernel_of(row: dict, kind: str, target=BLACKHOLE):
    """The kernel of the row's op: the model's last, after its operands are laid out."""
    return built(row, kind, target).ops[-1].meta[KERNEL]


def changed(target=BLACKHOLE, sfpu=None, **pipeline):
    """`target` with some of its pipeline constants or vector-unit costs changed."""
    out = replace(target, pipeline=replace(target.pipeline, **pipeline))
    return replace(out, sfpu_cycles={**target.sfpu_cycles, **sfpu}) if sfpu else out
