"""Write a run with its per-op records and zones in one transaction."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from sqlalchemy import insert
from sqlalchemy.orm import Session

from .schema import Counter, OpRecord, Run, Zone

_OP_FIELDS = (
    "name", "kind", "start_ns", "duration_ns", "flops", "bytes", "bound", "why",
    "memory", "grid", "cores", "roofline_ns", "pct_peak", "dispatch_wait_ns",
)
_DEFAULTS = {"why": "", "pct_peak": 0.0, "dispatch_wait_ns": 0.0}  # optional fields; the rest are required


@dataclass
class NewRun:
    """Everything about one run; the caller converts its simulator output into this."""

    model_ref: str
    model_name: str
    source_hash: str
    source_text: str
    target: str  # the target's name
    total_ns: float
    device_ns: float
    ops: Sequence[dict]  # keys: _OP_FIELDS
    zones: Iterable[tuple[str, int, str, float, float, str]]  # track, depth, name, start, end, op
    counters: Iterable[tuple[str, str, float, float]] = ()  # track, name, t, value
    dispatch: str = "host"
    policy: str = "dram-interleaved"
    target_ref: str = ""  # how the target was asked for: a built-in name or a file path
    target_text: str = ""  # the target description it ran on
    l1_usage_cap: float = 0.8
    overrides: list[str] = field(default_factory=list)
    override_outcomes: list[dict] = field(default_factory=list)
    label: str = ""
    parent_id: int | None = None


def save_run(session: Session, new: NewRun) -> int:
    """Store `new` and return its run id; nothing is stored if any part fails."""
    run = Run(
        model_ref=new.model_ref,
        model_name=new.model_name,
        source_hash=new.source_hash,
        source_text=new.source_text,
        target=new.target,
        dispatch=new.dispatch,
        policy=new.policy,
        target_ref=new.target_ref or new.target,
        target_text=new.target_text,
        l1_usage_cap=new.l1_usage_cap,
        overrides=list(new.overrides),
        override_outcomes=list(new.override_outcomes),
        label=new.label,
        parent_id=new.parent_id,
        total_ns=new.total_ns,
        device_ns=new.device_ns,
    )
    with session.begin():
        session.add(run)
        session.flush()
        if new.ops:
            session.execute(
                insert(OpRecord),
                [{"run_id": run.id, **{k: op[k] if k not in _DEFAULTS else op.get(k, _DEFAULTS[k]) for k in _OP_FIELDS}} for op in new.ops],
            )
        zone_rows = [
            {"run_id": run.id, "track": t, "depth": d, "name": n, "start_ns": s, "end_ns": e, "op": o}
            for t, d, n, s, e, o in new.zones
        ]
        if zone_rows:
            session.execute(insert(Zone), zone_rows)
        counter_rows = [
            {"run_id": run.id, "track": t, "name": n, "t_ns": at, "value": v} for t, n, at, v in new.counters
        ]
        if counter_rows:
            session.execute(insert(Counter), counter_rows)
    return run.id
