"""What the explorer page does, as plain functions of the database and the compiler: the page's
callbacks (app/web/panels) translate between Dash and these, so each step can be tested by
calling it directly. The Explorer owns the workbench's caches of derived views."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from tilescope.compiler.frontend import zoo
from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.frontend.model_refs import example_names
from tilescope.compiler.profiles.measured_ops import MEASURED
from tilescope.compiler.pipeline.compilation import Compilation
from tilescope.compiler.pipeline.op_override import OpOverride
from tilescope.compiler.pipeline.options import DEFAULT_OPTIONS, CompileOptions
from tilescope.compiler.targets.catalog import load_target
from tilescope.compiler.targets.chip import DISPATCH_MODES, Target
from tilescope.compiler.targets.data_file import shown
from tilescope.perfdb import runs as stored_runs
from tilescope.perfdb.diff import Sides
from tilescope.perfdb.errors import RunNotFound
from tilescope.perfdb.statistics import OpStats, op_statistics
from tilescope.perfdb.timeline import counter_envelope
from tilescope.perfdb.schema import Run

from tilescope.app.workbench import runs
from tilescope.app.workbench.diff import DiffView, diff_view
from tilescope.app.workbench.find_zone import FoundZone, kind_ops, op_zones
from tilescope.app.workbench.graph_view import OpMetric, op_metrics
from tilescope.app.workbench.grouping import ScopeTree
from tilescope.app.workbench.kept import Kept
from tilescope.app.workbench.key_locks import KeyLocks
from tilescope.app.workbench.measured_memory import measured_memory_view
from tilescope.app.workbench.measured_runs import is_report, no_model_line
from tilescope.app.workbench.measured_replay import ReplayDone, replay_stored
from tilescope.app.workbench.run_choice import baseline_of, listed_runs, measured_of, shown_runs
from tilescope.app.workbench.measured_summary import ImportSummary
from tilescope.app.workbench.memory_view import MemoryView, memory_view
from tilescope.app.workbench.natural_order import natural_key
from tilescope.app.workbench.model_access import MAX_SOURCE_BYTES, ModelAccess
from tilescope.app.workbench.roofline_view import Roofline, roofline
from tilescope.app.workbench.run_export import export_run
from tilescope.app.workbench.run_labels import overrides_label, run_label
from tilescope.app.workbench.device_split import DeviceSplit, split_by_device, split_each_device
from tilescope.app.workbench.run_view import RunView
from tilescope.app.workbench.timeline_view import TimelineView, counter_steps, timeline, to_run_end
from tilescope.app.workbench.tuning import TuneReport, tune_run
from tilescope.app.workbench.uploads import upload_name, upload_report, uploaded_bytes, uploaded_text

LISTED_MEASURED = 200  # measured runs of other models the runs table lists, the newest
KEPT_PER_VIEW = 32  # runs (or run and level) whose derived views each cache keeps
# one read of a run's view at a time, so the panels asking for it at once compile it once
_READING = KeyLocks()


@dataclass
class Explorer:
    sessions: sessionmaker[Session]
    # what requests may name, and the limits on compiling it; None: the operator's own process,
    # which compiles what it is given
    access: ModelAccess | None = None
    _caches: dict[str, Kept] = field(default_factory=dict, repr=False)  # one per kind of view
    _pid: int = field(default_factory=os.getpid, repr=False)  # the process whose connections the pool holds

    def kept(self, kind: str) -> Kept:
        """The cache of one kind of derived view (a stored run never changes, so neither do they)."""
        return self._caches.setdefault(kind, Kept(KEPT_PER_VIEW))

    # --- models and runs ------------------------------------------------------------------------

    def model_options(self, extra: str | None = None) -> list[str]:
        with self.sessions() as session:
            stored = [r.model_ref for r in stored_runs.list_runs(session)]
        files = self.access.files() if self.access else []
        return list(dict.fromkeys(([extra] if extra else []) + zoo.names() + example_names() + files + stored))

    def upload(
        self,
        filename: str,
        contents: str,
        target: str,
        options: CompileOptions = DEFAULT_OPTIONS,
        on_stage=runs.no_progress,
    ) -> str:
        """Store an uploaded MLIR file, or a PyTorch program saved by torch.export.save (a .pt2,
        read in a child process, no pickle in it opened), as a model with a compiled, simulated
        baseline run under `options`; returns its model reference. `contents` is a data: URL's
        base64 body, as dcc.Upload gives it. Bad files raise TilescopeError with one line naming
        the cause."""
        filename = upload_name(filename)
        if not filename.lower().endswith((".mlir", ".pt2")):
            raise TilescopeError(f"{filename}: not an .mlir or .pt2 file")
        data = uploaded_bytes(filename, contents, MAX_SOURCE_BYTES, "upload")
        text = uploaded_text(filename, data, self.access or ModelAccess(), on_stage)
        # the content's hash tells two uploads of one file name apart
        # ('#' would read as a function selector in a model reference)
        ref = f"upload/{hashlib.sha256(data).hexdigest()[:8]}/{filename.replace('#', '_')}"
        self.ensure_run(ref, target, options, source_text=text, on_stage=on_stage)
        return ref

    def upload_report(self, filename: str, contents: str, on_stage=runs.no_progress) -> ImportSummary:
        """Store an uploaded ops perf report or JSON trace as a measured run (uploads.upload_report)."""
        return upload_report(self.sessions, filename, contents, MAX_SOURCE_BYTES, on_stage)

    def replay(self, run_id: int, target: str | None = None, on_stage=runs.no_progress) -> ReplayDone:
        """Replay a stored measured run and store the replay (measured_replay.replay_stored)."""
        return replay_stored(self.sessions, run_id, target, on_stage)

    def run_options(self, model_ref: str, target: str) -> list[dict]:
        """The model's runs on `target`; a report's, on any (measured on one chip, replayed on others)."""
        with self.sessions() as session:
            found = shown_runs(stored_runs.list_runs(session, model_ref), model_ref, target)
            return [{"label": run_label(r), "value": r.id} for r in found]

    def newest_run_id(self, model_ref: str, target: str) -> int | None:
        with self.sessions() as session:
            if is_report(model_ref):
                return next((r.id for r in stored_runs.list_runs(session, model_ref)), None)
            return stored_runs.newest_run_id(session, model_ref, target)

    def ensure_run(
        self,
        model_ref: str,
        target: str,
        options: CompileOptions = DEFAULT_OPTIONS,
        source_text: str | None = None,
        on_stage=runs.no_progress,
    ) -> int:
        """The baseline run of a model on a target under `options`' policy and dispatch (the
        newest run with no overrides: what the model is before anyone tuned it), compiling and
        simulating one if there is none: from `source_text`, else the text stored with the model's
        runs (an upload, or a file changed or gone since), else the file or zoo model itself.
        Under `access`, the model and the target must be ones a request may name, and the compile
        is isolated."""
        if not model_ref or not target:
            raise TilescopeError("choose a model and a target")
        if is_report(model_ref):  # measured: its newest measured run, on the chip it was measured on
            return measured_of(self.runs_of(model_ref), model_ref)
        if options.dispatch not in DISPATCH_MODES:
            raise TilescopeError(f"dispatch must be one of {', '.join(DISPATCH_MODES)}, got {shown(options.dispatch)}")
        with self.sessions() as session:
            stored = stored_runs.list_runs(session, model_ref)
            found = baseline_of(stored, target, options)
            if found is not None:
                return found
            if source_text is None and stored:
                source_text = stored_runs.get_run(session, stored[0].id).model.source_text
        if self.access is not None:
            if source_text is None:
                source_text = self.access.source(model_ref)
            target_source = self.access.target_source(target, self._stored_target)
            return self.access.compile_new(
                self.sessions, model_ref, target, options, source_text, target_source, on_stage
            )
        return runs.store_baseline(self.sessions, model_ref, target, options, source_text, on_stage=on_stage)

    def baseline_id(self, run: RunView) -> int | None:
        """The baseline of the model, target, policy and dispatch a run was made with (None: none
        stored), as choosing them opens it."""
        return baseline_of(self.runs_of(run.model_ref), run.target_ref, run.options)

    def target(self, target_ref: str | None) -> Target:
        """The target a page names (under `access`: a built-in one, or one a stored run kept)."""
        if not target_ref:
            raise TilescopeError("no target chosen")
        if self.access is None:
            return load_target(target_ref)
        return load_target(target_ref, self.access.target_source(target_ref, self._stored_target))

    def _stored_target(self, target_ref: str) -> str | None:
        with self.sessions() as session:
            return stored_runs.target_description(session, target_ref)

    def find_run(self, run_id: int) -> Run | None:
        try:
            return self.run(run_id)
        except RunNotFound:
            return None

    def run(self, run_id: int) -> Run:
        with self.sessions() as session:
            return stored_runs.get_run(session, run_id)

    def view(self, run_id: int) -> RunView:
        """The run as every panel shows it: read once, then shared by them all (the panels that
        ask for it at once wait for the one that reads it)."""
        kept = self.kept("run")
        found = kept.get(run_id)
        if found is not None:
            return found
        with _READING.holding(run_id):
            return kept.of(run_id, lambda: self._read_view(run_id))

    def _read_view(self, run_id: int, compilation: Compilation | None = None) -> RunView:
        run = self.run(run_id)
        options = runs.options_of(run)
        if is_report(run.model_ref):  # made from a report (measured, or replayed): no model to compile
            return RunView.of(run, options, None, load_target(runs.target_of(run), run.target.description or None))
        return RunView.of(run, options, compilation or self._compile(run, options))

    def _compile(self, run: Run, options: CompileOptions) -> Compilation:
        """The run's compilation. Under `access`, a model this process has not compiled yet is read
        back from disk if kept there (by the child that stored the run, say), else compiled in a
        child process within the server's limits (--max-ops, memory, time), then kept here; one it
        has is compiled here, building on that (a few ops changed, as a re-run)."""
        inputs = _compile_inputs(run, options)
        if self.access is None or runs.builds_on(inputs):
            return inputs.compile()
        if (kept := runs.kept_on_disk(inputs, self.access.max_ops)) is not None:
            return kept

        def work(_say) -> Compilation:
            self.access.check_ops(run.model_ref, run.model.source_text)
            compilation = inputs.compile()
            runs.finish_keeping()
            return compilation

        return runs.adopt(self.access.isolated(work, f"run {run.id}"), inputs)

    def runs_of(self, model_ref: str) -> list[Run]:
        with self.sessions() as session:
            return stored_runs.list_runs(session, model_ref)

    def listed_runs(self, model_ref: str) -> list[Run]:
        """The model's runs, then the newest measured runs of every other (run_choice.listed_runs)."""
        with self.sessions() as session:
            measured = stored_runs.list_runs(session, kind=MEASURED, limit=LISTED_MEASURED)
            return listed_runs(stored_runs.list_runs(session, model_ref), measured)

    # --- op records -------------------------------------------------------------------------------

    def op_records(self, run_id: int) -> list:
        """The run's op records, by start, without their bytes by path (kept: most views read them)."""
        return self.kept("records").of(run_id, lambda: self._op_records(run_id))

    def _op_records(self, run_id: int, moved: bool = False) -> list:
        with self.sessions() as session:
            return stored_runs.op_records(session, run_id, moved=moved)

    def durations(self, run_id: int) -> dict[str, float]:
        return {r.name: r.duration_ns for r in self.op_records(run_id)}

    def op_record(self, run_id: int, name: str):
        with self.sessions() as session:
            return stored_runs.op_record(session, run_id, name)

    # --- views of one run -------------------------------------------------------------------------

    def scope_tree(self, run: RunView, level: str) -> ScopeTree:
        """The groups of a run's graph at a level (kept: a selection or a search reuses them)."""
        return self.kept("groups").of((run.id, level), lambda: ScopeTree(run.compilation.graph_at(level)))

    def op_metrics(self, run: RunView, baseline_id: int | None = None) -> dict[str, OpMetric]:
        """What the graph is coloured by (kept: every selection recolours the graph)."""
        return self.kept("metrics").of(
            (run.id, baseline_id),
            lambda: op_metrics(
                run.compilation, self.op_records(run.id), self.durations(baseline_id) if baseline_id else {}
            ),
        )

    def timeline(
        self, run: RunView, window: tuple[float, float] | None = None, pixels: int = 1600, engines: bool = False
    ) -> TimelineView:
        with self.sessions() as session:
            return timeline(session, run, window, pixels, engines)

    def counters(self, run_id: int) -> dict[str, list[tuple[float, float]]]:
        """The timeline's counter plots (kept: rows added or a zoom draw them again)."""
        return self.kept("counters").of(run_id, lambda: self._counter_steps(run_id))

    def _counter_steps(self, run_id: int) -> dict[str, list[tuple[float, float]]]:
        end_ns = self.view(run_id).total_ns  # the run as the other views read it: one read
        with self.sessions() as session:
            return counter_steps(session, run_id, end_ns)

    def find_zone(
        self, run_id: int, op: str | None = None, kind: str | None = None, by: str = "kind"
    ) -> list[FoundZone]:
        """Tracy's find zone: one op's zones, one per core it ran on, or every op of one kind (or op code)."""
        if kind is not None:
            return kind_ops(self.op_records(run_id), kind, by)
        with self.sessions() as session:
            return op_zones(session, run_id, op)

    def statistics(self, run_id: int, by: str = "name") -> list[OpStats]:
        """perfdb's statistics rows, equal totals in the natural order of their names."""
        with self.sessions() as session:
            rows = op_statistics(session, run_id, by)
        return sorted(rows, key=lambda row: (-row.total_ns, natural_key(row.group)))

    def idle_ns(self, run: RunView) -> float:
        """The step's time with no op running: the device waiting on the host to issue the next."""
        return split_each_device(self.op_records(run.id), run.tracks, run.total_ns)[0].idle_ns

    def device_split(self, run: RunView) -> list[DeviceSplit]:
        """Kept: the statistics tab asks again on every change of its table."""
        return self.kept("devices").of(
            run.id, lambda: split_by_device(self._op_records(run.id), run.tracks, run.total_ns)
        )

    def roofline(self, run: RunView) -> Roofline:
        """Kept: a selection redraws it."""
        return self.kept("roofline").of(run.id, lambda: roofline(run.target, self._op_records(run.id, moved=True)))

    def memory(self, run: RunView) -> MemoryView:
        with self.sessions() as session:
            envelope = to_run_end(counter_envelope(session, run.id, "l1_bytes"), run.total_ns)
        if run.compilation is None:
            return self.kept("memory").of(run.id, lambda: self._measured_memory(run, envelope))
        return memory_view(run.compilation, envelope)

    def _measured_memory(self, run: RunView, envelope: list[tuple[float, float]]) -> MemoryView:
        """A measured run's L1: what its report says lives there (read again from the report it kept)."""
        return measured_memory_view(self.run(run.id).model.source_text, run.model_name, run.target, envelope)

    def diff(self, a: int, b: int) -> DiffView:
        """app.workbench.diff.compare of b against a, as the compare view shows it."""
        durations = Sides(*([r.duration_ns for r in self.op_records(i)] for i in (a, b)))
        with self.sessions() as session:
            return diff_view(session, a, b, durations)

    # --- re-runs and exports ----------------------------------------------------------------------

    def apply_overrides(
        self, run_id: int, overrides: Sequence[OpOverride], on_stage=runs.no_progress
    ) -> tuple[int | None, list[dict]]:
        """Re-run `run_id` with `overrides`, each replacing any earlier override of the same op
        (and operand or result). Returns the new run id (None when nothing was stored) and every
        override's outcome; the new run's view is kept, for the panels that show it next."""
        parent = self.view(run_id)
        combined = parent.rerun_with(overrides)
        result = runs.execute(
            self.sessions,
            parent.model_ref,
            parent.target_ref,
            combined,
            label=overrides_label(combined.overrides, overrides),
            parent_id=parent.id,
            source_text=parent.compiled.model.text,
            target_source=parent.target_source,
            on_stage=on_stage,
        )
        if result.run_id is not None:
            try:
                self.kept("run").keep(result.run_id, self._read_view(result.run_id, result.compilation))
            except SQLAlchemyError:  # stored: its view is read again where it is shown, which says why not
                pass
        return result.run_id, [o.as_dict() for o in result.compilation.override_outcomes]

    def tune(self, run_id: int, progress=runs.no_progress, **search) -> TuneReport:
        """Search overrides from run `run_id` and store the best set as its child
        (app.workbench.tuning.tune_run takes `search`: knobs, budget, seed, cancelled...). Under
        `access`, the whole of it runs in a child process within the server's limits: --max-ops,
        memory, and its budget plus a compile's time."""
        if self.access is None:
            return tune_run(self.sessions, self.view(run_id), progress=progress, **search)
        run = self.run(run_id)
        if is_report(run.model_ref):
            raise TilescopeError(no_model_line(run.model_ref, run.kind))

        def work(say) -> TuneReport:
            self.in_new_process()
            self.access.check_ops(run.model_ref, run.model.source_text)
            options = runs.options_of(run)
            view = RunView.of(run, options, _compile_inputs(run, options).compile())
            report = tune_run(self.sessions, view, progress=say, **search)
            runs.finish_keeping()
            return report.summary()

        seconds = (search.get("budget_s") or 0.0) + self.access.seconds
        return self.access.isolated(work, f"tune of run {run_id}", progress, seconds)

    def in_new_process(self) -> None:
        """A background job runs in a forked process: it must not share the parent's pooled
        database connections (https://docs.sqlalchemy.org/en/20/core/pooling.html#pooling-multiprocessing)."""
        if os.getpid() != self._pid:
            self.sessions.kw["bind"].dispose(close=False)
            self._pid = os.getpid()

    def export(self, run_id: int, fmt: str) -> tuple[str, str, str | None]:
        with self.sessions() as session:
            return export_run(session, run_id, fmt)


def _compile_inputs(run: Run, options: CompileOptions) -> runs.CompileInputs:
    """What a stored run is compiled from: its kept model text and target description."""
    return runs.CompileInputs(
        run.model_ref,
        runs.target_of(run),
        options,
        run.model.source_text,
        run.target.description or None,
    )
