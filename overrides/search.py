"""Search per-op overrides for the fastest simulated step, as a person tuning a model would, only
faster: start from the best of the layout policies, then take the ops from the slowest down, try
each override the op accepts and keep the one that makes the model fastest, if any does, pass
after pass until a pass keeps nothing or the budget ends.

Each trial compiles since the best compilation so far and simulates with its costs, so it costs
what the override can change (compiler.pipeline's incremental path). L1 is shared by everything
live at once and a layout change inserts conversions, so every trial is timed whole: an override
that helps its op and slows its neighbours is not kept. Candidate order is shuffled by the seed:
the same seed and trial limit give the same result.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from compiler import opset
from compiler.mlir_import import ImportedModel
from compiler.override import REJECTED
from compiler.pipeline import Compilation, compile_model
from compiler.policies import DEFAULT_POLICY, GREEDY_L1
from compiler.simulator import SimResult, simulate
from compiler.target import Target

from .spec import parse_item

# what an override may change without changing the numbers the model computes, and what it may
# change only when asked (`+precision`): reported apart, since they change results
LAYOUT_KNOBS = ("memory", "layout", "grid", "block", "double_buffer", "tile")
PRECISION_KNOBS = ("dtype", "fidelity")
# the policies a search may start from: the optimizer's block-float weights change precision
LAYOUT_POLICIES = (DEFAULT_POLICY, GREEDY_L1)
SHARDED = ("block_sharded", "height_sharded", "width_sharded")
MIN_GAIN = 1e-9  # relative: a kept override must make the step faster, not equal


@dataclass
class Tuned:
    """What a search found: its start, its best, and how it got there."""

    policy: str  # the policy it started from, the fastest of LAYOUT_POLICIES (or the one given)
    policies: dict[str, float]  # each policy's time, ns
    start_ns: float
    best_ns: float
    items: list[str]  # the best override set, one item per op
    gains: list[tuple[str, float]]  # each item kept, and the ns it saved when it was kept
    trials: int
    seconds: float
    stopped: str  # why the search ended, one line
    compilation: Compilation = field(repr=False)
    sim: SimResult = field(repr=False)

    @property
    def speedup(self) -> float:
        return self.start_ns / self.best_ns if self.best_ns else 1.0


def candidates(compilation: Compilation, op_name: str, knobs: tuple[str, ...]) -> list[str]:
    """The override items worth a trial on one op: where its output lives and how it is sharded,
    the grid it runs on, single buffering, shorter tiles, and with precision knobs its dtype and
    fidelity. The compiler rejects what the op cannot take (uneven shards, a full L1)."""
    op = compilation.levels["layout"].op(op_name)
    target = compilation.target
    rows, cols = target.grid
    found: list[str] = []
    if "memory" in knobs:
        found += ["l1:interleaved", target.dram.name]
        found += [f"l1:{layout}" for layout in SHARDED] if "layout" in knobs else []
    if "grid" in knobs:
        grids = {
            (rows, cols),
            (rows, max(1, cols // 2)),
            (max(1, rows // 2), cols),
            (max(1, rows // 2), max(1, cols // 2)),
        }
        found += [f"{r}x{c}" for r, c in sorted(grids) if (r, c) != op.attrs.get("grid")]
    matrix = opset.op_class(op.kind).kind_class in opset.MATRIX_CLASSES
    if "block" in knobs and matrix:
        found += _blocks(compilation, op_name)
    if "double_buffer" in knobs:
        found.append("double_buffer#false")
    if "tile" in knobs and matrix:
        found += [f"tile#{r}x{c}" for r, c in sorted(target.tile_shapes) if (r, c) != target.tile]
    if "dtype" in knobs and matrix:
        found += [d for d in ("bfp8", "bfp4") if d in target.matrix.flops_per_cycle]
    if "fidelity" in knobs and matrix and target.fidelities:
        found += [f"fidelity#{f}" for f in target.fidelities]
    return [f"{op_name}={item}" for item in found]


def _blocks(compilation: Compilation, op_name: str) -> list[str]:
    """A matmul's other passes: K steps of 1 to 16 tiles that divide K, and half the rows or
    columns per pass, from the blocking its kernel has now."""
    kernel = compilation.kernel.op(op_name).meta.get("kernel")
    if kernel is None or len(kernel.block) != 3:
        return []
    layout = compilation.levels["layout"]
    tile = compilation.target.tile
    kt = -(-opset.gemm_dims(layout, layout.op(op_name))[1] // tile[1])
    bm, bn, kb = kernel.block
    blocks = {(bm, bn, k) for k in (1, 2, 4, 8, 16) if kt % k == 0}
    blocks |= {(m, n, kb) for m, n in ((bm // 2, bn), (bm, bn // 2)) if m and n and bm % m == 0 and bn % n == 0}
    return [f"block#{m}x{n}x{k}" for m, n, k in sorted(blocks - {(bm, bn, kb)})]


def _tunable(compilation: Compilation, sim: SimResult) -> list[str]:
    """The ops an override may name, slowest first: those with work at the layout level (not
    the conversions and collectives the compiler inserted)."""
    layout = compilation.levels["layout"]
    named = {op.name for op in layout.ops if op.kind != "to_layout" and "operand_of" not in op.meta}
    timed = [t for t in sim.ops if t.name in named and opset.op_class(t.kind).kind_class != opset.COLLECTIVE]
    return [t.name for t in sorted(timed, key=lambda t: (-t.duration_ns, t.name))]


@dataclass
class _Search:
    model: ImportedModel
    target: Target
    dispatch: str
    policy: str
    deadline: float
    max_trials: int | None
    trials: int = 0

    def out_of_budget(self) -> str:
        if self.max_trials is not None and self.trials >= self.max_trials:
            return f"stopped after its {self.max_trials} trials"
        if time.perf_counter() >= self.deadline:
            return "stopped at the end of its time budget"
        return ""

    def trial(self, items: list[str], since: Compilation, costs) -> tuple[Compilation, SimResult] | None:
        """`items` compiled since `since` and simulated; None when the compiler rejects any."""
        self.trials += 1
        compiled = compile_model(self.model, self.target, [parse_item(i) for i in items], self.policy, since=since)
        if any(o.status == REJECTED for o in compiled.override_outcomes):
            return None
        return compiled, simulate(compiled.kernel, self.target, self.dispatch, known=costs)


def tune(
    model: ImportedModel,
    target: Target,
    dispatch: str = "trace",
    knobs: tuple[str, ...] = LAYOUT_KNOBS,
    budget_s: float | None = 120.0,
    max_trials: int | None = None,
    seed: int = 0,
    policy: str | None = None,
    start_items: tuple[str, ...] = (),
    progress: Callable[[str], None] = lambda _line: None,
) -> Tuned:
    """The best override set found for `model` on `target` within the budget (seconds, trials or
    both; None: unbounded); never slower than where it started: the fastest policy (or `policy`)
    with `start_items`, one per op (a search carried on from an earlier one)."""
    start = time.perf_counter()
    policies: dict[str, float] = {}
    runs: dict[str, tuple[Compilation, SimResult]] = {}
    for name in (policy,) if policy else LAYOUT_POLICIES:
        compiled = compile_model(model, target, [parse_item(i) for i in start_items], name)
        runs[name] = compiled, simulate(compiled.kernel, target, dispatch)
        policies[name] = runs[name][1].total_ns
    chosen = min(policies, key=lambda name: (policies[name], name))
    best, best_sim = runs[chosen]
    progress(f"start: {chosen} {best_sim.total_ns / 1e3:.1f} us")
    search = _Search(model, target, dispatch, chosen, start + budget_s if budget_s else float("inf"), max_trials)
    rng = random.Random(seed)
    items: dict[str, str] = {parse_item(item).op: item for item in start_items}
    gains: list[tuple[str, float]] = []
    stopped = ""
    while not stopped:
        kept_this_pass = 0
        for op_name in _tunable(best, best_sim):
            tries = [c for c in candidates(best, op_name, knobs) if c != items.get(op_name)]
            rng.shuffle(tries)  # the order decides between candidates that tie
            others = [v for k, v in items.items() if k != op_name]
            winner_item, winner = None, None
            for item in tries:
                stopped = search.out_of_budget()
                if stopped:
                    break
                tried = search.trial([*others, item], best, best_sim.costs)
                bar = (winner[1] if winner else best_sim).total_ns * (1 - MIN_GAIN)
                if tried is not None and tried[1].total_ns < bar:
                    winner_item, winner = item, tried
            if winner is not None:  # the op's best candidate, even when the budget ended mid-way
                gains.append((winner_item, best_sim.total_ns - winner[1].total_ns))
                items[op_name] = winner_item
                best, best_sim = winner
                kept_this_pass += 1
                progress(f"{search.trials} trials: {best_sim.total_ns / 1e3:.1f} us with {winner_item}")
            if stopped:
                break
        if not stopped and not kept_this_pass:
            stopped = "no override of any op makes it faster" if not gains else "a pass over every op kept nothing"
    return Tuned(
        policy=chosen,
        policies=policies,
        start_ns=runs[chosen][1].total_ns,
        best_ns=best_sim.total_ns,
        items=list(items.values()),
        gains=gains,
        trials=search.trials,
        seconds=time.perf_counter() - start,
        stopped=stopped,
        compilation=best,
        sim=best_sim,
    )
