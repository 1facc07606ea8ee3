"""Run B against run A, op by op, for `tilescope diff A B` (app.cli.diff) and the app's Runs & diff tab;
and the lines both show of a diff."""

from __future__ import annotations

from sqlalchemy.orm import Session

from tilescope.compiler.pipeline.op_override import REJECTED
from tilescope.overrides import format_item, format_value, parse_item
from tilescope.compiler.ir.opset import COLLECTIVES
from tilescope.perfdb.queries import diff_runs, get_run, op_records
from tilescope.perfdb.schema import Run

from tilescope.app.workbench.device_split import SPLIT_PARTS, side_by_side, split_each_device
from tilescope.app.workbench.load_time import LOAD_TIME, duration_text, ops_text
from tilescope.app.workbench.run_view import RunView

# Kernel parameters op records do not keep: what override items asked for is all there is to
# compare, and an op without one ran with the compiler's choice, shown as DEFAULT.
KERNEL_PARAMS = ("block", "subblock", "double_buffer")
DEFAULT = "default"
SHOWN = 5  # ops or items listed per section of the text; the JSON keeps them all
SHOWN_CHANGES = 8  # changes on one op's line


def compare(session: Session, a: int, b: int) -> dict:
    """perfdb.queries.diff_runs of b against a (its docstring gives the shape), with each op's
    changes of KERNEL_PARAMS added, as the runs' applied override items set them: {param, a, b,
    operand: None, result: None}, after the op's own parameters and before its inputs'; and
    `devices`, each device's step split into compute, collectives, their overlap and idle in both
    runs (app.workbench.device_split.side_by_side: None for a device a run does not have)."""
    found = diff_runs(session, a, b)
    runs = [get_run(session, run_id) for run_id in (a, b)]
    found["devices"] = side_by_side(
        *(split_each_device(op_records(session, run.id, moved=False), run.tracks, run.total_ns) for run in runs)
    )
    asked_a, asked_b = (_kernel_params(run) for run in runs)
    for op in found["ops"]:
        x, y = asked_a.get(op["name"], {}), asked_b.get(op["name"], {})
        added = [
            {"param": param, "a": x.get(param, DEFAULT), "b": y.get(param, DEFAULT), "operand": None, "result": None}
            for param in KERNEL_PARAMS
            if x.get(param) != y.get(param)
        ]
        if added:
            inputs = next((i for i, c in enumerate(op["changes"]) if c["operand"] is not None), len(op["changes"]))
            op["changes"][inputs:inputs] = added
    return found


def rerun_delta(a: RunView, b: RunView, a_ops: dict[str, float], b_ops: dict[str, float]) -> dict:
    """What a re-run's note shows at once, from the two runs' views and op durations (name -> ns)
    a page holds already: the keys of compare() that time_split reads, `times` {a, b} -> {total_ns},
    and `moves`, [(name, delta_ns, how)] by |delta| descending, `how` "" for an op of both runs,
    else "inserted", "removed" or "moved to load time"."""
    a_loaded, b_loaded = {op.name for op in a.load_ops}, {op.name for op in b.load_ops}
    # an op that moved between load time and the step is neither inserted nor removed
    into_step = [n for n in b_ops if n not in a_ops and n in a_loaded]
    inserted = [n for n in b_ops if n not in a_ops and n not in a_loaded]
    to_load = [n for n in a_ops if n not in b_ops and n in b_loaded]
    removed = [n for n in a_ops if n not in b_ops and n not in b_loaded]
    moves = [(n, b_ops[n] - a_ops[n], "") for n in a_ops.keys() & b_ops.keys()]
    moves += [(n, b_ops[n], "inserted") for n in inserted] + [(n, -a_ops[n], "removed") for n in removed]
    moves += [(n, -a_ops[n], "moved to load time") for n in to_load]
    moves += [(n, b_ops[n], "moved into the step") for n in into_step]
    device = b.device_ns - a.device_ns
    return {
        "a": a.id,
        "b": b.id,
        "times": {"a": {"total_ns": a.total_ns}, "b": {"total_ns": b.total_ns}},
        "total_delta_ns": b.total_ns - a.total_ns,
        "device_delta_ns": device,
        "host_delta_ns": b.total_ns - a.total_ns - device,
        "inserted": inserted,
        "removed": removed,
        "moved_to_load": to_load,
        "moved_into_step": into_step,
        "moves": sorted((m for m in moves if m[1]), key=lambda m: (-abs(m[1]), m[0])),
    }


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


def change_text(change: dict) -> str:
    """`memory dram->l1`, `operand 1 memory dram->l1`, `result 1 dtype bf16->bfp8`: an op's first
    output goes unnamed, as an override item leaves it."""
    if change["operand"] is not None:
        on = f"operand {change['operand']} "
    elif change["result"]:
        on = f"result {change['result']} "
    else:
        on = ""
    return f"{on}{change['param']} {change['a']}->{change['b']}"


def changes_text(changes: list[dict], shown: int = SHOWN_CHANGES) -> str:
    """An op's changes on one line, the first `shown` of them."""
    return ", ".join([change_text(c) for c in changes[:shown]] + more(len(changes) - shown))


def settings_text(settings: list[dict]) -> str:
    """`dispatch host->trace, policy dram-interleaved->greedy-l1`"""
    return ", ".join(f"{s['setting']} {s['a']}->{s['b']}" for s in settings)


def more(left: int) -> list[str]:
    """The line that ends a list cut short, if it was."""
    return [f"... and {left} more"] if left > 0 else []


def time_split(found: dict) -> str:
    """Why the total delta can differ from the sum of the per-op deltas: the device's share and the
    host's. When the host issues ops slower than the device runs them, the device waits on it, so
    op time gained or lost turns into idle time and the total barely moves; each op more or fewer
    is one launch more or fewer for the host, an op moved to load time too."""
    device, host = found["device_delta_ns"], found["host_delta_ns"]
    split = f"device {device / 1e3:+z.2f} us, host/idle {host / 1e3:+z.2f} us"
    collectives = found.get("collectives", {"inserted": [], "removed": []})
    added = len(found["inserted"]) - len(found["removed"]) + len(found["moved_into_step"]) - len(found["moved_to_load"])
    added += len(collectives["inserted"]) - len(collectives["removed"])
    why = [f"{abs(added)} {'more' if added > 0 else 'fewer'} op{'s' * (abs(added) != 1)} to issue"] if added else []
    if device * host < 0 and abs(host) >= abs(device) / 2:
        why.append("the device waits on the host to issue ops, so op time turns into idle time")
        split = f"host dispatch bound: {split}"
    return split + (f" ({'; '.join(why)})" if why else "")


def device_parts(found: dict) -> str:
    """The device delta as the sum of what the diff lists: the compute ops slower and faster (all
    of them, not only the rows shown), the ops inserted and removed, those moved to or from load
    time, the collectives (those of both runs, inserted and removed), and what is left (ops
    overlapping on the device, so their times do not add up to its busy time). A slowdown then has
    its causes on the page even when the largest rows are faster ops. Op times are one device's."""
    deltas = [op["delta_ns"] for op in found["ops"] if op.get("kind") not in COLLECTIVES]
    slower, faster = [d for d in deltas if d > 0], [d for d in deltas if d < 0]
    parts = [
        (f"{len(slower):,} op{'s' * (len(slower) != 1)} slower", sum(slower)),
        (f"{len(faster):,} faster", sum(faster)),
        (f"{len(found['inserted']):,} inserted", sum(op["ns"] for op in found["inserted"])),
        (f"{len(found['removed']):,} removed", -sum(op["ns"] for op in found["removed"])),
        (f"{len(found['moved_to_load']):,} moved to load time", -sum(op["step_ns"] for op in found["moved_to_load"])),
        (
            f"{len(found['moved_into_step']):,} moved into the step",
            sum(op["step_ns"] for op in found["moved_into_step"]),
        ),
        _collectives_part(found),
    ]
    shown = [(what, ns) for what, ns in parts if ns]
    rest = found["device_delta_ns"] - sum(ns for _, ns in parts)
    if abs(rest) >= 5:  # ns: below, rounding of the stored times
        shown.append(("overlap on the device", rest))
    said = ", ".join(f"{what} {ns / 1e3:+z,.2f} us" for what, ns in shown) or "no op changed"
    return f"device {found['device_delta_ns'] / 1e3:+z,.2f} us = {said}{_overlap_said(found)}"


def _collectives_part(found: dict) -> tuple[str, float]:
    """("collectives (5 inserted)", their time): those only one run has, and the change of those
    both have."""
    only = found.get("collectives", {"inserted": [], "removed": []})
    both = [op["delta_ns"] for op in found["ops"] if op.get("kind") in COLLECTIVES]
    ns = sum(op["ns"] for op in only["inserted"]) - sum(op["ns"] for op in only["removed"]) + sum(both)
    counts = [f"{len(only[key])} {key}" for key in ("inserted", "removed") if only[key]]
    counts += [f"{len(both)} in both"] if both else []
    return (f"collectives ({', '.join(counts)})" if counts else "collectives", ns)


def _overlap_said(found: dict) -> str:
    """How much more (or less) of one device's collective time hides under its compute: counted in
    the parts above, it costs the step nothing."""
    first = (found.get("devices") or [{}])[0]
    a, b = ((first.get(side) or {}).get("overlap_ns", 0.0) for side in ("a", "b"))
    if abs(b - a) < 5:  # ns, as above
        return ""
    return f"; of the collectives, {(b - a) / 1e3:+z,.2f} us overlapped by compute"


def device_table(found: dict) -> list[str]:
    """Each device's step in both runs, one line a device: compute, collectives, overlap, idle in
    us, a then b; `-` where a run has no such device. None when both ran on one device."""
    rows = found.get("devices") or []
    if len(rows) <= 1:
        return []
    head = "".join(f" {f'{part} a':>14} {f'{part} b':>14}" for part in SPLIT_PARTS)
    lines = [f"per device (us): run {found['a']} (a) and run {found['b']} (b)", f"{'device':<10}{head}"]
    for row in rows:
        cells = "".join(f" {_us_or_dash(row['a'], part):>14} {_us_or_dash(row['b'], part):>14}" for part in SPLIT_PARTS)
        lines.append(f"{row['device']:<10}{cells}")
    return lines


def _us_or_dash(side: dict | None, part: str) -> str:
    return "-" if side is None else f"{side[f'{part}_ns'] / 1e3:,.2f}"


def collective_text(op: dict) -> str:
    """`over 8 devices (model), 917.5 KB sent per device, 46.65 us`"""
    axes = f" ({op['axes']})" if op["axes"] else ""
    sent = op["bytes_per_device"]
    size = f"{sent / 1e6:,.2f} MB" if sent >= 1e6 else f"{sent / 1e3:,.1f} KB"
    return f"over {op['group']} devices{axes}, {size} sent per device, {op['ns'] / 1e3:,.2f} us"


def load_times_text(found: dict) -> str | None:
    """`load time (const-eval, once per model load): 0 ops, 0 ns -> 24 ops, 1.23 ms (+1.23 ms)`,
    when either run does work once per model load; else None."""
    a, b = found["times"]["a"], found["times"]["b"]
    if not (a["load_ops"] or b["load_ops"]):
        return None
    delta = found["load_delta_ns"]
    sign = "-" if delta < 0 else "+"
    return (
        f"{LOAD_TIME}: {ops_text(a['load_ops'], a['load_ns'])} -> {ops_text(b['load_ops'], b['load_ns'])} "
        f"({sign}{duration_text(abs(delta))})"
    )


def moved_sections(found: dict) -> list[tuple[str, list[dict]]]:
    """(title, ops) of the ops one run does in every step and the other once per model load."""
    sections = [
        (f"moved to load time in run {found['b']} (per step in run {found['a']})", found["moved_to_load"]),
        (f"moved into the step in run {found['b']} (load time in run {found['a']})", found["moved_into_step"]),
    ]
    return [(title, ops) for title, ops in sections if ops]


def moved_text(op: dict) -> str:
    """`0.50 us per step, 420 ns at load`"""
    return f"{op['step_ns'] / 1e3:,.2f} us per step, {duration_text(op['load_ns'])} at load"
