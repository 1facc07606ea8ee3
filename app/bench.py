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
from pathlib import Path

from compiler import zoo
from compiler.mlir_import import import_mlir
from compiler.pipeline import Compilation, stages
from compiler.simulator import simulate
from compiler.target import load_target
from perfdb.engine import open_db, session_factory
from perfdb.queries import diff_runs, timeline_window
from perfdb.store import NewRun, save_run

from .runs import new_run

CORPUS_RESNET = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "ttmlir" / "resnet50_xla.mlir"
SIZES = {  # name -> zoo reference
    "1k": "zoo:bert-base",
    "10k": "zoo:bert-base?layers=104",
    "100k": "zoo:bert-base?layers=1040",
}
QUICK = ("1k", "10k")


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

    @property
    def total(self) -> float:
        return sum(s.seconds for s in self.steps)

    @property
    def compile_seconds(self) -> float:
        """Import through the kernel level: what it takes to show a model at every level."""
        return sum(s.seconds for s in self.steps if s.name in ("import", "graph", "layout", "kernel"))


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _timed(case: Case, name: str, work: Callable):
    start = time.perf_counter()
    result = work()
    case.steps.append(Step(name, time.perf_counter() - start, _peak_rss_mb()))
    return result


def run_case(
    name: str, model: str, text_of: Callable[[], str], target_name: str, db_dir: Path, compile_only: bool = False
) -> Case:
    case = Case(name, model)
    target = load_target(target_name)
    text = _timed(case, "generate", text_of)
    imported = _timed(case, "import", lambda: import_mlir(text, model, model))
    case.ops = len(imported.graph.ops)
    graph = imported.graph
    levels = {}
    for level, passes in stages(target, (), "dram-interleaved"):

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

    def store():
        new = new_run(compilation, sim, model, target_name, "")
        with sessions() as session:
            return save_run(session, new)

    _timed(case, "store", store)
    return case


# perfdb: a synthetic trace of PERF_OPS ops, each with a zone on every core and its three engines
PERF_OPS = 10_000
PERF_CORES = 25  # 10k ops x (1 + 25 cores x 4 tracks) = 1,010,000 zones
ZOOMS = (1.0, 0.1, 0.01, 0.001, 0.0001)  # window as a share of the run
PIXELS = 1500


def _synthetic(ops: int, cores: int, seed: int, scale: float = 1.0) -> NewRun:
    """A run shaped like a simulated one: ops of 0.5-200 us back to back, each a zone on the device
    track and per core (depth 0), and reader/compute/writer zones under it (depth 1)."""
    import numpy as np  # noqa: PLC0415

    rng = np.random.default_rng(seed)
    durations = (10 ** rng.uniform(2.7, 5.3, ops)) * scale
    starts = np.concatenate([[0.0], np.cumsum(durations)[:-1]])
    names = [f"layer.{i // 12}.op_{i % 12}" for i in range(ops)]
    zones = []
    for i, (name, start, length) in enumerate(zip(names, starts.tolist(), durations.tolist())):
        zones.append(("device", 0, name, start, start + length, name))
        for c in range(cores):
            r, col = divmod(c, 8)
            core = f"core {r},{col}"
            zones.append((core, 0, name, start, start + length, name))
            zones.append((f"{core}/reader", 1, "read", start, start + length * 0.4, name))
            zones.append((f"{core}/compute", 1, "compute", start + length * 0.1, start + length * 0.9, name))
            zones.append((f"{core}/writer", 1, "write", start + length * 0.6, start + length, name))
    ops_rows = [
        {"name": n, "kind": "matmul", "start_ns": s, "duration_ns": d, "flops": 1, "bytes": {"dram": 1.0},
         "bound": "dram", "why": "", "memory": "dram", "grid": "8x8", "cores": 64, "roofline_ns": d / 2}
        for n, s, d in zip(names, starts.tolist(), durations.tolist())
    ]
    total = float(starts[-1] + durations[-1])
    return NewRun("bench", "bench", "0" * 64, "", "wormhole_n150", total, total, ops_rows, zones)


def perfdb_bench(db_dir: Path) -> dict:
    """Store a 1M-zone run on SQLite; window queries at every zoom; diff of two 10k-op runs."""
    sessions = session_factory(open_db(f"sqlite:///{db_dir / 'perfdb.db'}"))
    big = _synthetic(PERF_OPS, PERF_CORES, seed=1)
    zones = len(big.zones)
    start = time.perf_counter()
    with sessions() as session:
        run_id = save_run(session, big)
    store_s = time.perf_counter() - start
    other = _synthetic(PERF_OPS, 0, seed=2, scale=1.1)
    with sessions() as session:
        other_id = save_run(session, other)
    windows = []
    few = ["device", *(f"core 0,{c}" for c in range(4)), *(f"core 0,0/{e}" for e in ("reader", "compute"))]
    for tracks_name, tracks in (("7 tracks", few), ("all 101 tracks", None)):
        for zoom in ZOOMS:
            t0 = big.total_ns * (1 - zoom) / 2
            t1 = t0 + big.total_ns * zoom
            times = []
            for _ in range(3):  # the first also pays for reading the pages from disk
                start = time.perf_counter()
                with sessions() as session:
                    items = timeline_window(session, run_id, t0, t1, (t1 - t0) / PIXELS, tracks)
                times.append((time.perf_counter() - start) * 1e3)
            windows.append({
                "tracks": tracks_name, "zoom": zoom, "items": len(items), "first_ms": times[0], "ms": sorted(times)[1],
            })
    start = time.perf_counter()
    with sessions() as session:
        diff = diff_runs(session, other_id, run_id)
    diff_ms = (time.perf_counter() - start) * 1e3
    return {
        "zones": zones, "store_s": store_s, "windows": windows, "diff_ops": len(diff["ops"]), "diff_ms": diff_ms,
        "db_mb": (db_dir / "perfdb.db").stat().st_size / 2**20,
    }


def run(quick: bool = False, target: str = "wormhole_n150") -> dict:
    cases = []
    with tempfile.TemporaryDirectory(prefix="tilescope-bench-") as tmp:
        if CORPUS_RESNET.exists():
            cases.append(run_case("resnet50_xla", "resnet50_xla.mlir", CORPUS_RESNET.read_text, target, Path(tmp)))
        for name in QUICK if quick else SIZES:
            ref = SIZES[name]
            cases.append(
                run_case(name, ref, lambda ref=ref: zoo.generate(ref), target, Path(tmp))
            )
        perfdb = perfdb_bench(Path(tmp))
    return {
        "perfdb": perfdb,
        "machine": {
            "python": platform.python_version(),
            "cpu": platform.processor() or platform.machine(),
            "cores": os.cpu_count(),
            "system": platform.platform(terse=True),
        },
        "target": target,
        "cases": [
            {
                "name": c.name, "model": c.model, "ops": c.ops, "zones": c.zones, "total_s": c.total,
                "us_per_op": c.total / c.ops * 1e6 if c.ops else 0.0,
                "compile_s": c.compile_seconds,
                "compile_us_per_op": c.compile_seconds / c.ops * 1e6 if c.ops else 0.0,
                "steps": {s.name: {"s": s.seconds, "peak_rss_mb": s.peak_rss_mb} for s in c.steps},
            }
            for c in cases
        ],
    }


def format_table(report: dict) -> str:
    step_names = max((list(c["steps"]) for c in report["cases"]), key=len, default=[])
    head = f"{'case':<14}{'ops':>8}{'zones':>10}" + "".join(f"{n:>10}" for n in step_names) + f"{'total':>9}{'compile us/op':>14}{'RSS MB':>8}"
    lines = [head]
    for c in report["cases"]:
        steps = c["steps"]
        rss = max(s["peak_rss_mb"] for s in steps.values())
        lines.append(
            f"{c['name']:<14}{c['ops']:>8}{c['zones']:>10}"
            + "".join(f"{steps[n]['s']:>10.3f}" if n in steps else f"{'-':>10}" for n in step_names)
            + f"{c['total_s']:>9.2f}{c['compile_us_per_op']:>14.0f}{rss:>8.0f}"
        )
    perf = report.get("perfdb")
    if perf:
        lines.append("")
        lines.append(
            f"perfdb (SQLite): store {perf['zones']:,} zones {perf['store_s']:.2f} s ({perf['db_mb']:.0f} MB); "
            f"diff of two {perf['diff_ops']:,}-op runs {perf['diff_ms']:.0f} ms"
        )
        lines.append(f"timeline window at {PIXELS} px, median of 3 (first) ms:")
        for w in perf["windows"]:
            lines.append(f"  {w['tracks']:<15} zoom x{1 / w['zoom']:<7g} {w['ms']:>6.0f} ({w['first_ms']:.0f}) ms {w['items']:>7} items")
    machine = report["machine"]
    lines.append(f"seconds per step ('-': not measured at that size); {machine['cores']} cores, {machine['system']}, Python {machine['python']}")
    return "\n".join(lines)


def main(quick: bool, as_json: bool, target: str) -> int:
    report = run(quick=quick, target=target)
    print(json.dumps(report, indent=1) if as_json else format_table(report))
    return 0
