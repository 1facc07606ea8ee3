"""Run B against run A, op by op, for `tilescope diff A B` (app.cli.diff) and the app's Runs & diff tab;
and the lines both show of a diff."""

from __future__ import annotations

import math

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from sqlalchemy.orm import Session

from tilescope.compiler.pipeline.op_override import REJECTED
from tilescope.overrides import format_item, format_value, parse_item
from tilescope.compiler.ir.opset import COLLECTIVES
from tilescope.perfdb.diff import MovedOp, OpDelta, RunDiff, SettingChange, Sides, diff_runs
from tilescope.perfdb.diff_ops import BY_SEQUENCE, MEASURED
from tilescope.perfdb.meshes import CollectiveOp, collective_groups, run_mesh
from tilescope.perfdb.op_changes import ParamChange
from tilescope.perfdb.runs import get_run, op_records
from tilescope.perfdb.schema import Run

from tilescope.app.workbench.device_split import SPLIT_PARTS, DevicePair, DeviceSplit, side_by_side, split_each_device
from tilescope.app.workbench.load_time import LOAD_TIME, duration_text, ops_text
from tilescope.app.workbench.run_view import RunView

# Kernel parameters op records do not keep: what override items asked for is all there is to
# compare, and an op without one ran with the compiler's choice, shown as DEFAULT.
KERNEL_PARAMS = ("block", "subblock", "double_buffer")
DEFAULT = "default"
SHOWN = 5  # ops or items listed per section of the text; the JSON keeps them all
SHOWN_CHANGES = 8  # changes on one op's line
SAME_NS = 5  # a delta shown as 0.00 us: below, rounding of the stored times
CONFIG_CHARS = 60  # of a program config shown whole in a change
_CONFIG = re.compile(r"(\w{1,128})\((.*)\)", re.DOTALL)  # Name(fields), as a report writes a program config


@dataclass(frozen=True)
class Comparison:
    """perfdb.diff.diff_runs of b against a, each op's changes with those of KERNEL_PARAMS the runs'
    applied override items set (after the op's own parameters, before its inputs'), and each
    device's step split into compute, collectives, their overlap and idle in both runs."""

    diff: RunDiff
    devices: tuple[DevicePair, ...]  # app.workbench.device_split.side_by_side

    def to_json(self) -> dict:
        """`tilescope diff --json`: the diff's fields, then `devices`."""
        return self.diff.to_json() | {"devices": [device.to_json() for device in self.devices]}


@dataclass(frozen=True)
class DiffView:
    """A comparison as the Runs & diff tab shows it (diff_view): with both runs, each
    collective's link row (op name -> row) for the aligned timelines, and the runs' op durations
    for the histograms."""

    comparison: Comparison
    runs: Sides[Run]
    links: Sides[dict[str, str]]
    durations: Sides[list[float]]


@dataclass(slots=True)  # one per op: not frozen, as perfdb.diff's records of ops
class OpMove:
    name: str
    delta_ns: float
    how: str  # "" for an op of both runs, else "inserted", "removed", "moved to load time" or "moved into the step"
    error_ns: float | None = None  # the model's error on the delta (both predictions', independent)

    @property
    def within_error(self) -> bool:
        return self.error_ns is not None and abs(self.delta_ns) <= self.error_ns


@dataclass(frozen=True)
class RerunDelta:
    """What a re-run's note shows at once, from what a page holds already: the totals and their
    split, as a RunDiff has them, and the ops that moved."""

    a: int
    b: int
    total_ns: Sides[float]
    total_delta_ns: float
    device_delta_ns: float
    host_delta_ns: float
    inserted: tuple[str, ...]
    removed: tuple[str, ...]
    moved_to_load: tuple[str, ...]
    moved_into_step: tuple[str, ...]
    moves: tuple[OpMove, ...]  # by |delta| descending; the ops that did not move left out

    @property
    def ops_added(self) -> int:
        """How many more ops b's step issues than a's (fewer when negative)."""
        return len(self.inserted) - len(self.removed) + len(self.moved_into_step) - len(self.moved_to_load)


def diff_view(session: Session, a: int, b: int, durations: Sides[list[float]]) -> DiffView:
    """compare of run b against run a, as the compare view shows it (`durations`: each run's op durations)."""
    both = Sides(get_run(session, a), get_run(session, b))
    links = Sides(*(_link_rows(session, run) for run in (both.a, both.b)))
    return DiffView(compare(session, a, b), both, links, durations)


def _link_rows(session: Session, run: Run) -> dict[str, str]:
    """Each collective's link row: op name -> row."""
    return {name: group.row for name, group in collective_groups(session, run.id, run_mesh(run)).items()}


def compare(session: Session, a: int, b: int) -> Comparison:
    """Run b against run a."""
    found = diff_runs(session, a, b)
    runs = Sides(get_run(session, a), get_run(session, b))
    devices = side_by_side(
        *(
            split_each_device(op_records(session, run.id, moved=False), run.tracks, run.total_ns)
            for run in (runs.a, runs.b)
        )
    )
    asked = Sides(_kernel_params(runs.a), _kernel_params(runs.b))
    return Comparison(replace(found, ops=tuple(_with_kernel_params(op, asked) for op in found.ops)), devices)


def _with_kernel_params(op: OpDelta, asked: Sides[dict[str, dict[str, str]]]) -> OpDelta:
    """The op with the changes of KERNEL_PARAMS the runs asked for (`asked`: op -> parameter -> value)."""
    x, y = asked.a.get(op.name, {}), asked.b.get(op.name, {})
    added = [
        ParamChange(param, x.get(param, DEFAULT), y.get(param, DEFAULT))
        for param in KERNEL_PARAMS
        if x.get(param) != y.get(param)
    ]
    if not added:
        return op
    inputs = next((i for i, c in enumerate(op.changes) if c.operand is not None), len(op.changes))
    return replace(op, changes=(*op.changes[:inputs], *added, *op.changes[inputs:]))


def rerun_delta(
    a: RunView,
    b: RunView,
    a_ops: dict[str, float],
    b_ops: dict[str, float],
    errors: Sides[dict[str, float]] | None = None,
) -> RerunDelta:
    """A re-run b against the run a it came from, from the two runs' views and op durations
    (name -> ns), and the error bands of their predictions (name -> ns)."""
    a_loaded, b_loaded = {op.name for op in a.load_ops}, {op.name for op in b.load_ops}
    # an op that moved between load time and the step is neither inserted nor removed
    into_step = tuple(n for n in b_ops if n not in a_ops and n in a_loaded)
    inserted = tuple(n for n in b_ops if n not in a_ops and n not in a_loaded)
    to_load = tuple(n for n in a_ops if n not in b_ops and n in b_loaded)
    removed = tuple(n for n in a_ops if n not in b_ops and n not in b_loaded)
    moves = [OpMove(n, b_ops[n] - a_ops[n], "", _error(n, errors)) for n in a_ops.keys() & b_ops.keys()]
    moves += [OpMove(n, b_ops[n], "inserted") for n in inserted] + [OpMove(n, -a_ops[n], "removed") for n in removed]
    moves += [OpMove(n, -a_ops[n], "moved to load time") for n in to_load]
    moves += [OpMove(n, b_ops[n], "moved into the step") for n in into_step]
    device = b.device_ns - a.device_ns
    return RerunDelta(
        a=a.id,
        b=b.id,
        total_ns=Sides(a.total_ns, b.total_ns),
        total_delta_ns=b.total_ns - a.total_ns,
        device_delta_ns=device,
        host_delta_ns=b.total_ns - a.total_ns - device,
        inserted=inserted,
        removed=removed,
        moved_to_load=to_load,
        moved_into_step=into_step,
        moves=tuple(sorted((m for m in moves if m.delta_ns), key=lambda m: (-abs(m.delta_ns), m.name))),
    )


def _error(name: str, errors: Sides[dict[str, float]] | None) -> float | None:
    """The error of an op's delta: both runs' bands, taken as independent."""
    if errors is None or (name not in errors.a and name not in errors.b):
        return None
    return math.hypot(errors.a.get(name, 0.0), errors.b.get(name, 0.0))


def _kernel_params(run: Run) -> dict[str, dict[str, str]]:
    """op -> {parameter: value} of the KERNEL_PARAMS the run's override items set; rejected items
    changed nothing. An item naming an op fused into another counts for the name it gives, which no
    op record carries: it shows only among the runs' `overrides`."""
    rejected = {_canonical(o["spec"]) for o in run.override_outcomes if o["status"] == REJECTED}
    found: dict[str, dict[str, str]] = {}
    for item in run.overrides:
        override = parse_item(item)
        if format_item(override) in rejected:
            continue
        for param in KERNEL_PARAMS:
            value = getattr(override, param)
            if value is not None:
                found.setdefault(override.op, {})[param] = format_value(value)
    return found


def _canonical(item: str) -> str:
    """An item as runs store it: outcomes keep the spelling the user gave."""
    return format_item(parse_item(item))


WITHIN_ERROR = "within the model's error"


def change_note(op: OpDelta) -> str:
    """What a diff row says of an op besides its times: whether its change is inside the model's
    error, then its changed parameters."""
    return "; ".join(filter(None, (WITHIN_ERROR if op.within_error else "", changes_text(op.changes))))


def unchanged(op: OpDelta) -> bool:
    """An op of both runs that kept its parameters and its time (to the 0.01 us shown)."""
    return not op.changes and abs(op.delta_ns) < SAME_NS


def change_text(change: ParamChange) -> str:
    """`memory dram->l1`, `operand 1 memory dram->l1`, `result 1 dtype bf16->bfp8`: an op's first
    output goes unnamed, as an override item leaves it; of a program config, the fields that differ."""
    if change.operand is not None:
        on = f"operand {change.operand} "
    elif change.result:
        on = f"result {change.result} "
    else:
        on = ""
    if change.param == "config":
        return f"{on}config {config_change(change.a, change.b)}"
    return f"{on}{change.param} {change.a}->{change.b}"


def config_change(a: str, b: str) -> str:
    """`MinimalMatmulConfig(K_block_size 8->4)`: the fields of one program config that differ, as a
    report writes it (`Name(key=value;...)`); two other configs whole, each cut to CONFIG_CHARS."""
    x, y = _CONFIG.fullmatch(a), _CONFIG.fullmatch(b)
    if x and y and x[1] == y[1]:
        ours, theirs = _config_fields(x[2]), _config_fields(y[2])
        keys = dict.fromkeys([*ours, *theirs])
        differ = [f"{k} {ours.get(k, '-')}->{theirs.get(k, '-')}" for k in keys if ours.get(k) != theirs.get(k)]
        return f"{x[1]}({', '.join(differ)})"
    return f"{_cut(a)}->{_cut(b)}"


def _config_fields(text: str) -> dict[str, str]:
    """key -> value of `key=value;...`, split at the semicolons outside brackets ((x=8;y=8) is one value)."""
    fields, depth, part = {}, 0, []
    for char in f"{text};":
        depth += (char in "([{") - (char in ")]}")
        if char == ";" and depth <= 0:
            key, _, value = "".join(part).partition("=")
            fields[key.strip()] = value.strip()
            part = []
        else:
            part.append(char)
    return fields


def _cut(text: str) -> str:
    return text if len(text) <= CONFIG_CHARS else f"{text[: CONFIG_CHARS - 3]}..."


def changes_text(changes: Sequence[ParamChange], shown: int = SHOWN_CHANGES) -> str:
    """An op's changes on one line, the first `shown` of them."""
    return ", ".join([change_text(c) for c in changes[:shown]] + more(len(changes) - shown))


def runs_text(d: RunDiff) -> str:
    """`run 4 (simulated) against run 3 (measured); ops aligned by op code in execution order`: the
    runs' kinds when either was measured, and how their ops were paired when not by name."""
    kinds = MEASURED in (d.kinds.a, d.kinds.b)
    b, a = (f"run {d.b}", f"run {d.a}") if not kinds else (f"run {d.b} ({d.kinds.b})", f"run {d.a} ({d.kinds.a})")
    aligned = "; ops aligned by op code in execution order" if d.alignment == BY_SEQUENCE else ""
    return f"{b} against {a}{aligned}"


def settings_text(settings: Sequence[SettingChange]) -> str:
    """`dispatch host->trace, policy dram-interleaved->greedy-l1`"""
    return ", ".join(f"{s.setting} {s.a}->{s.b}" for s in settings)


def more(left: int) -> list[str]:
    """The line that ends a list cut short, if it was."""
    return [f"... and {left} more"] if left > 0 else []


def time_split(found: RunDiff | RerunDelta) -> str:
    """Why the total delta can differ from the sum of the per-op deltas: the device's share and the
    host's. When the host issues ops slower than the device runs them, the device waits on it, so
    op time gained or lost turns into idle time and the total barely moves; each op more or fewer
    is one launch more or fewer for the host, an op moved to load time too."""
    device, host = found.device_delta_ns, found.host_delta_ns
    split = f"device {device / 1e3:+z,.2f} us, host/idle {host / 1e3:+z,.2f} us"
    added = found.ops_added
    why = [f"{abs(added)} {'more' if added > 0 else 'fewer'} op{'s' * (abs(added) != 1)} to issue"] if added else []
    if device * host < 0 and abs(host) >= abs(device) / 2:
        why.append("the device waits on the host to issue ops, so op time turns into idle time")
        split = f"host dispatch bound: {split}"
    return split + (f" ({'; '.join(why)})" if why else "")


def device_parts(found: Comparison) -> str:
    """The device delta as the sum of what the diff lists: the compute ops slower and faster (all
    of them, not only the rows shown), the ops inserted and removed, those moved to or from load
    time, the collectives (those of both runs, inserted and removed), and what is left (ops
    overlapping on the device, so their times do not add up to its busy time). A slowdown then has
    its causes on the page even when the largest rows are faster ops. Op times are one device's."""
    d = found.diff
    deltas = [op.delta_ns for op in d.ops if op.kind not in COLLECTIVES]
    slower, faster = [x for x in deltas if x > 0], [x for x in deltas if x < 0]
    parts = [
        (f"{len(slower):,} op{'s' * (len(slower) != 1)} slower", sum(slower)),
        (f"{len(faster):,} faster", sum(faster)),
        (f"{len(d.inserted):,} inserted", sum(op.ns for op in d.inserted)),
        (f"{len(d.removed):,} removed", -sum(op.ns for op in d.removed)),
        (f"{len(d.moved_to_load):,} moved to load time", -sum(op.step_ns for op in d.moved_to_load)),
        (f"{len(d.moved_into_step):,} moved into the step", sum(op.step_ns for op in d.moved_into_step)),
        _collectives_part(d),
    ]
    shown = [(what, ns) for what, ns in parts if ns]
    rest = d.device_delta_ns - sum(ns for _, ns in parts)
    if abs(rest) >= 5:  # ns: below, rounding of the stored times
        shown.append(("overlap on the device", rest))
    said = ", ".join(f"{what} {ns / 1e3:+z,.2f} us" for what, ns in shown) or "no op changed"
    return f"device {d.device_delta_ns / 1e3:+z,.2f} us = {said}{_overlap_said(found.devices)}"


def _collectives_part(d: RunDiff) -> tuple[str, float]:
    """("collectives (5 inserted)", their time): those only one run has, and the change of those
    both have."""
    only = d.collectives
    both = [op.delta_ns for op in d.ops if op.kind in COLLECTIVES]
    ns = sum(op.ns for op in only.inserted) - sum(op.ns for op in only.removed) + sum(both)
    counts = [f"{len(ops)} {key}" for key, ops in (("inserted", only.inserted), ("removed", only.removed)) if ops]
    counts += [f"{len(both)} in both"] if both else []
    return (f"collectives ({', '.join(counts)})" if counts else "collectives", ns)


def _overlap_said(devices: Sequence[DevicePair]) -> str:
    """How much more (or less) of one device's collective time hides under its compute: counted in
    the parts above, it costs the step nothing."""
    first = devices[0] if devices else DevicePair("", None, None)
    a, b = (side.overlap_ns if side is not None else 0.0 for side in (first.a, first.b))
    if abs(b - a) < 5:  # ns, as above
        return ""
    return f"; of the collectives, {(b - a) / 1e3:+z,.2f} us overlapped by compute"


def device_table(found: Comparison) -> list[str]:
    """Each device's step in both runs, one line a device: compute, collectives, overlap, idle in
    us, a then b; `-` where a run has no such device. None when both ran on one device."""
    if len(found.devices) <= 1:
        return []
    head = "".join(f" {f'{part} a':>14} {f'{part} b':>14}" for part in SPLIT_PARTS)
    lines = [f"per device (us): run {found.diff.a} (a) and run {found.diff.b} (b)", f"{'device':<10}{head}"]
    for row in found.devices:
        cells = "".join(f" {_us_or_dash(row.a, part):>14} {_us_or_dash(row.b, part):>14}" for part in SPLIT_PARTS)
        lines.append(f"{row.device:<10}{cells}")
    return lines


def _us_or_dash(side: DeviceSplit | None, part: str) -> str:
    return "-" if side is None else f"{getattr(side, f'{part}_ns') / 1e3:,.2f}"


def collective_text(op: CollectiveOp) -> str:
    """`over 8 devices (model), 917.5 KB sent per device, 46.65 us`"""
    axes = f" ({op.axes})" if op.axes else ""
    sent = op.bytes_per_device
    size = f"{sent / 1e6:,.2f} MB" if sent >= 1e6 else f"{sent / 1e3:,.1f} KB"
    return f"over {op.group} devices{axes}, {size} sent per device, {op.ns / 1e3:,.2f} us"


def load_times_text(d: RunDiff) -> str | None:
    """`load time (const-eval, once per model load): 0 ops, 0 ns -> 24 ops, 1.23 ms (+1.23 ms)`,
    when either run does work once per model load; else None."""
    a, b = d.times.a, d.times.b
    if not (a.load_ops or b.load_ops):
        return None
    sign = "-" if d.load_delta_ns < 0 else "+"
    return (
        f"{LOAD_TIME}: {ops_text(a.load_ops, a.load_ns)} -> {ops_text(b.load_ops, b.load_ns)} "
        f"({sign}{duration_text(abs(d.load_delta_ns))})"
    )


def moved_sections(d: RunDiff) -> list[tuple[str, tuple[MovedOp, ...]]]:
    """(title, ops) of the ops one run does in every step and the other once per model load."""
    sections = [
        (f"moved to load time in run {d.b} (per step in run {d.a})", d.moved_to_load),
        (f"moved into the step in run {d.b} (load time in run {d.a})", d.moved_into_step),
    ]
    return [(title, ops) for title, ops in sections if ops]


def moved_text(op: MovedOp) -> str:
    """`0.50 us per step, 420 ns at load`"""
    return f"{op.step_ns / 1e3:,.2f} us per step, {duration_text(op.load_ns)} at load"
