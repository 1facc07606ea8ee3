"""Read functions the CLI and the UI share. Each takes a Session; the caller owns its lifecycle."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import NamedTuple

import numpy as np

from sqlalchemy import Row, Text, cast, func, select
from sqlalchemy.orm import Session, selectinload, undefer

from tilescope.compiler.ir.opset import COLLECTIVES

from tilescope.perfdb import blocks
from tilescope.perfdb import lod
from tilescope.perfdb.errors import RunNotFound
from tilescope.perfdb.meshes import collectives_only_in, devices_warning, run_mesh
from tilescope.perfdb.records import LoadOp
from tilescope.perfdb.schema import Model, OpRecord, Run, TimelineBlock


def list_runs(session: Session, model_ref: str | None = None) -> list[Run]:
    """Newest first."""
    query = select(Run).order_by(Run.id.desc())
    if model_ref is not None:
        query = query.where(Run.model_ref == model_ref)
    return list(session.scalars(query))


def newest_run_id(session: Session, model_ref: str, target_ref: str) -> int | None:
    """The id of the newest run of a model on a target (as they were asked for), without loading runs."""
    return session.scalar(select(func.max(Run.id)).where(Run.model_ref == model_ref, Run.target_ref == target_ref))


MAX_ID = 2**63 - 1  # ids are 64-bit integers in both databases; a larger one names no run


def get_run(session: Session, run_id: int) -> Run:
    """The run with its model's source text, enough to re-compile it once the session is closed."""
    if not 0 < run_id <= MAX_ID:
        raise RunNotFound(run_id)
    run = session.get(Run, run_id, options=[selectinload(Run.model).undefer(Model.source_text), undefer(Run.load_ops)])
    if run is None:
        raise RunNotFound(run_id)
    run.load_ops  # noqa: B018  # read now, should the run have been in the session without them
    return run


def load_ops(run: Run) -> list[LoadOp]:
    """The ops a run (as get_run reads it) evaluated once when its model was loaded, in the order
    they ran; none for runs stored before load-time work was kept."""
    return [LoadOp.of(op) for op in run.load_ops]


def target_description(session: Session, target_ref: str) -> str | None:
    """The target description the newest run asked for as `target_ref` kept (a target file's, as
    it was then), or None."""
    run = session.scalar(select(Run).where(Run.target_ref == target_ref).order_by(Run.id.desc()).limit(1))
    return (run.target.description or None) if run is not None else None


def op_records(session: Session, run_id: int, tensors: bool = False, moved: bool = True) -> list[Row]:
    """A run's op records by start, as read-only rows with OpRecord's attributes: with `tensors`
    only if asked, and without `bytes` (by path) unless `moved`. Rows, not ORM objects, and the
    JSON columns only when needed: a 100k-op run's records load in a third of the time."""
    skipped = {"tensors"} if not tensors else set()
    if not moved:
        skipped.add("bytes")
    columns = [c for c in OpRecord.__table__.c if c.name not in skipped]
    return list(session.execute(select(*columns).where(OpRecord.run_id == run_id).order_by(OpRecord.start_ns)))


def op_records_between(session: Session, run_id: int, t0: float, t1: float) -> list[OpRecord]:
    """The ops running at some time in [t0, t1], by start."""
    return list(
        session.scalars(
            select(OpRecord)
            .where(OpRecord.run_id == run_id, OpRecord.start_ns <= t1, OpRecord.start_ns + OpRecord.duration_ns >= t0)
            .order_by(OpRecord.start_ns)
        )
    )


def op_record(session: Session, run_id: int, name: str) -> OpRecord | None:
    return session.scalars(select(OpRecord).where(OpRecord.run_id == run_id, OpRecord.name == name)).first()


class StoredZone(NamedTuple):
    track: str
    depth: int
    name: str
    start_ns: float
    end_ns: float
    op: str
    lod: int  # the first level of detail that draws it inside a marker (perfdb.lod)


def zones(
    session: Session,
    run_id: int,
    t0: float | None = None,
    t1: float | None = None,
    tracks: Sequence[str] | None = None,
    depth: int | None = None,
    op: str | None = None,
) -> list[StoredZone]:
    """Zones overlapping [t0, t1] on the given tracks (all when None) at one nesting depth (all when
    None), of one op (all when None), by start time."""
    t0 = -np.inf if t0 is None else t0
    t1 = np.inf if t1 is None else t1
    names, same_as = _names(session, run_id)
    wanted = names.index(op) if op in names else -1
    found = []
    for track, rows in _blocks(session, run_id, blocks.ZONES, t0, t1, tracks, same_as=same_as):
        keep = (rows["start"] <= t1) & (rows["end"] >= t0)
        if depth is not None:
            keep &= rows["depth"] == depth
        if op is not None:
            keep &= rows["op"] == wanted
        found += [
            StoredZone(track, d, names[n], s, e, names[o], lod)
            for d, s, e, n, o, lod in zip(
                *(rows[c][keep].tolist() for c in ("depth", "start", "end", "name", "op", "lod"))
            )
        ]
    return sorted(found, key=lambda z: z.start_ns)


def _names(session: Session, run_id: int) -> tuple[list[str], dict[str, str]]:
    """The names a run's zone blocks index, and which tracks share another's zones (perfdb.blocks)."""
    b = TimelineBlock.__table__.c
    data = session.scalar(select(b.data).where(b.run_id == run_id, b.kind == blocks.NAMES))
    return blocks.unpack_names(data) if data is not None else ([], {})


def _blocks(
    session: Session,
    run_id: int,
    kind: str,
    t0: float,
    t1: float,
    tracks: Sequence[str] | None = None,
    *where,
    same_as: dict[str, str] | None = None,
) -> Iterator[tuple[str, dict[str, np.ndarray]]]:
    """(track, columns) of the blocks of `kind` that may hold rows in [t0, t1] on `tracks` (all
    when None) and meet the SQL conditions `where`, by stored track and start. A track that shares
    another's zones (`same_as`) gets that track's blocks."""
    b = TimelineBlock.__table__.c
    where = [b.run_id == run_id, b.kind == kind, *where]
    shown: dict[str, list[str]] = {}  # stored track -> the tracks its blocks are shown on
    if tracks is not None:
        for track in dict.fromkeys(tracks):  # each once, as SQL's IN would
            shown.setdefault((same_as or {}).get(track, track), []).append(track)
        where.append(b.track.in_(list(shown)))
    else:
        for alias, track in (same_as or {}).items():
            shown.setdefault(track, [track]).append(alias)
    if t1 < np.inf:
        where.append(b.start_ns <= t1)
    if t0 > -np.inf:
        where.append(b.end_ns >= t0)
    for track, data in session.execute(select(b.track, b.data).where(*where).order_by(b.track, b.start_ns)):
        columns = blocks.unpack(data)[0]
        for on in shown.get(track, (track,)):
            yield on, columns


class WindowItem(NamedTuple):
    """One thing to draw: a zone (count 1), or a marker of `count` zones merged. (A tuple: a window
    may hold thousands.)"""

    track: str
    depth: int
    name: str  # the zone's name, or "N zones"
    start_ns: float
    end_ns: float
    op: str  # the zone's op; "" for a marker
    count: int = 1
    busy_ns: float = 0.0  # a marker's summed zone time (its zones need not fill it)

    @property
    def label(self) -> str:
        """What a timeline names it by: its op, an engine's phase of its op, or the marker's name."""
        return f"{self.op} · {self.name}" if self.op and self.depth else (self.op or self.name)


def timeline_window(
    session: Session,
    run_id: int,
    t0: float,
    t1: float,
    resolution_ns: float,
    tracks: Sequence[str] | None = None,
) -> list[WindowItem]:
    """What to draw of [t0, t1] at `resolution_ns` per pixel, on `tracks` (default all of the run's):
    zones at least about one pixel long one by one, shorter ones merged into one marker per track,
    depth and bucket (perfdb.lod). At most about 2 * (t1 - t0) / resolution_ns items per track and
    depth, however many zones the run holds. By track, then start."""
    if tracks is None:
        tracks = get_run(session, run_id).tracks
    tracks = list(tracks)
    if not tracks or t1 < t0:
        return []
    level = lod.level_for(resolution_ns) if resolution_ns > lod.BASE_NS else 0
    b = TimelineBlock.__table__.c
    names, same_as = _names(session, run_id)
    items = []
    # the zones not merged at this level one by one, then this level's markers
    for track, rows in _blocks(session, run_id, blocks.ZONES, t0, t1, tracks, b.top_level > level, same_as=same_as):
        keep = (rows["lod"] > level) & (rows["start"] <= t1) & (rows["end"] >= t0)
        items += [
            WindowItem(track, d, names[n], s, e, names[o])
            for d, s, e, n, o in zip(*(rows[c][keep].tolist() for c in ("depth", "start", "end", "name", "op")))
        ]
    if level >= 1:
        for track, rows in _blocks(
            session, run_id, blocks.MARKERS, t0, t1, tracks, b.level <= level, b.top_level >= level, same_as=same_as
        ):
            keep = (rows["level"] == level) & (rows["start"] <= t1) & (rows["end"] >= t0)
            items += [
                WindowItem(track, d, f"{count} zones", s, e, "", count, busy)
                for d, s, e, count, busy in zip(
                    *(rows[c][keep].tolist() for c in ("depth", "start", "end", "count", "busy"))
                )
            ]
    order = {track: i for i, track in enumerate(tracks)}
    return sorted(items, key=lambda item: (order[item.track], item.depth, item.start_ns))


def merged(
    track: str, names: Sequence[str], start: Sequence[float], end: Sequence[float], resolution_ns: float
) -> list[WindowItem]:
    """Zones of one row made on the fly (the device row: each op from its start to its end),
    merged as timeline_window merges stored ones: at `resolution_ns` per pixel, runs of short
    zones become "N zones" markers, so a 100k-op run's row is a few thousand items, not 100k."""
    start, end = np.asarray(start, np.float64), np.asarray(end, np.float64)
    level = lod.level_for(resolution_ns) if resolution_ns > lod.BASE_NS else 0
    if level == 0 or not len(start):
        return [WindowItem(track, 0, n, s, e, n) for n, s, e in zip(names, start.tolist(), end.tolist())]
    zero = np.zeros(len(start), np.int64)
    found = lod.markers(zero, zero, start, end)
    alone = np.flatnonzero(found.zone_lod > level)  # not inside a marker at this level
    items = [
        WindowItem(track, 0, names[i], s, e, names[i])
        for i, s, e in zip(alone.tolist(), start[alone].tolist(), end[alone].tolist())
    ]
    at = found.level == level
    items += [
        WindowItem(track, 0, f"{count} zones", s, e, "", count, busy)
        for s, e, count, busy in zip(*(c[at].tolist() for c in (found.start, found.end, found.count, found.busy)))
    ]
    return sorted(items, key=lambda item: item.start_ns)


class StoredCounter(NamedTuple):
    track: str
    name: str
    t_ns: float
    value: float


def counters(
    session: Session, run_id: int, name: str | None = None, tracks: Sequence[str] | None = None
) -> list[StoredCounter]:
    """A run's counter samples (optionally one counter, some tracks), by track and time."""
    names = _names(session, run_id)[0]
    wanted = names.index(name) if name in names else -1
    found = []
    for track, rows in _blocks(session, run_id, blocks.COUNTERS, -np.inf, np.inf, tracks):
        keep = rows["name"] == wanted if name is not None else slice(None)
        found += [
            StoredCounter(track, names[n], t, v)
            for n, t, v in zip(*(rows[c][keep].tolist() for c in ("name", "t", "value")))
        ]
    return found  # blocks come by track and time, each by time


def counter_names(session: Session, run_id: int) -> list[str]:
    """The names of the counters a run recorded."""
    names = _names(session, run_id)[0]
    used = {
        n
        for _, rows in _blocks(session, run_id, blocks.COUNTERS, -np.inf, np.inf)
        for n in np.unique(rows["name"]).tolist()
    }
    return sorted(names[n] for n in used)


def counter_envelope(session: Session, run_id: int, name: str) -> list[tuple[float, float]]:
    """(t, the largest value of counter `name` over all its tracks at t), by time: the fullest
    core's L1 over a run."""
    names = _names(session, run_id)[0]
    if name not in names:
        return []
    wanted = names.index(name)
    t, value = [], []
    for _, rows in _blocks(session, run_id, blocks.COUNTERS, -np.inf, np.inf):
        keep = rows["name"] == wanted
        t.append(rows["t"][keep])
        value.append(rows["value"][keep])
    if not t:
        return []
    t, value = np.concatenate(t), np.concatenate(value)
    times, at = np.unique(t, return_inverse=True)
    largest = np.full(len(times), -np.inf)
    np.maximum.at(largest, at, value)
    return list(zip(times.tolist(), largest.tolist()))


TOP = 5  # names in top_regressions and top_improvements
# What an op record keeps of how its op ran, compared by diff_runs: per tensor (each output as the
# op writes it, each input as the op reads it, with the grid of its shards) and of the op itself.
# Parameters only override items hold (a matmul's blocking, double buffering) are not in op records.
TENSOR_PARAMS = ("memory", "memory_layout", "layout", "dtype", "tile")
OP_PARAMS = ("grid", "fidelity")
RUN_SETTINGS = ("dispatch", "policy", "l1_usage_cap")  # what a run was compiled and simulated under, besides overrides


def diff_runs(session: Session, a_id: int, b_id: int) -> dict:
    """Run `b` against run `a`, op by op, matched by stable op name.

    Returns, in this order:
    - `a`, `b`: the run ids.
    - `warnings`: why the comparison may mislead: the runs are of different models (or of two
      versions of one model's source), or on different targets (or two versions of one target's
      description). Op names match whatever the ops are.
    - `settings`: the run settings that differ, [{setting, a, b}] of RUN_SETTINGS as strings: a
      layout policy places tensors before any override, and dispatch moves the total, not the ops.
    - `total_delta_ns`: b's total time minus a's, split into `device_delta_ns` (Run.device_ns: the
      ops' device time, i.e. the per-op deltas plus inserted minus removed ops, minus the ops moved
      to load time plus those moved into the step) and `host_delta_ns` (the rest of the total: the
      device idle, mostly waiting for the host to issue ops).
      On a host-dispatch-bound run an op that gets faster mostly turns into idle time, so the
      total moves far less than the ops.
    - `load_delta_ns`: b's load time minus a's: the work done once per model load (the compiler's
      const-eval), which is not in the total.
    - `times`: {a, b} -> {total_ns, device_ns, host_ns, load_ns, load_ops (how many)} of each run.
    - `ops`: the ops of both runs, [{name, kind, a_ns, b_ns, delta_ns, ratio (b/a, None when a took
      no time), changes}], by |delta_ns| descending. `changes` lists what the op records say changed,
      [{param, a, b, operand, result}]: `param` is one of TENSOR_PARAMS of a tensor (`operand` N:
      the op's input N as the op reads it; `result` N: its output N; the other None), `grid` of an
      input's shards (when sharded in either run), or one of OP_PARAMS of the op (both None); `a`
      and `b` are the two values as strings ("dram", "8x8", "bfp8"). Outputs come first, then the
      op, then the inputs. A parameter that one run did not record is not compared.
    - `meshes`: {a, b} -> {devices, mesh ([[axis, size]]), target} of each run (perfdb.meshes);
      a run on another number of devices or mesh adds a warning, `devices: 1 vs 8 (mesh model=8
      on t3k)`. Op times are one device's in either run: an op's delta is what each device gains.
    - `removed`, `inserted`: the ops only in a, only in b (a `to_layout` an override inserted),
      [{name, kind, ns}] in execution order; the collectives apart, in `collectives`.
    - `collectives`: {removed, inserted} -> the collectives only in a, only in b (those a mesh of
      more devices needs), [{name, kind, group, axes, bytes_per_device, ns}] in execution order.
    - `moved_to_load`: the ops in a's step that b evaluates once at load time instead, and
      `moved_into_step` the reverse, [{name, kind, step_ns, load_ns}] in the order of the run that
      has them in its step; they are neither removed nor inserted.
    - `overrides`: {a, b} -> the override items only that run was compiled with, in its order.
    - `top_regressions`, `top_improvements`: the names of the TOP ops that got slower, faster.

    Durations are summed per name (should a name occur twice), parameters taken from its first
    record; the ratio is taken of the sums, never summed or averaged itself."""
    runs = {run_id: get_run(session, run_id) for run_id in (a_id, b_id)}
    a, b = _ops_by_name(session, a_id), _ops_by_name(session, b_id)
    ops = []
    for name in a.keys() & b.keys():
        x, y = a[name], b[name]
        ops.append(
            {
                "name": name,
                "kind": y.kind,
                "a_ns": x.ns,
                "b_ns": y.ns,
                "delta_ns": y.ns - x.ns,
                "ratio": y.ns / x.ns if x.ns else None,
                "changes": _changes(x.record, y.record) if x.record != y.record else [],
            }
        )
    ops.sort(key=lambda op: (-abs(op["delta_ns"]), op["name"]))
    slower = sorted((op for op in ops if op["delta_ns"] > 0), key=lambda op: (-op["delta_ns"], op["name"]))
    faster = sorted((op for op in ops if op["delta_ns"] < 0), key=lambda op: (op["delta_ns"], op["name"]))
    times = {
        side: {
            "total_ns": run.total_ns,
            "device_ns": run.device_ns,
            "host_ns": run.total_ns - run.device_ns,
            "load_ns": run.load_ns,
            "load_ops": len(run.load_ops),
        }
        for side, run in (("a", runs[a_id]), ("b", runs[b_id]))
    }
    overrides = {run_id: set(runs[run_id].overrides) for run_id in (a_id, b_id)}
    deltas = {
        f"{what}_delta_ns": times["b"][f"{what}_ns"] - times["a"][f"{what}_ns"]
        for what in ("total", "device", "host", "load")
    }
    load_a, load_b = _load_by_name(runs[a_id]), _load_by_name(runs[b_id])
    removed = [n for n in a if n not in b and n not in load_b]
    inserted = [n for n in b if n not in a and n not in load_a]
    meshes = {side: run_mesh(runs[run_id]) for side, run_id in (("a", a_id), ("b", b_id))}
    on_devices = devices_warning(meshes["a"], meshes["b"])
    return {
        "a": a_id,
        "b": b_id,
        "warnings": _warnings(runs[a_id], runs[b_id]) + ([on_devices] if on_devices else []),
        "settings": [
            {"setting": name, "a": str(x), "b": str(y)}
            for name in RUN_SETTINGS
            if (x := getattr(runs[a_id], name)) != (y := getattr(runs[b_id], name))
        ],
        **deltas,
        "times": times,
        "ops": ops,
        "meshes": {side: mesh.as_dict() for side, mesh in meshes.items()},
        "removed": [{"name": n, "kind": a[n].kind, "ns": a[n].ns} for n in removed if a[n].kind not in COLLECTIVES],
        "inserted": [{"name": n, "kind": b[n].kind, "ns": b[n].ns} for n in inserted if b[n].kind not in COLLECTIVES],
        "collectives": {
            "removed": collectives_only_in(session, a_id, removed, meshes["a"]),
            "inserted": collectives_only_in(session, b_id, inserted, meshes["b"]),
        },
        "moved_to_load": [
            {"name": n, "kind": op.kind, "step_ns": op.ns, "load_ns": load_b[n]}
            for n, op in a.items()
            if n not in b and n in load_b
        ],
        "moved_into_step": [
            {"name": n, "kind": op.kind, "step_ns": op.ns, "load_ns": load_a[n]}
            for n, op in b.items()
            if n not in a and n in load_a
        ],
        "overrides": {
            "a": [item for item in runs[a_id].overrides if item not in overrides[b_id]],
            "b": [item for item in runs[b_id].overrides if item not in overrides[a_id]],
        },
        "top_regressions": [op["name"] for op in slower[:TOP]],
        "top_improvements": [op["name"] for op in faster[:TOP]],
    }


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
    for op in run.load_ops:
        found[op["name"]] = found.get(op["name"], 0.0) + op["duration_ns"]
    return found


_Key = tuple[int | None, int | None, str]  # a parameter of an op's input (operand), output (result) or its own


class _DiffOp(NamedTuple):
    kind: str
    ns: float  # device time, summed over the name's records
    record: tuple[str, str, str, str]  # memory, grid, fidelity and tensors (JSON text) of its first record


def _ops_by_name(session: Session, run_id: int) -> dict[str, _DiffOp]:
    """name -> the op's kind, duration summed over its records and what its first record says of
    how it ran, in execution order. The tensors come as JSON text, decoded only for the ops whose
    records differ: decoding every op's took a diff of two 10k-op runs from 0.2 to 0.8 s."""
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
    ops: dict[str, _DiffOp] = {}
    for name, kind, duration, *record in rows:
        known = ops.get(name)
        if known is not None:
            ops[name] = known._replace(ns=known.ns + duration)
        else:
            ops[name] = _DiffOp(kind, duration, tuple(record))
    return ops


def _changes(a: tuple[str, str, str, str], b: tuple[str, str, str, str]) -> list[dict]:
    """What differs between two records of an op (diff_runs gives the shape)."""
    x, y = _params(*a), _params(*b)
    return [
        {"param": param, "a": value, "b": y[operand, result, param], "operand": operand, "result": result}
        for (operand, result, param), value in x.items()
        if y.get((operand, result, param), value) != value and _compared(operand, param, x, y)
    ]


def _compared(operand: int | None, param: str, *params: dict[_Key, str]) -> bool:
    """An input's grid is compared when it is sharded in either run: the grid of an interleaved
    tensor only names the cores that wrote it, which its producer's grid change already shows."""
    if param != "grid" or operand is None:
        return True
    return any(p.get((operand, None, "memory_layout"), "interleaved") != "interleaved" for p in params)


def _params(memory: str, grid: str, fidelity: str, tensors: str | None) -> dict[_Key, str]:
    """(operand, result, parameter) -> value of one op record: its outputs, the op, its inputs, the
    order changes are listed in; empty values (not recorded) left out. The memory column stands
    for the first output's memory in records without tensors; an output's grid is the op's."""
    described = json.loads(tensors) if tensors else []
    found = {(None, 0, "memory"): memory}
    for tensor in described:
        if tensor["role"].startswith("out"):
            found.update({(None, int(tensor["role"][3:]), param): tensor.get(param, "") for param in TENSOR_PARAMS})
    found.update({(None, None, param): value for param, value in zip(OP_PARAMS, (grid, fidelity))})
    for tensor in described:
        if tensor["role"].startswith("in"):
            index = int(tensor["role"][2:])
            found.update({(index, None, param): tensor.get(param, "") for param in (*TENSOR_PARAMS, "grid")})
    return {key: value for key, value in found.items() if value}


STAT_KEYS = ("name", "kind")


def _percentile(ordered: list[float], q: float) -> float:
    """The q-th percentile of sorted values, interpolated linearly between neighbours (numpy's default)."""
    at = q / 100 * (len(ordered) - 1)
    low = int(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def op_statistics(session: Session, run_id: int, by: str = "name") -> list[dict]:
    """Per op name (or per op kind, by="kind"): count, total, self, mean, min, max, median and p90
    of device durations in ns, and the share of the run (its step, host and idle time included) in
    %; by total descending. Ops do not nest inside each other, so an op's self time is its total."""
    if by not in STAT_KEYS:
        raise ValueError(f"statistics by {by!r}; one of {', '.join(STAT_KEYS)}")
    if not 0 < run_id <= MAX_ID:
        raise RunNotFound(run_id)
    groups: dict[str, list[float]] = {}
    # the two columns, not whole records: their tensors and bytes are JSON to decode
    for key, duration in session.execute(
        select(getattr(OpRecord, by), OpRecord.duration_ns).where(OpRecord.run_id == run_id).order_by(OpRecord.start_ns)
    ):
        groups.setdefault(key, []).append(duration)
    run_ns = session.scalar(select(Run.total_ns).where(Run.id == run_id))
    if run_ns is None:
        raise RunNotFound(run_id)
    run_ns = run_ns or 1.0
    rows = []
    for key, durations in groups.items():
        values = sorted(durations)  # most groups hold one op or a few: plain Python beats numpy's per-call cost
        total = sum(values)
        rows.append(
            {
                by: key,
                "count": len(values),
                "total_ns": total,
                "self_ns": total,
                "mean_ns": total / len(values),
                "min_ns": values[0],
                "max_ns": values[-1],
                "median_ns": _percentile(values, 50),
                "p90_ns": _percentile(values, 90),
                "pct_of_run": total / run_ns * 100,
            }
        )
    return sorted(rows, key=lambda row: (-row["total_ns"], row[by]))


def run_id_back(session: Session, back: int = 0) -> int:
    """The id of the newest run (`back` 0), or of the run `back` runs before it, in the order stored."""
    back = min(back, MAX_ID)  # an offset is a 64-bit integer too
    run_id = session.scalar(select(Run.id).order_by(Run.id.desc()).offset(back).limit(1))
    if run_id is None:
        stored = session.scalar(select(func.count(Run.id)))
        if not stored:
            raise LookupError("the database holds no runs yet")
        raise LookupError(f"no run {back} before the newest: the database holds {stored} run(s)")
    return run_id
