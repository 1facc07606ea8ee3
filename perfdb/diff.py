"""Run b against run a, op by op, matched by stable op name: the records of what a diff holds, and
diff_runs, which reads them from the database.

Durations are summed per name (should a name occur twice), parameters taken from its first record;
a ratio is taken of the sums, never summed or averaged itself. Op times are one device's in either
run: an op's delta is what each device gains.

The records made once per op are slotted and not frozen: a diff of two 100k-op runs makes 100k of
them, and a frozen dataclass is made five times slower (slower than the dicts they replace).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Generic, TypeVar

from sqlalchemy import Text, cast, select
from sqlalchemy.orm import Session

from tilescope.compiler.ir.opset import COLLECTIVES

from tilescope.perfdb.meshes import CollectiveOp, RunMesh, collectives_only_in, devices_warning, run_mesh
from tilescope.perfdb.op_changes import ParamChange, RecordedParams, changes
from tilescope.perfdb.runs import get_run, load_ops
from tilescope.perfdb.schema import OpRecord, Run

TOP = 5  # names in top_regressions and top_improvements
RUN_SETTINGS = ("dispatch", "policy", "l1_usage_cap")  # what a run was compiled and simulated under, besides overrides

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

    name: str
    kind: str
    a_ns: float
    b_ns: float
    delta_ns: float
    ratio: float | None  # b / a; None when a took no time
    changes: tuple[ParamChange, ...]  # what the op records say changed (perfdb.op_changes)


@dataclass(slots=True)
class OnlyOp:
    """An op only one run has (a `to_layout` an override inserted)."""

    name: str
    kind: str
    ns: float


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
    # why the comparison may mislead: other models (or two versions of one model's source), other
    # targets (or two versions of one target's description), other meshes. Op names match whatever the ops are.
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
    removed: tuple[OnlyOp, ...]  # in execution order; the collectives apart, in `collectives`
    inserted: tuple[OnlyOp, ...]
    collectives: OnlyIn[CollectiveOp]  # those a mesh of more devices needs, in execution order
    moved_to_load: tuple[MovedOp, ...]  # in the order of run a's step
    moved_into_step: tuple[MovedOp, ...]  # in the order of run b's step
    overrides: Sides[tuple[str, ...]]  # the override items only that run was compiled with, in its order
    top_regressions: tuple[str, ...]  # the names of the TOP ops that got slower
    top_improvements: tuple[str, ...]  # and faster

    def to_json(self) -> dict:
        return asdict(self)

    @property
    def ops_added(self) -> int:
        """How many more ops b's step issues than a's (fewer when negative)."""
        only = len(self.inserted) - len(self.removed) + len(self.collectives.inserted) - len(self.collectives.removed)
        return only + len(self.moved_into_step) - len(self.moved_to_load)


@dataclass(slots=True)
class _StepOp:
    """The records of one op name in a run's step, as they are read."""

    kind: str
    ns: float  # device time, summed over the name's records
    params: RecordedParams  # of its first record


def diff_runs(session: Session, a_id: int, b_id: int) -> RunDiff:
    """Run `b` against run `a`, op by op, matched by stable op name."""
    runs = Sides(get_run(session, a_id), get_run(session, b_id))
    a, b = _step_ops(session, a_id), _step_ops(session, b_id)
    load = Sides(_load_by_name(runs.a), _load_by_name(runs.b))
    times = Sides(_times(runs.a), _times(runs.b))
    meshes = Sides(run_mesh(runs.a), run_mesh(runs.b))
    removed = [n for n in a if n not in b and n not in load.b]
    inserted = [n for n in b if n not in a and n not in load.a]
    on_devices = devices_warning(meshes.a, meshes.b)
    ops = _matched(a, b)
    return RunDiff(
        a=a_id,
        b=b_id,
        warnings=(*_warnings(runs.a, runs.b), *([on_devices] if on_devices else [])),
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
        ops=ops,
        meshes=meshes,
        removed=tuple(OnlyOp(n, a[n].kind, a[n].ns) for n in removed if a[n].kind not in COLLECTIVES),
        inserted=tuple(OnlyOp(n, b[n].kind, b[n].ns) for n in inserted if b[n].kind not in COLLECTIVES),
        collectives=OnlyIn(
            collectives_only_in(session, a_id, removed, meshes.a),
            collectives_only_in(session, b_id, inserted, meshes.b),
        ),
        moved_to_load=_moved(a, b, load.b),
        moved_into_step=_moved(b, a, load.a),
        overrides=Sides(_only(runs.a, runs.b), _only(runs.b, runs.a)),
        top_regressions=tuple(op.name for op in sorted(ops, key=_slowest) if op.delta_ns > 0)[:TOP],
        top_improvements=tuple(op.name for op in sorted(ops, key=_fastest) if op.delta_ns < 0)[:TOP],
    )


def _matched(a: dict[str, _StepOp], b: dict[str, _StepOp]) -> tuple[OpDelta, ...]:
    """The ops of both runs, by |delta| descending."""
    ops = []
    for name in a.keys() & b.keys():
        x, y = a[name], b[name]
        found = changes(x.params, y.params) if x.params != y.params else ()
        ops.append(OpDelta(name, y.kind, x.ns, y.ns, y.ns - x.ns, y.ns / x.ns if x.ns else None, found))
    return tuple(sorted(ops, key=lambda op: (-abs(op.delta_ns), op.name)))


def _slowest(op: OpDelta) -> tuple[float, str]:
    return (-op.delta_ns, op.name)


def _fastest(op: OpDelta) -> tuple[float, str]:
    return (op.delta_ns, op.name)


def _times(run: Run) -> RunTimes:
    return RunTimes(run.total_ns, run.device_ns, run.total_ns - run.device_ns, run.load_ns, len(run.load_ops))


def _moved(step: dict[str, _StepOp], other: dict[str, _StepOp], loaded: dict[str, float]) -> tuple[MovedOp, ...]:
    """The ops of one run's step that the other run does once at load time (`loaded`) instead."""
    return tuple(MovedOp(n, op.kind, op.ns, loaded[n]) for n, op in step.items() if n not in other and n in loaded)


def _only(run: Run, other: Run) -> tuple[str, ...]:
    """The override items `run` was compiled with and `other` was not, in its order."""
    theirs = set(other.overrides)
    return tuple(item for item in run.overrides if item not in theirs)


def _warnings(a: Run, b: Run) -> list[str]:
    """What makes comparing two runs op by op suspect: other models (names may match other ops) or
    other machines (the same op costs differently)."""
    warnings = []
    if a.model_id != b.model_id:
        hashes = f"source sha256 {a.model.source_hash[:12]} vs {b.model.source_hash[:12]}"
        if a.model_ref == b.model_ref:
            warnings.append(f"the source of {a.model_ref} differs between run {a.id} and run {b.id} ({hashes})")
        else:
            warnings.append(
                f"different models: run {a.id} is {a.model_ref}, run {b.id} is {b.model_ref} ({hashes}); "
                "ops match by name only"
            )
    if a.target.name != b.target.name:
        warnings.append(f"different targets: run {a.id} ran on {a.target.name}, run {b.id} on {b.target.name}")
    # runs stored before target descriptions were kept have none to compare
    elif a.target.description and b.target.description and a.target.description_hash != b.target.description_hash:
        warnings.append(
            f"target {a.target.name} differs between run {a.id} and run {b.id} "
            f"(description sha256 {a.target.description_hash[:12]} vs {b.target.description_hash[:12]})"
        )
    return warnings


def _load_by_name(run: Run) -> dict[str, float]:
    """name -> load time of a run's load ops, summed should a name occur twice."""
    found: dict[str, float] = {}
    for op in load_ops(run):
        found[op.name] = found.get(op.name, 0.0) + op.duration_ns
    return found


def _step_ops(session: Session, run_id: int) -> dict[str, _StepOp]:
    """name -> the op's records in the run's step, in execution order. The tensors come as JSON
    text, decoded only for the ops whose records differ: decoding every op's took a diff of two
    10k-op runs from 0.2 to 0.8 s."""
    rows = session.execute(
        select(
            OpRecord.name,
            OpRecord.kind,
            OpRecord.duration_ns,
            OpRecord.memory,
            OpRecord.grid,
            OpRecord.fidelity,
            cast(OpRecord.tensors, Text),
        )
        .where(OpRecord.run_id == run_id)
        .order_by(OpRecord.start_ns, OpRecord.id)
    )
    ops: dict[str, _StepOp] = {}
    for name, kind, duration, *params in rows:
        known = ops.get(name)
        if known is not None:
            known.ns += duration
        else:
            ops[name] = _StepOp(kind, duration, RecordedParams(*params))
    return ops
