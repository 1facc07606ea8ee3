"""What the explorer page does, as plain functions of the database and the compiler.

Callbacks (callbacks.py) only unpack Dash inputs and call these, so each step can be tested by
calling it directly.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import numpy as np
import re2
from sqlalchemy.orm import Session, sessionmaker

from compiler import zoo
from compiler.errors import TilescopeError
from compiler.models import example_names
from compiler.override import OpOverride
from compiler.policies import DEFAULT_POLICY
from compiler.passes.plan_memory import l1_live_at
from compiler.pipeline import Compilation
from compiler.simulator import ENGINES
from compiler.target import Target, load_target
from overrides import format_item, parse_item
from overrides.formats import MAX_FILE_BYTES, MAX_ITEMS, parse_text
from perfdb import queries
from perfdb.schema import Run

from .diff import compare
from .grouping import ScopeTree
from .kept import Kept
from .model_access import MAX_SOURCE_BYTES, ModelAccess
from .run_export import export_run
from .runs import no_progress, compile_cached, execute, store_baseline, target_of


@dataclass(frozen=True)
class OpMetric:
    """What the graph can be coloured by, for one op of a run."""

    duration_ns: float
    bound: str
    pct_peak: float
    memory: str | None  # where its output lives (None before the layout level decides)
    delta_ns: float | None  # its duration minus the baseline run's (None without a baseline)


DEVICE_ROW = "device"  # the timeline's top row: each op once, from its start to its end
CORE_ZONE_BUDGET = 12_000  # core zones one timeline figure draws at once (WebGL keeps this smooth)


@dataclass(frozen=True)
class TimelineView:
    items: list  # the device row's ops, then the core rows' zones and markers
    hidden_cores: int  # core rows left out of this window (too many zones), 0 when drawn
    core_zones: int  # zones the core rows hold in the window


KEPT_PER_VIEW = 32  # runs (or run and level) whose derived views each cache keeps


def _views() -> Kept:
    return Kept(KEPT_PER_VIEW)


@dataclass
class Explorer:
    sessions: sessionmaker[Session]
    _trees: Kept = field(default_factory=_views, repr=False)  # (run id, level) -> ScopeTree
    _metrics: Kept = field(default_factory=_views, repr=False)  # (run id, baseline id) -> op metrics
    _rooflines: Kept = field(default_factory=_views, repr=False)  # run id -> roofline points, roofs, peak
    _counters: Kept = field(default_factory=_views, repr=False)  # run id -> the timeline's counter steps
    _records: Kept = field(default_factory=_views, repr=False)  # run id -> its op records
    _pid: int = field(default_factory=os.getpid, repr=False)  # the process whose connections the pool holds
    # what requests may name, and the limits on compiling it; None: the operator's own process,
    # which compiles what it is given
    access: ModelAccess | None = None

    # --- runs -----------------------------------------------------------------------------------

    def model_options(self, extra: str | None = None) -> list[str]:
        with self.sessions() as session:
            stored = [r.model_ref for r in queries.list_runs(session)]
        files = self.access.files() if self.access else []
        return list(dict.fromkeys(([extra] if extra else []) + zoo.names() + example_names() + files + stored))

    def upload(
        self, filename: str, contents: str, target: str, policy: str = DEFAULT_POLICY, on_stage=no_progress
    ) -> str:
        """Store an uploaded MLIR file (a data: URL's base64 body, as dcc.Upload gives it) as a
        model with a compiled, simulated baseline run; returns its model reference. Bad files
        raise TilescopeError with one line naming the cause."""
        filename = upload_name(filename)
        if not filename.lower().endswith(".mlir"):
            raise TilescopeError(f"{filename}: not an .mlir file")
        data = _uploaded(filename, contents, MAX_SOURCE_BYTES, "upload")
        try:
            text = data.decode()
        except UnicodeDecodeError:
            raise TilescopeError(f"{filename}: not MLIR text (not UTF-8)") from None
        # the content's hash tells two uploads of one file name apart
        # ('#' would read as a function selector in a model reference)
        ref = f"upload/{hashlib.sha256(data).hexdigest()[:8]}/{filename.replace('#', '_')}"
        self.ensure_run(ref, target, policy, source_text=text, on_stage=on_stage)
        return ref

    def run_options(self, model_ref: str, target: str) -> list[dict]:
        with self.sessions() as session:
            runs = [r for r in queries.list_runs(session, model_ref) if target_of(r) == target]
            return [{"label": run_label(r), "value": r.id} for r in runs]

    def newest_run_id(self, model_ref: str, target: str) -> int | None:
        with self.sessions() as session:
            return queries.newest_run_id(session, model_ref, target)

    def ensure_run(
        self,
        model_ref: str,
        target: str,
        policy: str = DEFAULT_POLICY,
        source_text: str | None = None,
        on_stage=no_progress,
    ) -> int:
        """The newest run of a model on a target under a policy, compiling and simulating one if
        there is none: from `source_text`, else the text stored with the model's runs (an upload,
        or a file changed or gone since), else the file or zoo model itself. Under `access`, the
        model and the target must be ones a request may name, and the compile is isolated."""
        if not model_ref or not target:
            raise TilescopeError("choose a model and a target")
        with self.sessions() as session:
            runs = queries.list_runs(session, model_ref)
            for run in runs:
                if target_of(run) == target and run.policy == policy:
                    return run.id
            if source_text is None and runs:
                source_text = queries.get_run(session, runs[0].id).model.source_text
        if self.access is not None:
            if source_text is None:
                source_text = self.access.source(model_ref)
            target_source = self.access.target_source(target, self._stored_target)
            return self.access.compile_new(
                self.sessions, model_ref, target, policy, source_text, target_source, on_stage
            )
        return store_baseline(self.sessions, model_ref, target, policy, source_text, on_stage=on_stage)

    def target(self, target_ref: str | None) -> Target:
        """The target a page names (under `access`: a built-in one, or one a stored run kept)."""
        if not target_ref:
            raise TilescopeError("no target chosen")
        if self.access is None:
            return load_target(target_ref)
        return load_target(target_ref, self.access.target_source(target_ref, self._stored_target))

    def _stored_target(self, target_ref: str) -> str | None:
        with self.sessions() as session:
            return queries.target_description(session, target_ref)

    def find_run(self, run_id: int) -> Run | None:
        try:
            return self.run(run_id)
        except queries.RunNotFound:
            return None

    def run(self, run_id: int) -> Run:
        with self.sessions() as session:
            return queries.get_run(session, run_id)

    def compilation(self, run: Run) -> Compilation:
        compilation, _ = compile_cached(
            run.model_ref,
            target_of(run),
            tuple(run.overrides),
            run.model.source_text,
            run.policy,
            run.l1_usage_cap,
            run.target.description or None,
        )
        return compilation

    def scope_tree(self, run: Run, level: str) -> ScopeTree:
        """The groups of a run's graph at a level (kept: a selection or a search reuses them)."""
        return self._trees.of((run.id, level), lambda: ScopeTree(self.compilation(run).graph_at(level)))

    def op_metrics(self, run_id: int, compilation: Compilation, baseline_id: int | None = None) -> dict[str, OpMetric]:
        """Each timed op's duration, bound, % of peak, output memory and delta vs a baseline run
        (kept: a stored run never changes, and every selection recolours the graph)."""
        return self._metrics.of((run_id, baseline_id), lambda: self._op_metrics(run_id, compilation, baseline_id))

    def _op_metrics(self, run_id: int, compilation: Compilation, baseline_id: int | None) -> dict[str, OpMetric]:
        layout = compilation.levels["layout"]
        records = self.op_records(run_id)
        base = self.durations(baseline_id) if baseline_id else {}

        placed = {op.name: layout.tensors[op.outputs[0]].layout for op in layout.ops if op.outputs}
        return {
            r.name: OpMetric(
                r.duration_ns,
                r.bound,
                r.pct_peak,
                placed[r.name].memory if placed.get(r.name) else None,
                r.duration_ns - base[r.name] if r.name in base else None,
            )
            for r in records
        }

    def op_records(self, run_id: int) -> list:
        """The run's op records, by start, without their bytes by path (kept: most views read them,
        and a stored run never changes)."""
        return self._records.of(run_id, lambda: self._op_records(run_id))

    def _op_records(self, run_id: int, moved: bool = False) -> list:
        with self.sessions() as session:
            return queries.op_records(session, run_id, moved=moved)

    def durations(self, run_id: int) -> dict[str, float]:
        return {r.name: r.duration_ns for r in self.op_records(run_id)}

    def op_record(self, run_id: int, name: str):
        with self.sessions() as session:
            return queries.op_record(session, run_id, name)

    def find_zone(self, run_id: int, op: str | None = None, kind: str | None = None) -> list[float]:
        """Tracy's find zone: the durations (ns) of one op's zones, one per core it ran on, or of
        every op of one kind."""
        with self.sessions() as session:
            if kind is not None:
                return [r.duration_ns for r in self.op_records(run_id) if r.kind == kind]
            record = queries.op_record(session, run_id, op) if op else None
            if record is None:
                return []
            # the op's own time window bounds the scan; the device row is not a core
            zones = queries.zones(
                session, run_id, record.start_ns, record.start_ns + record.duration_ns, depth=0, op=op
            )
            return [z.end_ns - z.start_ns for z in zones if z.track.startswith("core ")]

    def timeline(
        self,
        run_id: int,
        window: tuple[float, float] | None = None,
        pixels: int = 1600,
        engines: bool = False,
    ) -> TimelineView:
        """The timeline over `window` (ns; default the whole run): a device row of the ops, then
        one row per core at the level of detail of `pixels` across (short zones come merged into
        "N zones" markers), each with its engines' rows (reader, compute, writer) if `engines`.
        When the window holds more core zones than a figure draws quickly (each op has one per
        core it runs on, and one per engine), the core rows wait until the user zooms in."""
        with self.sessions() as session:
            run = queries.get_run(session, run_id)
            t0, t1 = window or (0.0, max(run.total_ns, 1.0))
            records = queries.op_records_between(session, run_id, t0, t1)
            # every op on the device row, unless there are more than a figure draws quickly: then
            # the ops shorter than a pixel are merged, as on the core rows
            device = queries.merged(
                DEVICE_ROW,
                [r.name for r in records],
                [r.start_ns for r in records],
                [r.start_ns + r.duration_ns for r in records],
                (t1 - t0) / pixels if len(records) > CORE_ZONE_BUDGET else 0.0,
            )
            tracks = [t for t in run.tracks if t.startswith("core ") and (engines or "/" not in t)]
            cores = sum(1 for t in tracks if "/" not in t)
            core_zones = sum(r.cores for r in records) * (1 + len(ENGINES) if engines else 1)
            if core_zones > CORE_ZONE_BUDGET:
                return TimelineView(device, cores, core_zones)
            return TimelineView(
                device + queries.timeline_window(session, run_id, t0, t1, (t1 - t0) / pixels, tracks), 0, core_zones
            )

    def counters(self, run_id: int) -> dict[str, list[tuple[float, float]]]:
        """The timeline's counter plots: L1 in use on the fullest core, and each shared memory's
        bandwidth in use, as (t_ns, value) steps. Kept: a stored run never changes."""
        return self._counters.of(run_id, lambda: self._counter_steps(run_id))

    def _counter_steps(self, run_id: int) -> dict[str, list[tuple[float, float]]]:
        with self.sessions() as session:
            steps = {"l1_bytes": queries.counter_envelope(session, run_id, "l1_bytes")}
            for name in queries.counter_names(session, run_id):
                if name.endswith("_bytes_per_s"):
                    # an op's end (0) and the next op's start share a time: the start holds after it
                    steps[name] = sorted((c.t_ns, c.value) for c in queries.counters(session, run_id, name))
        return {name: s for name, s in steps.items() if s}

    # --- analysis views -----------------------------------------------------------------------------

    def statistics(self, run_id: int, by: str = "name") -> list[dict]:
        with self.sessions() as session:
            return queries.op_statistics(session, run_id, by)

    def roofline(self, run_id: int) -> tuple[list[dict], dict[str, float], float]:
        # kept: a stored run never changes, and a selection redraws it
        return self._rooflines.of(run_id, lambda: self._roofline(run_id))

    def _roofline(self, run_id: int) -> tuple[list[dict], dict[str, float], float]:
        """The run's compute ops as roofline points, the roofs (bytes/s of DRAM and of all cores'
        own memories) and the matrix peak (FLOP/s) of the target it ran on. An op is placed by
        its DRAM bytes, or by its own-memory bytes if it read no DRAM."""
        run = self.run(run_id)
        target = load_target(target_of(run), run.target.description or None)  # no need to compile for it
        dram, local = target.dram, target.core_memory
        points = []
        for record in self._op_records(run_id, moved=True):
            moved = record.bytes.get(dram.name, 0.0)
            memory = dram.name
            if not moved:
                moved, memory = record.bytes.get(local.name, 0.0), local.name
            if record.flops <= 0 or moved <= 0 or record.duration_ns <= 0:
                continue  # data movement only: no point on a roofline
            points.append(
                {
                    "name": record.name,
                    "kind": record.kind,
                    "bound": record.bound,
                    "memory": memory,
                    "intensity": record.flops / moved,
                    "achieved": record.flops / (record.duration_ns * 1e-9),
                }
            )
        roofs = {dram.name: dram.bytes_per_s, local.name: local.bytes_per_s * target.cores}
        return points, roofs, target.peak_flops("bf16")

    def memory(self, run_id: int) -> dict:
        """L1 over the run (the fullest core at each op), its capacity, and what fills the
        fullest core at the fullest op: the tensors placed there and the op's circular buffers."""
        run = self.run(run_id)
        compilation = self.compilation(run)
        target, kernel = compilation.target, compilation.kernel
        with self.sessions() as session:
            envelope = queries.counter_envelope(session, run_id, "l1_bytes")
        view = {"envelope": envelope, "capacity": target.core_memory.capacity_bytes, "peak": None}
        placed = [op for op in kernel.ops if op.meta.get("l1_bytes")]
        if not placed:
            return view
        op = max(placed, key=lambda o: o.meta["l1_bytes"])
        per_core = op.meta.get("l1_live_per_core")
        core = (
            tuple(int(i) for i in np.unravel_index(int(per_core.argmax()), per_core.shape))
            if per_core is not None
            else (0, 0)
        )
        work = op.meta.get("kernel")
        group = next((g for g in work.groups if core in g.cores), work.groups[0]) if work and work.groups else None
        view["peak"] = {
            "op": op.name,
            "core": core,
            "bytes": op.meta["l1_bytes"],
            "tensors": l1_live_at(kernel, target, op.name, core),
            "cbs": [(f"{cb.name} ({cb.tensor})", cb.bytes, cb.pages) for cb in group.cbs] if group else [],
        }
        return view

    def runs_of(self, model_ref: str) -> list[Run]:
        with self.sessions() as session:
            return queries.list_runs(session, model_ref)

    def diff(self, a: int, b: int) -> dict:
        """app.workbench.diff.compare of b against a, with both runs and their op durations for the compare view."""
        with self.sessions() as session:
            found = compare(session, a, b)
            runs = {i: queries.get_run(session, i) for i in (a, b)}
        durations = {i: [r.duration_ns for r in self.op_records(i)] for i in (a, b)}
        found["runs"] = runs
        found["durations"] = durations
        return found

    # --- overrides --------------------------------------------------------------------------------

    def apply_overrides(
        self, run_id: int, overrides: Sequence[OpOverride], on_stage=no_progress
    ) -> tuple[int | None, list[dict]]:
        """Re-run `run_id` with `overrides`, each replacing any earlier override of the same op
        (and operand or result).

        Returns the new run id (None when nothing was stored) and every override's outcome."""
        parent = self.run(run_id)
        result = execute(
            self.sessions,
            parent.model_ref,
            target_of(parent),
            _combined(parent, overrides),
            label=", ".join(format_item(o) for o in overrides),
            parent_id=parent.id,
            dispatch=parent.dispatch,
            policy=parent.policy,
            l1_usage_cap=parent.l1_usage_cap,
            source_text=parent.model.source_text,
            target_source=parent.target.description or None,
            on_stage=on_stage,
        )
        return result.run_id, [o.as_dict() for o in result.compilation.override_outcomes]

    def in_new_process(self) -> None:
        """A background job runs in a forked process: it must not share the parent's pooled
        database connections (https://docs.sqlalchemy.org/en/20/core/pooling.html#pooling-multiprocessing)."""
        if os.getpid() != self._pid:
            self.sessions.kw["bind"].dispose(close=False)
            self._pid = os.getpid()

    def export(self, run_id: int, fmt: str) -> tuple[str, str]:
        with self.sessions() as session:
            return export_run(session, run_id, fmt)


def _combined(parent: Run, overrides: Sequence[OpOverride]) -> list[str]:
    """The parent run's overrides, each replaced by any of `overrides` of the same op part, then `overrides`."""
    replaced = {o.key for o in overrides}
    return [*(s for s in parent.overrides if parse_item(s).key not in replaced), *(format_item(o) for o in overrides)]


def run_label(run: Run) -> str:
    label = run.label or "baseline"
    return f"#{run.id} {label} [{run.policy}] ({run.total_ns / 1e3:,.1f} us)"


DEFAULT_FIDELITY_CHOICE = "default"
DEFAULT_CHOICE = "default"  # tile and double buffering as the compiler picks them
OUTPUT = "output"  # the override lays out the op's outputs (else "operand N": that input)
TILE_CHOICES = (DEFAULT_CHOICE, "32x32", "16x32", "8x32", "4x32", "2x32", "1x32")  # tt-metal's tile shapes
DOUBLE_BUFFER_CHOICES = {DEFAULT_CHOICE: None, "on": True, "off": False}
_BLOCK = re.compile(r"\s*(\d+)\s*x\s*(\d+)\s*x\s*(\d+)\s*")


def form_override(
    op: str,
    memory,
    memory_layout,
    rows,
    cols,
    layout,
    dtype,
    fidelity=None,
    applies_to=OUTPUT,
    tile=DEFAULT_CHOICE,
    block=None,
    double_buffer=DEFAULT_CHOICE,
) -> OpOverride:
    """The override the form describes; every layout field is set, so it states the layout in full;
    the math fidelity, tile, matmul blocking and double buffering only when chosen. It is checked
    as its tt-mlir spelling would be, so the form and a file reject the same things."""
    if not op:
        raise TilescopeError("select an op first, or add overrides to the pending list")
    if None in (memory, memory_layout, rows, cols, layout, dtype):
        raise TilescopeError("fill in every field of the override form")
    blocking = None
    if block and block.strip():
        found = _BLOCK.fullmatch(block)
        if not found:
            raise TilescopeError(f"block {block!r}: expected M x N x K tiles per core, e.g. 4x4x2")
        blocking = tuple(int(v) for v in found.groups())
    ov = OpOverride(
        op,
        (int(rows), int(cols)),
        memory,
        memory_layout,
        layout,
        dtype,
        None if fidelity in (None, DEFAULT_FIDELITY_CHOICE) else fidelity,
        block=blocking,
        double_buffer=DOUBLE_BUFFER_CHOICES.get(double_buffer or DEFAULT_CHOICE),
        tile=None if tile in (None, DEFAULT_CHOICE) else tuple(int(v) for v in tile.split("x")),
        operand=int(applies_to.removeprefix("operand ")) if applies_to and applies_to.startswith("operand ") else None,
    )
    return parse_item(format_item(ov))


def pending_overrides(pending: Sequence[str]) -> list[OpOverride]:
    """The page's pending list, read: at most MAX_ITEMS (a file's limit), counted before any is
    parsed, since the list comes from the page and may be anything."""
    if len(pending) > MAX_ITEMS:
        raise TilescopeError(f"{len(pending):,} pending overrides: at most {MAX_ITEMS:,}")
    return [parse_item(s) for s in pending]


def with_pending(pending: Sequence[str], *overrides: OpOverride) -> list[str]:
    """The pending list with `overrides` added in order, each in place of any earlier pending
    override of the same op part. One pass: an imported file may hold 100,000 items."""
    if len(pending) + len(overrides) > MAX_ITEMS:
        raise TilescopeError(f"{len(pending) + len(overrides):,} pending overrides: at most {MAX_ITEMS:,}")
    kept = {o.key: s for o, s in zip(pending_overrides(pending), pending)}
    for override in overrides:
        kept.pop(override.key, None)  # re-inserted last, as if removed and added
        kept[override.key] = format_item(override)
    return list(kept.values())


def imported_overrides(filename: str, contents: str) -> tuple[list[OpOverride], list[str]]:
    """The overrides in an uploaded file of any format users exchange (tilescope JSON, TT-Explorer
    JSON, tt-mlir options), and a line per item that could not be read (the first SHOWN_PROBLEMS)."""
    filename = upload_name(filename)
    data = _uploaded(filename, contents, MAX_FILE_BYTES, "overrides file")
    try:
        text = data.decode()
    except UnicodeDecodeError:
        raise TilescopeError(f"{filename}: not a text file of overrides") from None
    problems: list[str] = []
    found = parse_text(text, filename, problems)
    if len(problems) > SHOWN_PROBLEMS:
        problems[SHOWN_PROBLEMS:] = [f"... and {len(problems) - SHOWN_PROBLEMS:,} more problems"]
    return found.items, problems


SHOWN_PROBLEMS = 20  # lines of an imported file's problems on the page


def upload_name(filename: str | None, default: str = "upload") -> str:
    """An uploaded file's name as messages and model references show it: its last part, without
    control characters (a newline would break a one-line message), at most 200 characters."""
    name = "".join(ch if ch.isprintable() else "?" for ch in PurePosixPath(filename or default).name)[:200]
    return name or default


def _uploaded(filename: str, contents: str, limit: int, what: str) -> bytes:
    """The bytes of a data: URL as dcc.Upload gives them; refused past `limit` before decoding."""
    body = (contents or "").partition(",")[2]
    if len(body) > (limit + 2) // 3 * 4:  # base64 of `limit` bytes
        raise TilescopeError(
            f"{filename}: {len(body) * 3 / 4 / 2**20:,.1f} MiB is over the {limit // 2**20} MiB {what} limit"
        )
    try:
        return base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        raise TilescopeError(f"{filename}: the upload is damaged (not base64)") from None


def provenance(compilation: Compilation, level: str, name: str | None) -> list[str]:
    """The ops at `level` that stand for the op `name` of any level: the op itself, or the ops it
    was fused from (viewing `input`), or the op it was fused into (viewing a later level)."""
    if not name:
        return []
    graph = compilation.graph_at(level)
    if graph.has_op(name):
        return [name]
    later = compilation.levels["graph"]
    if level == "input" and later.has_op(name):
        return [s for s in later.op(name).source if graph.has_op(s)]
    return [op.name for op in graph.ops if name in op.source]


MAX_PATTERN = 1000  # characters of a search pattern


def search_ops(graph, pattern: str | None) -> list[str]:
    """Ops whose name or kind matches a regular expression (case-insensitive); a bad pattern raises
    TilescopeError naming the fault. RE2 matches in time linear in the text whatever the pattern
    (Python's re backtracks: one pattern typed into a search box could hold a server's worker),
    within a bounded memory; it has no backreferences or lookaround, which a search of op names
    does without."""
    if not pattern:
        return []
    if len(pattern) > MAX_PATTERN:
        raise TilescopeError(f"search: a pattern of at most {MAX_PATTERN} characters")
    try:
        found = re2.compile(pattern, options=_SEARCH_OPTIONS)
    except re2.error as err:
        reason = err.args[0].decode(errors="replace") if err.args and isinstance(err.args[0], bytes) else str(err)
        raise TilescopeError(f"search {pattern!r}: not a regular expression ({reason})") from None
    return [op.name for op in graph.ops if found.search(op.name) or found.search(op.kind)]


_SEARCH_OPTIONS = re2.Options()
_SEARCH_OPTIONS.case_sensitive = False
_SEARCH_OPTIONS.log_errors = False  # a bad pattern is the user's one-line message, not a server log line
_SEARCH_OPTIONS.max_mem = 8 << 20  # bytes a compiled pattern may take; a larger one is an error


def override_choices(target: Target) -> tuple[list, list, list, list]:
    """What the override form offers on a target: its memories, grid sizes up to its grid, and
    the dtypes its matrix engine computes plus the float formats it converts."""
    dtypes = sorted(set(target.matrix.flops_per_cycle) | {"f32", "bf16", "f16"})
    return list(target.memories), list(range(1, target.grid[0] + 1)), list(range(1, target.grid[1] + 1)), dtypes


def form_values(compilation: Compilation, op_name: str | None) -> tuple:
    """Override form defaults: the op's current output layout at the `layout` level, and the
    compiler's own choices for the rest."""
    layout_graph = compilation.levels["layout"]
    if not op_name or not layout_graph.has_op(op_name):
        return (None,) * 7 + (OUTPUT, DEFAULT_CHOICE, "", DEFAULT_CHOICE)
    op = layout_graph.op(op_name)
    if not op.outputs:
        return (None,) * 7 + (OUTPUT, DEFAULT_CHOICE, "", DEFAULT_CHOICE)
    current = layout_graph.tensors[op.outputs[0]].layout
    rows, cols = op.attrs.get("grid", (1, 1))
    fidelity = op.attrs.get("math_fidelity", DEFAULT_FIDELITY_CHOICE)
    return (
        current.memory,
        current.memory_layout,
        rows,
        cols,
        current.layout,
        current.dtype,
        fidelity,
        OUTPUT,
        DEFAULT_CHOICE,
        "",
        DEFAULT_CHOICE,
    )


def applies_to_choices(compilation: Compilation, op_name: str | None) -> list[str]:
    """The op's outputs, or one of its inputs (read through a to_layout in that layout)."""
    layout_graph = compilation.levels["layout"]
    if not op_name or not layout_graph.has_op(op_name):
        return [OUTPUT]
    return [OUTPUT, *(f"operand {i}" for i in range(len(layout_graph.op(op_name).inputs)))]
