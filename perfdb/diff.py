"""Run b against run a, op by op: the records of what a diff holds, and diff_runs, which reads them
from the database. Ops are matched by stable op name, or, where names are no identity across the two
runs (measured reports name ops by op code and count), aligned as sequences (perfdb.diff_ops).

Matched by name, durations are summed per name (should a name occur twice), parameters taken from
its first record; a ratio is taken of the sums, never summed or averaged itself. Op times are one
device's in either run: an op's delta is what each device gains.

The records made once per op are slotted and not frozen: a diff of two 100k-op runs makes 100k of
them, and a frozen dataclass is made five times slower (slower than the dicts they replace).
"""

from __future__ import annotations

import math

import heapq
from dataclasses import asdict, dataclass
from typing import Generic, TypeVar

from sqlalchemy.orm import Session

from tilescope.compiler.ir.opset import COLLECTIVES

from tilescope.perfdb.diff_ops import BY_NAME, StepOp, collectives_only_in, named_by_position, pair_ops, read_step_ops
from tilescope.perfdb.diff_warnings import run_warnings
from tilescope.perfdb.meshes import CollectiveOp, RunMesh, devices_warning, run_mesh
from tilescope.perfdb.op_changes import ParamChange, RecordedParams, changes
from tilescope.perfdb.runs import get_run, load_ops
from tilescope.perfdb.schema import Run

TOP = 5  # names in top_regressions and top_improvements
# what a run was compiled and simulated under, besides overrides
RUN_SETTINGS = ("dispatch", "policy", "l1_usage_cap", "data_tiling")

T = TypeVar("T")


@dataclass(frozen=True)
class Sides(Generic[T]):
    """One thing of each run compared: run a's and run b's."""

    a: T
    b: T


@dataclass(frozen=True)
class OnlyIn(Generic[T]):
    removed: tuple[T, ...]  # only in run a
    inserted: tuple[T, ...]  # only in run b


@dataclass(frozen=True)
class SettingChange:
    """A run setting (one of RUN_SETTINGS) that differs: a layout policy places tensors before any
    override, and dispatch moves the total, not the ops."""

    setting: str
    a: str
    b: str


@dataclass(frozen=True)
class RunTimes:
    total_ns: float
    device_ns: float  # the ops' device time (Run.device_ns)
    host_ns: float  # the rest of the total: the device idle, mostly waiting for the host to issue ops
    load_ns: float  # the work done once per model load (the compiler's const-eval): not in the total
    load_ops: int  # how many ops that work is


@dataclass(slots=True)
class OpDelta:
    """An op of both runs."""

    name: str  # run a's (with its device past the first: perfdb.diff_ops)
    kind: str
    a_ns: float
    b_ns: float
    delta_ns: float
    ratio: float | None  # b / a; None when a took no time
    changes: tuple[ParamChange, ...]  # what the op records say changed (perfdb.op_changes)
    b_name: str = ""  # run b's name of it, when the runs' ops were aligned as sequences; else ""
    device: int = 0
    # the band of delta_ns from the model's error: both predictions' bands, taken as independent
    # (root of the sum of squares); a measured side adds none. None: neither side has one
    error_ns: float | None = None

    @property
    def within_error(self) -> bool:
        """Whether the change is no larger than the model's error: it may not be real."""
        return self.error_ns is not None and abs(self.delta_ns) <= self.error_ns


@dataclass(slots=True)
class OnlyOp:
    """An op only one run has (a `to_layout` an override inserted, an op a new version added)."""

    name: str
    kind: str
    ns: float
    device: int = 0


@dataclass(slots=True)
class MovedOp:
    """An op one run does in its step and the other once at load time instead: neither removed nor
    inserted."""

    name: str
    kind: str
    step_ns: float
    load_ns: float


@dataclass(frozen=True)
class RunDiff:
    """Run b against run a. Its fields, in this order, are the keys of `tilescope diff --json`."""

    a: int
    b: int
    kinds: Sides[str]  # each run's: simulated or measured
    alignment: str  # how ops were paired: "name" (stable names) or "sequence" (perfdb.diff_ops)
    # why the comparison may mislead: other models (or two versions of one model's source), other
    # targets or chips (or two versions of one target's description), other meshes, a prediction
    # against a measurement. Op names match whatever the ops are.
    warnings: tuple[str, ...]
    settings: tuple[SettingChange, ...]
    # b's minus a's. The total splits into the device's and the host's: on a host-dispatch-bound run
    # an op that gets faster mostly turns into idle time, so the total moves far less than the ops.
    # The device's is the per-op deltas plus inserted minus removed ops, minus the ops moved to load
    # time plus those moved into the step.
    total_delta_ns: float
    device_delta_ns: float
    host_delta_ns: float
    load_delta_ns: float
    times: Sides[RunTimes]
    ops: tuple[OpDelta, ...]  # by |delta_ns| descending
    meshes: Sides[RunMesh]
    removed: tuple[OnlyOp, ...]  # in execution order (device by device); the collectives apart, in `collectives`
    inserted: tuple[OnlyOp, ...]
    collectives: OnlyIn[CollectiveOp]  # only one run has (a mesh of more devices needs them), in execution order
    moved_to_load: tuple[MovedOp, ...]  # in the order of run a's step
    moved_into_step: tuple[MovedOp, ...]  # in the order of run b's step
    overrides: Sides[tuple[str, ...]]  # the override items only that run was compiled with, in its order
    top_regressions: tuple[str, ...]  # the names of the TOP ops that got slower
    top_improvements: tuple[str, ...]  # and faster

    def to_json(self) -> dict:
        out = asdict(self)
        for op, shown in zip(self.ops, out["ops"]):
            shown["within_error"] = op.within_error
        return out

    @property
    def ops_added(self) -> int:
        """How many more ops b's step issues than a's (fewer when negative)."""
        only = len(self.inserted) - len(self.removed) + len(self.collectives.inserted) - len(self.collectives.removed)
        return only + len(self.moved_into_step) - len(self.moved_to_load)


def diff_runs(session: Session, a_id: int, b_id: int) -> RunDiff:
    """Run `b` against run `a`, op by op: matched by stable op name, or aligned as sequences when
    the runs are of other models and either names its ops by position (perfdb.diff_ops)."""
    runs = Sides(get_run(session, a_id), get_run(session, b_id))
    ops = Sides(read_step_ops(session, a_id), read_step_ops(session, b_id))
    positional = (named_by_position(runs.a, ops.a), named_by_position(runs.b, ops.b))
    paired = pair_ops(ops.a, ops.b, runs.a.model_id != runs.b.model_id and any(positional), all(positional))
    by_name = paired.how == BY_NAME
    # ops done once at load time instead of in the step: by name only (a measured run has none)
    load = Sides(_load_by_name(runs.a), _load_by_name(runs.b)) if by_name else Sides({}, {})
    removed = [op for op in paired.removed if op.name not in load.b]
    inserted = [op for op in paired.inserted if op.name not in load.a]
    times = Sides(_times(runs.a), _times(runs.b))
    meshes = Sides(run_mesh(runs.a), run_mesh(runs.b))
    on_devices = devices_warning(meshes.a, meshes.b)
    matched = _matched(paired.pairs, by_name)
    return RunDiff(
        a=a_id,
        b=b_id,
        kinds=Sides(runs.a.kind, runs.b.kind),
        alignment=paired.how,
        warnings=(*run_warnings(runs.a, runs.b, paired.how), *([on_devices] if on_devices else [])),
        settings=tuple(
            SettingChange(name, str(x), str(y))
            for name in RUN_SETTINGS
            if (x := getattr(runs.a, name)) != (y := getattr(runs.b, name))
        ),
        total_delta_ns=times.b.total_ns - times.a.total_ns,
        device_delta_ns=times.b.device_ns - times.a.device_ns,
        host_delta_ns=times.b.host_ns - times.a.host_ns,
        load_delta_ns=times.b.load_ns - times.a.load_ns,
        times=times,
        ops=matched,
        meshes=meshes,
        removed=tuple(OnlyOp(op.label, op.kind, op.ns, op.device) for op in removed if op.kind not in COLLECTIVES),
        inserted=tuple(OnlyOp(op.label, op.kind, op.ns, op.device) for op in inserted if op.kind not in COLLECTIVES),
        collectives=OnlyIn(
            collectives_only_in(session, a_id, removed, meshes.a),
            collectives_only_in(session, b_id, inserted, meshes.b),
        ),
        moved_to_load=_moved(paired.removed, load.b),
        moved_into_step=_moved(paired.inserted, load.a),
        overrides=Sides(_only(runs.a, runs.b), _only(runs.b, runs.a)),
        top_regressions=tuple(op.name for op in heapq.nsmallest(TOP, matched, key=_slowest) if op.delta_ns > 0),
        top_improvements=tuple(op.name for op in heapq.nsmallest(TOP, matched, key=_fastest) if op.delta_ns < 0),
    )


def _matched(pairs: tuple[tuple[StepOp, StepOp], ...], by_name: bool) -> tuple[OpDelta, ...]:
    """The ops of both runs, by |delta| descending."""
    ops = []
    for x, y in pairs:
        found = (
            changes(RecordedParams.recorded(*x.params), RecordedParams.recorded(*y.params))
            if x.params != y.params
            else ()
        )
        ratio = y.ns / x.ns if x.ns else None
        b_name = "" if by_name else y.label
        error = None if x.error_ns is None and y.error_ns is None else math.hypot(x.error_ns or 0.0, y.error_ns or 0.0)
        ops.append(OpDelta(x.label, y.kind, x.ns, y.ns, y.ns - x.ns, ratio, found, b_name, x.device, error))
    return tuple(sorted(ops, key=lambda op: (-abs(op.delta_ns), op.name)))


def _slowest(op: OpDelta) -> tuple[float, str]:
    return (-op.delta_ns, op.name)


def _fastest(op: OpDelta) -> tuple[float, str]:
    return (op.delta_ns, op.name)


def _times(run: Run) -> RunTimes:
    return RunTimes(run.total_ns, run.device_ns, run.total_ns - run.device_ns, run.load_ns, len(run.load_ops))


def _moved(only: tuple[StepOp, ...], loaded: dict[str, float]) -> tuple[MovedOp, ...]:
    """The ops only one run's step has that the other run does once at load time (`loaded`) instead."""
    return tuple(MovedOp(op.label, op.kind, op.ns, loaded[op.name]) for op in only if op.name in loaded)


def _only(run: Run, other: Run) -> tuple[str, ...]:
    """The override items `run` was compiled with and `other` was not, in its order."""
    theirs = set(other.overrides)
    return tuple(item for item in run.overrides if item not in theirs)


def _load_by_name(run: Run) -> dict[str, float]:
    """name -> load time of a run's load ops, summed should a name occur twice."""
    found: dict[str, float] = {}
    for op in load_ops(run):
        found[op.name] = found.get(op.name, 0.0) + op.duration_ns
    return found
