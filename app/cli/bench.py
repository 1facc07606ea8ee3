"""`tilescope bench`: time every hot path on models of growing size, and the memory it takes.

Sizes are zoo models scaled by layer count (BERT-base encoder layers of ~96 ops), plus the real
ResNet-50 of the corpus when it is beside the checkout. For each: generating the MLIR text,
importing it with the MLIR parser, each compiler level, the simulation, and storing the run in a
fresh SQLite database; time per op shows how cost grows with size. Peak RSS is the process's high
water mark after each step (it never goes down, so it reads as "peak so far").
"""

from __future__ import annotations

import json
import os
import platform
import resource
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from tilescope.compiler.frontend import zoo
from tilescope.compiler.frontend.mlir_import import import_mlir
from tilescope.compiler.ir.graph import Graph
from tilescope.compiler.pipeline.compilation import Compilation
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.compiler.pipeline.stages import compile_model, stages
from tilescope.compiler.sim.simulator import SimResult, simulate
from tilescope.compiler.targets.catalog import load_target
from tilescope.overrides import parse_item
from tilescope.perfdb.engine import open_db, session_factory
from tilescope.perfdb.runs import run_id_back
from tilescope.perfdb.shared_blocks import own_bytes
from tilescope.perfdb.statistics import op_statistics
from tilescope.perfdb.store import save_run

from tilescope.app.workbench.explorer import Explorer
from tilescope.app.web.graph_figure import graph_figure
from tilescope.app.workbench.graph_view import op_metrics
from tilescope.app.workbench.grouping import ScopeTree
from tilescope.app.workbench.runs import long_lived, new_run
from tilescope.app.cli import bench_goals
from tilescope.app.cli.bench_goals import bare_parse_seconds
from tilescope.app.cli.bench_perfdb import PIXELS, perfdb_bench
from tilescope.app.cli.bench_perfdb import progress as _progress
from tilescope.app.cli.peer_bench import CORPUS, compare_import, format_rows, peer_files

CORPUS_RESNET = CORPUS / "resnet50_xla.mlir"
SIZES = {  # name -> zoo reference
    "1k": "zoo:bert-base",
    "10k": "zoo:bert-base?layers=104",
    "100k": "zoo:bert-base?layers=1040",
}
QUICK = ("1k", "10k")
PEER_ROUNDS = 5  # interleaved rounds of the import comparison; a row is their median
# a model split over a system of several devices: Llama 3.2 1B prefill, tensor parallel over a T3K
SPLIT = ("llama-1b x8", "zoo:llama-3.2-1b?devices=8", "t3k")
IMPORT_TO_STORED = ("generate", "import", "graph", "partition", "layout", "kernel", "simulate", "store")


@dataclass
class Step:
    name: str
    seconds: float
    peak_rss_mb: float


@dataclass
class Case:
    name: str
    model: str
    ops: int = 0
    zones: int = 0
    steps: list[Step] = field(default_factory=list)
    override: str = ""  # the re-runs' override
    override_status: str = ""  # how the compiler took it: applied, adjusted or rejected
    parse_s: float = 0.0  # MLIR's parser alone on the text, the floor of any import
    # timeline bytes stored: by the run, and by its incremental re-run (sharing its parent's blocks)
    timeline_bytes: tuple[int, int] = (0, 0)

    @property
    def total(self) -> float:
        """Import to stored run: what it takes to bring a model in."""
        return sum(s.seconds for s in self.steps if s.name in IMPORT_TO_STORED)

    @property
    def compile_seconds(self) -> float:
        """Import through the kernel level: what it takes to show a model at every level."""
        return sum(s.seconds for s in self.steps if s.name in ("import", "graph", "partition", "layout", "kernel"))


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _timed(case: Case, name: str, work: Callable):
    start = time.perf_counter()
    result = work()
    case.steps.append(Step(name, time.perf_counter() - start, _peak_rss_mb()))
    _progress(f"{case.name}: {name} {case.steps[-1].seconds:.2f} s")
    return result


def run_case(
    name: str,
    model: str,
    text_of: Callable[[], str],
    target_name: str,
    db_dir: Path,
    compile_only: bool = False,
    full_rerun: bool = True,
) -> Case:
    """Every step on one model; after storing its run: the statistics and the graph view of the
    run, and a re-run after one override, from scratch (`full_rerun`) and incrementally."""
    case = Case(name, model)
    _progress(f"{name}: {model}")
    target = load_target(target_name)
    text = _timed(case, "generate", text_of)
    case.parse_s = bare_parse_seconds(text, model)
    imported = _timed(case, "import", lambda: import_mlir(text, model, model))
    case.ops = len(imported.graph.ops)
    graph = imported.graph
    levels = {}
    for level, passes in stages(target):

        def lower(graph=graph, level=level, passes=passes):
            lowered = graph.with_level(level)
            for compiler_pass in passes:
                lowered = compiler_pass.run(lowered)
            return lowered

        graph = levels[level] = _timed(case, level, lower)
    if compile_only:
        return case
    sim = _timed(case, "simulate", lambda: simulate(graph, target, "host"))
    case.zones = len(sim.zones)
    sessions = session_factory(open_db(f"sqlite:///{db_dir / (name + '.db')}"))
    compilation = Compilation(imported, target, levels)

    def store(compilation=compilation, sim=sim, overrides=(), parent_id=None):
        new = new_run(compilation, sim, model, target_name, "", overrides=list(overrides), parent_id=parent_id)
        with sessions() as session:
            return save_run(session, new)

    run_id = _timed(case, "store", store)
    long_lived(compilation)  # as the app keeps the compilation it shows

    def statistics():
        with sessions() as session:
            return op_statistics(session, run_id)

    _timed(case, "stats", statistics)
    explorer = Explorer(sessions)
    _timed(case, "graph view", lambda: graph_view(explorer, run_id, compilation))
    item = override_item(levels["layout"])
    if full_rerun:
        _timed(case, "full rerun", lambda: rerun(compilation, [item], None, store))
    case.override = item
    # stored as the app stores a re-run: the child of the run it changed
    child = partial(store, parent_id=run_id)
    case.override_status = _timed(case, "incr rerun", lambda: rerun(compilation, [item], sim, child))
    with sessions() as session:
        case.timeline_bytes = (own_bytes(session, run_id), own_bytes(session, run_id_back(session)))
    return case


def override_item(layout: Graph) -> str:
    """The override a user tries first: the middle matmul's output into L1."""
    matmuls = [op.name for op in layout.ops if op.kind == "matmul"] or [op.name for op in layout.ops if op.outputs]
    return f"{matmuls[len(matmuls) // 2]}=l1:interleaved"


def rerun(base: Compilation, items: list[str], base_sim: SimResult | None, store: Callable) -> str:
    """Compile with `items`, simulate and store, as the app does after an override: starting from
    `base` and its simulation when `base_sim` is given (incremental), else from nothing. Returns
    the override's outcome."""
    since = base if base_sim is not None else None
    options = CompileOptions(tuple(parse_item(i) for i in items))
    compilation = compile_model(base.model, base.target, options, since=since)
    sim = simulate(compilation.kernel, base.target, "host", known=base_sim.costs if base_sim else None)
    store(compilation, sim, items)
    return ", ".join(o.status for o in compilation.override_outcomes)


def graph_view(explorer: Explorer, run_id: int, compilation: Compilation) -> int:
    """The explorer's graph at the `graph` level as a page opens it, grouped by name scope and
    coloured by duration, serialised for the browser; returns its nodes."""
    graph = compilation.graph_at("graph")
    tree = ScopeTree(graph)
    view = tree.view(tree.default_expansion())
    figure = graph_figure(view, graph, op_metrics(compilation, explorer.op_records(run_id), {}), "duration")
    figure.to_json()
    return len(view.nodes)


def run(quick: bool = False, target: str = "wormhole_n150", peer_python: str | None = None) -> dict:
    cases = []
    with tempfile.TemporaryDirectory(prefix="tilescope-bench-") as tmp:
        if CORPUS_RESNET.exists():
            cases.append(run_case("resnet50_xla", "resnet50_xla.mlir", CORPUS_RESNET.read_text, target, Path(tmp)))
        for name in QUICK if quick else SIZES:
            ref = SIZES[name]
            cases.append(
                run_case(name, ref, lambda ref=ref: zoo.generate(ref), target, Path(tmp), full_rerun=name != "100k")
            )
        name, ref, system = SPLIT
        cases.append(run_case(name, ref, lambda: zoo.generate(ref), system, Path(tmp)))
        perfdb = perfdb_bench(Path(tmp))
        measured = bench_goals.measure(quick, Path(tmp), _progress)
        if peer_python:
            measured["peer"] = _peer(peer_python, Path(tmp))
    rows = [_case_row(c) for c in cases]
    return {
        "goals": bench_goals.as_rows(bench_goals.check(rows, measured)),
        "peer": measured.get("peer"),
        "perfdb": perfdb,
        "machine": {
            "python": platform.python_version(),
            "cpu": platform.processor() or platform.machine(),
            "cores": os.cpu_count(),
            "system": platform.platform(terse=True),
        },
        "target": target,
        "cases": rows,
    }


def _peer(peer_python: str, directory: Path) -> list[dict]:
    """Model Explorer's conversion against tilescope's import, on the corpus's StableHLO model and
    chains of it (none without the corpus)."""
    files = peer_files(directory)
    if not files:
        _progress("peer: the corpus is not beside the checkout; nothing to compare on")
        return []
    _progress(f"peer: Model Explorer under {peer_python}, {len(files)} files")
    rows = compare_import(peer_python, files, PEER_ROUNDS)
    _progress("peer:\n" + format_rows(rows))
    return rows


def _case_row(c: Case) -> dict:
    return {
        "name": c.name,
        "model": c.model,
        "ops": c.ops,
        "zones": c.zones,
        "total_s": c.total,
        "us_per_op": c.total / c.ops * 1e6 if c.ops else 0.0,
        "compile_s": c.compile_seconds,
        "compile_us_per_op": c.compile_seconds / c.ops * 1e6 if c.ops else 0.0,
        "parse_s": c.parse_s,
        "override": c.override,
        "override_status": c.override_status,
        "timeline_bytes": {"run": c.timeline_bytes[0], "rerun": c.timeline_bytes[1]},
        "steps": {s.name: {"s": s.seconds, "peak_rss_mb": s.peak_rss_mb} for s in c.steps},
    }


def format_table(report: dict) -> str:
    names = list(dict.fromkeys(n for c in report["cases"] for n in c["steps"]))
    to_stored = [n for n in names if n in IMPORT_TO_STORED]
    after = [n for n in names if n not in IMPORT_TO_STORED]

    def cells(steps: dict, step_names: list[str], width: int) -> str:
        return "".join(f"{steps[n]['s']:>{width}.3f}" if n in steps else f"{'-':>{width}}" for n in step_names)

    lines = [
        f"{'case':<14}{'ops':>8}{'zones':>10}"
        + "".join(f"{n:>10}" for n in to_stored)
        + f"{'total':>9}{'us/op':>7}{'RSS MB':>8}"
    ]
    for c in report["cases"]:
        rss = [s["peak_rss_mb"] for n, s in c["steps"].items() if n in IMPORT_TO_STORED]
        lines.append(
            f"{c['name']:<14}{c['ops']:>8}{c['zones']:>10}"
            + cells(c["steps"], to_stored, 10)
            + f"{c['total_s']:>9.2f}{c['total_s'] / max(1, c['ops']) * 1e6:>7.0f}{max(rss):>8.0f}"
        )
    if after:
        lines += [
            "",
            "after the run is stored:",
            f"{'case':<14}" + "".join(f"{n:>12}" for n in after) + f"{'RSS MB':>8}  re-runs after",
        ]
        for c in report["cases"]:
            lines.append(
                f"{c['name']:<14}"
                + cells(c["steps"], after, 12)
                + f"{max(s['peak_rss_mb'] for s in c['steps'].values()):>8.0f}"
                + (f"  {c['override']} ({c['override_status']})" if c.get("override") else "")
            )
    perf = report.get("perfdb")
    if perf:
        lines.append("")
        lines.append(
            f"perfdb (SQLite): store {perf['zones']:,} zones {perf['store_s']:.2f} s ({perf['db_mb']:.0f} MB); "
            f"diff of two {perf['diff_ops']:,}-op runs {perf['diff_ms']:.0f} ms"
        )
        measured = perf.get("measured_diff")
        if measured:
            lines.append(
                f"diff of two measured {measured['ops']:,}-op runs, ops aligned as sequences: "
                f"an edited copy {measured['edited']['ms']:.0f} ms, unrelated {measured['unrelated']['ms']:.0f} ms"
            )
        lines.append(f"timeline window at {PIXELS} px, median of 3 (first) ms:")
        for w in perf["windows"]:
            lines.append(
                f"  {w['tracks']:<15} zoom x{1 / w['zoom']:<7g} {w['ms']:>6.0f} ({w['first_ms']:.0f}) ms "
                f"{w['items']:>7} items"
            )
    machine = report["machine"]
    lines.append(
        "seconds per step ('-': not measured at that size); total: generate to store, and its time per op; "
        "RSS: the process's peak so far"
    )
    lines.append(f"{machine['cores']} cores, {machine['system']}, Python {machine['python']}")
    if report.get("peer"):
        lines += [
            "",
            "import against Model Explorer (seconds, median of interleaved rounds):",
            format_rows(report["peer"]),
        ]
    if report.get("goals"):
        lines += ["", bench_goals.format_goals(report["goals"])]
    return "\n".join(lines)


def main(quick: bool, as_json: bool, target: str, peer_python: str | None = None) -> int:
    report = run(quick=quick, target=target, peer_python=peer_python)
    print(json.dumps(report, indent=1) if as_json else format_table(report))
    return 0
