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
from perfdb.store import save_run

from .runs import new_run

CORPUS_RESNET = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "ttmlir" / "resnet50_xla.mlir"
SIZES = {  # name -> zoo reference
    "1k": "zoo:bert-base",
    "10k": "zoo:bert-base?layers=104",
    "100k": "zoo:bert-base?layers=1040",
}
QUICK = ("1k", "10k")
# At 100k ops the simulator's per-core zone list (~17M zones) does not fit in memory: the compiler
# steps are measured there, simulation and storage are not.
COMPILE_ONLY = ("100k",)


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


def run(quick: bool = False, target: str = "wormhole_n150") -> dict:
    cases = []
    with tempfile.TemporaryDirectory(prefix="tilescope-bench-") as tmp:
        if CORPUS_RESNET.exists():
            cases.append(run_case("resnet50_xla", "resnet50_xla.mlir", CORPUS_RESNET.read_text, target, Path(tmp)))
        for name in QUICK if quick else SIZES:
            ref = SIZES[name]
            cases.append(
                run_case(name, ref, lambda ref=ref: zoo.generate(ref), target, Path(tmp), name in COMPILE_ONLY)
            )
    return {
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
    machine = report["machine"]
    lines.append(f"seconds per step ('-': not measured at that size); {machine['cores']} cores, {machine['system']}, Python {machine['python']}")
    return "\n".join(lines)


def main(quick: bool, as_json: bool, target: str) -> int:
    report = run(quick=quick, target=target)
    print(json.dumps(report, indent=1) if as_json else format_table(report))
    return 0
