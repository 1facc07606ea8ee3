"""The speed and memory goals `tilescope bench` checks, each with its measured figure and whether
it is met: the CLI as a process (start-up, a 100k-op run), the re-runs a tuner makes, and import
against the bare MLIR parse (and Model Explorer's conversion, given its Python).

Goals are checked here, by a benchmark, never by a timed test: a test's timing on a shared
machine says more about the machine than about the code."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from tilescope.compiler.frontend.mlir_import import new_context, parse_module
from tilescope.compiler.frontend.mlir_text import make_parsable
from tilescope.compiler.frontend.model_refs import load_model
from tilescope.compiler.ir.meta import OPERAND_OF
from tilescope.compiler.pipeline.options import GREEDY_L1, CompileOptions
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.sim.simulator import simulate
from tilescope.compiler.targets.catalog import load_target
from tilescope.overrides import parse_item
from tilescope.overrides.search import tune

from tilescope.app.cli import page_timer
from tilescope.app.cli.wide_model import wide_stablehlo

STARTUP_MAX_S = 0.5  # `tilescope --help`
PROCESS_REF = "zoo:bert-base?layers=1040"  # 99,867 ops
PROCESS_MAX_S, PROCESS_MAX_MB = 20.0, 2048.0
RERUN_CASE, RERUN_MAX_S = "10k", 0.5  # one override, compiled, simulated and stored as the app does
BIG_RERUN_CASE, BIG_RERUN_MAX_S = "100k", 1.0  # the same at 100k ops
RERUN_SHARE_MAX = 0.10  # of its parent's timeline bytes, a re-run after one override stores at most
TUNER_REF, TUNER_MIN_PER_S = "zoo:bert-base", 500.0  # one-override trials: compile and simulate
TUNER_TRIALS = 200
PARSE_RATIO_MAX = 10.0  # import -> kernel over the bare MLIR parse
WIDE_OPS, WIDE_RATIO_MAX, WIDE_GROWTH_MAX = 6000, 20.0, 2.1  # `tilescope run` of a wide function: x parse, x per 2x ops
PEER_RATIO_MAX = 1.0  # tilescope's import over Model Explorer's conversion of the same file
PAGE_MAX_S = 15.0  # a never-compiled 100k-op model's page in the browser, saying its stages meanwhile
SEARCH_REF, SEARCH_S = "zoo:llama-3.2-1b", 120.0  # a layout-only search settles, op by op, within this


@dataclass
class Goal:
    goal: str
    measured: str
    met: bool | None  # None: not measured in this run (the reason is in `measured`)

    @property
    def verdict(self) -> str:
        return "-" if self.met is None else "met" if self.met else "NOT MET"


def _cli(*args: str) -> list[str]:
    # the `tilescope` executable's own entry point, with this interpreter
    return [sys.executable, "-c", "from tilescope.app.cli import entry; entry()", *args]


def cli_startup(repeats: int = 5) -> list[float]:
    """Seconds from start to exit of `tilescope --help`, `repeats` times."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(_cli("--help"), check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return times


def process_run(ref: str, db_dir: Path) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of `tilescope run REF` as its own process, storing its run in
    a fresh SQLite database."""
    db = f"sqlite:///{db_dir / 'process.db'}"
    start = time.perf_counter()
    child = subprocess.Popen(_cli("run", ref, "--db", db), stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RuntimeError(f"tilescope run {ref} exited with {child.returncode}")
    return seconds, usage.ru_maxrss / 1024  # KiB on Linux


def parse_seconds(parsable: str, ref: str) -> float:
    """Seconds of MLIR's parser alone on text as import hands it over, in the context tilescope
    parses in: the floor under any import."""
    ctx = new_context()
    start = time.perf_counter()
    with ctx:
        parse_module(parsable, ref, ctx)
    return time.perf_counter() - start


def wide_runs(db_dir: Path, ops: int = WIDE_OPS) -> dict:
    """`tilescope run` as a process on a wide StableHLO function (app/cli/wide_model.py) of `ops`
    ops and of twice as many, each against MLIR's bare parse of its text."""
    found = {}
    for size in (ops, 2 * ops):
        path = db_dir / f"wide{size}.mlir"
        path.write_text(wide_stablehlo(size))
        (db_dir / "process.db").unlink(missing_ok=True)
        seconds, _ = process_run(str(path), db_dir)
        found[size] = {"process_s": seconds, "parse_s": bare_parse_seconds(path.read_text(), str(path))}
    return found


def bare_parse_seconds(text: str, ref: str) -> float:
    """MLIR's parser alone on `text`, best of three."""
    parsable = make_parsable(text, ref)[0]
    return min(parse_seconds(parsable, ref) for _ in range(3))


def tuner_trials(ref: str = TUNER_REF, target_name: str = "wormhole_n150", trials: int = TUNER_TRIALS) -> dict:
    """One-override trials as a search makes them: from the model under greedy-l1 with a captured
    trace (where a search starts), each op in turn with its output moved (to DRAM, or into L1 if
    it is there), compiled since that compilation and simulated with its costs, without the
    timeline's zones; nothing stored."""
    target = load_target(target_name)
    model = load_model(ref)
    options = CompileOptions(policy=GREEDY_L1, dispatch="trace")
    base = compile_model(model, target, options)
    base_sim = simulate(base.kernel, target, "trace")
    layout = base.levels["layout"]
    moved = [
        f"{op.name}={'l1:interleaved' if layout.tensors[op.outputs[0]].layout.memory == 'dram' else 'dram'}"
        for op in layout.ops
        if op.outputs and op.kind != "to_layout" and OPERAND_OF not in op.meta
    ]
    items = [parse_item(moved[i % len(moved)]) for i in range(trials)]
    ops = 0
    start = time.perf_counter()
    for item in items:
        compilation = compile_model(model, target, options.with_overrides((item,)), since=base)
        ops += len(simulate(compilation.kernel, target, "trace", known=base_sim.costs, timeline=False).ops)
    seconds = time.perf_counter() - start
    return {"ref": ref, "trials": trials, "seconds": seconds, "per_s": trials / seconds, "ops_per_s": ops / seconds}


def _judged(name: str, figure: tuple[str, bool] | None, absent: str = "not measured") -> Goal:
    """A goal from its (measured figure, met), or not measured, saying why."""
    return Goal(name, *figure) if figure else Goal(name, absent, None)


def check(cases: list[dict], measured: dict) -> list[Goal]:
    """Each goal against the figures: `cases` as `bench.run` reports them, `measured` what this
    module measured (keys left out were not measured, and say so)."""
    return [*_process_goals(measured), *_rerun_goals(cases, measured), *_import_goals(cases, measured)]


def _process_goals(measured: dict) -> list[Goal]:
    """The CLI and the page as processes, and a search in its budget."""
    startup, process, wide = (measured.get(k) for k in ("startup_s", "process", "wide"))
    page = measured.get("page", "not measured (--quick)")
    search = measured.get("search")
    return [
        _judged(
            f"CLI start-up (`tilescope --help`) <= {STARTUP_MAX_S} s",
            startup and (_median_of(startup), statistics.median(startup) <= STARTUP_MAX_S),
        ),
        _judged(
            f"`tilescope run` of 100k ops as a process <= {PROCESS_MAX_S:g} s and <= {PROCESS_MAX_MB / 1024:g} GB",
            process
            and (
                f"{process[0]:.1f} s, {process[1] / 1024:.2f} GB",
                process[0] <= PROCESS_MAX_S and process[1] <= PROCESS_MAX_MB,
            ),
            "not measured (--quick)",
        ),
        _judged(
            f"a wide {WIDE_OPS}-op StableHLO function, `tilescope run` <= {WIDE_RATIO_MAX:g}x the bare parse,"
            f" <= {WIDE_GROWTH_MAX:g}x at twice the ops",
            wide and _wide_figure(wide),
            "not measured (--quick)",
        ),
        _judged(
            f"a never-compiled 100k-op model's page in the browser <= {PAGE_MAX_S:g} s, with progress",
            isinstance(page, page_timer.PageTiming) and _page_figure(page),
            page if isinstance(page, str) else "",
        ),
        _judged(
            f"a {SEARCH_S:g}-s layout-only search of Llama-3.2-1B (trace) ends on a whole op-by-op pass",
            search and (_search_figure(search), search["settled"]),
            "not measured (--quick)",
        ),
    ]


def _rerun_goals(cases: list[dict], measured: dict) -> list[Goal]:
    """Re-runs after one override, what they store, and a search's trials."""
    tuner = measured.get("tuner")
    rerun = next(
        (c["steps"]["incr rerun"]["s"] for c in cases if c["name"] == RERUN_CASE and "incr rerun" in c["steps"]), None
    )
    big_rerun = next(
        (c["steps"]["incr rerun"]["s"] for c in cases if c["name"] == BIG_RERUN_CASE and "incr rerun" in c["steps"]),
        None,
    )
    shares = [
        (c["name"], c["timeline_bytes"]["rerun"] / c["timeline_bytes"]["run"])
        for c in cases
        if c.get("timeline_bytes", {}).get("run") and c["name"] in (RERUN_CASE, BIG_RERUN_CASE)
    ]
    return [
        _judged(
            f"re-run after one override, 10k ops (compile, simulate, store) <= {RERUN_MAX_S} s",
            rerun is not None and (f"{rerun:.3f} s", rerun <= RERUN_MAX_S),
        ),
        _judged(
            f"re-run of 100k ops after one override (compile, simulate, store) <= {BIG_RERUN_MAX_S} s",
            big_rerun is not None and (f"{big_rerun:.3f} s", big_rerun <= BIG_RERUN_MAX_S),
            "not measured (--quick)",
        ),
        _judged(
            f"a re-run after one override stores <= {RERUN_SHARE_MAX:.0%} of its parent's timeline bytes"
            " (the rest shared, perhaps shifted in time)",
            shares and (", ".join(f"{n} {r:.1%}" for n, r in shares), all(r <= RERUN_SHARE_MAX for _, r in shares)),
        ),
        _judged(
            f"one-override trials on bert-base (compile, simulate) >= {TUNER_MIN_PER_S:g}/s",
            tuner
            and (
                f"{tuner['per_s']:.1f}/s ({tuner['ops_per_s'] / 1e3:.0f}k ops simulated/s)",
                tuner["per_s"] >= TUNER_MIN_PER_S,
            ),
        ),
    ]


def _import_goals(cases: list[dict], measured: dict) -> list[Goal]:
    """Import and compile against the bare parse, and against Model Explorer's conversion."""
    peer = measured.get("peer")
    ratios = [(c["name"], c["compile_s"] / c["parse_s"]) for c in cases if c.get("parse_s")]
    return [
        _judged(
            f"import -> kernel <= {PARSE_RATIO_MAX:g}x the bare MLIR parse, at every size",
            ratios and (", ".join(f"{n} {r:.1f}x" for n, r in ratios), all(r <= PARSE_RATIO_MAX for _, r in ratios)),
        ),
        _judged(
            f"import at or ahead of Model Explorer's conversion (ratio <= {PEER_RATIO_MAX:g} at every size)",
            peer
            and (
                ", ".join(f"{row['name']} {row['ratio']:.2f}" for row in peer),
                all(row["ratio"] <= PEER_RATIO_MAX for row in peer),
            ),
            "not measured (give --peer-python, a Python with ai-edge-model-explorer)",
        ),
    ]


def _wide_figure(wide: dict) -> tuple[str, bool]:
    """The wide function's process over its bare parse, and its growth at twice the ops."""
    one, two = (wide[size] for size in sorted(wide, key=int))
    ratio = one["process_s"] / one["parse_s"]
    growth = two["process_s"] / one["process_s"]
    figure = f"{one['process_s']:.2f} s, {ratio:.0f}x the parse; x{growth:.2f} at twice the ops"
    return figure, ratio <= WIDE_RATIO_MAX and growth <= WIDE_GROWTH_MAX


def llama_search() -> dict:
    """A layout-only search of Llama-3.2-1B under trace dispatch within SEARCH_S, as `tilescope
    tune` makes it (without measuring its parts after): its trials, why it stopped, and where
    its last pass was then."""
    said: list[str] = []
    tuned = tune(
        load_model(SEARCH_REF),
        load_target("wormhole_n150"),
        CompileOptions(dispatch="trace"),
        budget_s=SEARCH_S,
        progress=said.append,
    )
    where = next((line.split("; ", 1)[1] for line in reversed(said) if "; pass " in line), "")
    return {"trials": tuned.trials, "stopped": tuned.stopped, "where": where, "settled": tuned.settled}


def _search_figure(search: dict) -> str:
    where = f", in {search['where']}" if search["where"] and not search["settled"] else ""
    return f"{search['trials']:,} trials; {search['stopped']}{where}"


def _page_figure(page: page_timer.PageTiming) -> tuple[str, bool]:
    """The page's time, and the stages it said on the way (progress: more than one of them)."""
    said = "; ".join(page.stages) or "no stage shown"
    return f"{page.seconds:.1f} s; it said: {said}", page.seconds <= PAGE_MAX_S and len(page.stages) > 1


def _median_of(times: list[float]) -> str:
    return f"{statistics.median(times):.2f} s (median of {len(times)}; {min(times):.2f} to {max(times):.2f})"


def measure(quick: bool, db_dir: Path, progress) -> dict:
    """What the goals need beyond the cases: start-up, the tuner's trials and, unless `quick`,
    the wide function and the 100k-op run as processes, a never-compiled 100k-op page, and a
    search of Llama-3.2-1B."""
    measured: dict = {}
    measured["startup_s"] = cli_startup()
    progress(f"goals: start-up {statistics.median(measured['startup_s']):.2f} s")
    measured["tuner"] = tuner_trials()
    progress(f"goals: {measured['tuner']['per_s']:.1f} one-override trials/s on {TUNER_REF}")
    if not quick:
        measured["wide"] = wide_runs(db_dir)
        seconds = measured["wide"][WIDE_OPS]["process_s"]
        progress(f"goals: tilescope run of a wide {WIDE_OPS}-op function: {seconds:.2f} s")
        measured["process"] = process_run(PROCESS_REF, db_dir)
        progress(f"goals: tilescope run {PROCESS_REF}: {measured['process'][0]:.1f} s")
        measured["page"] = _page(db_dir, progress)
        measured["search"] = llama_search()
        progress(f"goals: a {SEARCH_S:g}-s search of {SEARCH_REF}: {_search_figure(measured['search'])}")
    return measured


def _page(db_dir: Path, progress) -> page_timer.PageTiming | str:
    """The never-compiled page's timing, or why it was not measured."""
    lacking = page_timer.missing()
    if lacking:
        return f"not measured ({lacking})"
    (db_dir / "page").mkdir(exist_ok=True)
    try:
        timing = page_timer.time_page(db_dir / "page")
    except Exception as err:  # noqa: BLE001  # the browser or the server failed: the other goals still count
        return f"not measured ({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''})"[:300]
    progress(f"goals: a never-compiled {page_timer.PAGE_REF} page: {timing.seconds:.1f} s")
    return timing


def as_rows(goals: list[Goal]) -> list[dict]:
    return [{**asdict(g), "verdict": g.verdict} for g in goals]


def format_goals(rows: list[dict]) -> str:
    width = max(len(r["goal"]) for r in rows)
    lines = ["goals:"]
    lines += [f"  {r['goal']:<{width}}  {r['verdict']:<8} {r['measured']}" for r in rows]
    return "\n".join(lines)
