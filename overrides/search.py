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
from dataclasses import dataclass, field, replace

from tilescope.compiler.ir import opset
from tilescope.compiler.analysis.matmul_blocking import subblock
from tilescope.compiler.analysis.matrix_dims import gemm_dims
from tilescope.compiler.frontend.mlir_import import ImportedModel
from tilescope.compiler.pipeline.op_override import LAYOUT_FIELDS, REJECTED
from tilescope.compiler.pipeline.stages import Compilation, compile_model
from tilescope.compiler.pipeline.options import DEFAULT_L1_USAGE_CAP, DEFAULT_POLICY, GREEDY_L1
from tilescope.compiler.sim.simulator import SimResult, simulate
from tilescope.compiler.targets.chip import Target

from tilescope.overrides.spec import format_item, parse_item

# what an override may change without changing the numbers the model computes, and what it may
# change only when asked (`+precision`): reported apart, since they change results
LAYOUT_KNOBS = ("memory", "layout", "grid", "block", "double_buffer", "tile")
PRECISION_KNOBS = ("dtype", "fidelity")
# the policies a search may start from: the optimizer's block-float weights change precision
LAYOUT_POLICIES = (DEFAULT_POLICY, GREEDY_L1)
SHARDED = ("block_sharded", "height_sharded", "width_sharded")
MIN_GAIN = 1e-9  # relative: a kept override must make the step faster, not equal
HEARTBEAT_S = 2.0  # how often a long search says where it is, between kept overrides


@dataclass(frozen=True)
class Change:
    """One step of a search: the items it set, one per op of a group, and the ns it saved then."""

    items: tuple[str, ...]
    ns: float

    @property
    def label(self) -> str:
        return label_of(self.items)


def label_of(items: tuple[str, ...]) -> str:
    """A group's items as one line: the first, and how many ops alike have the same."""
    more = len(items) - 1
    return items[0] + (f" (and {more} op{'s' if more > 1 else ''} alike)" if more else "")


@dataclass
class Tuned:
    """What a search found: its start, its best, and how it got there."""

    policy: str  # the policy it started from, the fastest of LAYOUT_POLICIES (or the one given)
    policies: dict[str, float]  # each policy's time, ns
    best_ns: float
    items: list[str]  # the best override set, one item per op
    gains: list[Change]  # each change kept, in order, and the ns it saved when it was kept
    trials: int
    seconds: float
    stopped: str  # why the search ended, one line
    l1_usage_cap: float
    dropped: list[str]  # start items the chosen policy rejects, left out
    # the best's; None in a summary sent to another process (app/workbench/tuning.py)
    compilation: Compilation | None = field(repr=False)
    sim: SimResult | None = field(repr=False)

    @property
    def start_ns(self) -> float:
        return self.policies[self.policy]

    @property
    def speedup(self) -> float:
        return self.start_ns / self.best_ns if self.best_ns else 1.0

    def precision_items(self) -> list[str]:
        """The items that change what the model computes (a dtype or a math fidelity)."""
        return [item for item in self.items if changes_precision(item)]


def changes_precision(item: str) -> bool:
    parsed = parse_item(item)
    return parsed.dtype is not None or parsed.fidelity is not None


def candidates(compilation: Compilation, op_name: str, knobs: tuple[str, ...], current: str | None = None) -> list[str]:
    """The override items worth a trial on one op: where its output lives and how it is sharded,
    the grid it runs on, a matmul's blocking and sub-block, single buffering, shorter tiles, and
    with precision knobs its dtype and fidelity. Each changes one knob of the op's `current` item
    and keeps the rest, so an op's knobs are tuned one after another. The compiler rejects what the
    op cannot take (uneven shards, a full L1)."""
    op = compilation.levels["layout"].op(op_name)
    target = compilation.target
    rows, cols = target.grid
    found: list[str] = []
    if "memory" in knobs:
        found += ["l1:interleaved", target.dram.name]
    if "layout" in knobs:  # a sharded output lives in L1
        found += [f"l1:{layout}" for layout in SHARDED]
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
    tried = (combined(current, f"{op_name}={item}") for item in found)
    return [item for item in dict.fromkeys(tried) if item != current]


# what a change of one knob leaves meaningless of the item it changes: a new grid or tile shape
# gives each core another share, whose blocking is to be found again; a new block, its sub-blocks
_RESETS = {
    "grid": ("block", "subblock"),
    "tile": ("block", "subblock"),
    "block": ("subblock",),
    "memory": ("memory_layout",),  # `dram` after `l1:block_sharded` is DRAM, interleaved
}


def combined(current: str | None, change: str) -> str:
    """`current` (an op's item, or None) with what `change` sets in place of its own."""
    new = parse_item(change)
    if current is None:
        return format_item(new)
    old = parse_item(current)
    values = {name: getattr(new, name) for name in LAYOUT_FIELDS if getattr(new, name) is not None}
    for name in list(values):
        for reset in _RESETS.get(name, ()):
            values.setdefault(reset, None)
    return format_item(replace(old, **values, spec=""))


def _blocks(compilation: Compilation, op_name: str) -> list[str]:
    """A matmul's other passes: K steps of 1 to 16 tiles that divide K, half the rows or columns
    per pass, from the blocking its kernel has now; and the sub-blocks of that blocking's pass
    that fill the destination registers, tall or wide (tt-metal takes the widest; the operand
    along the longer side is unpacked once per sub-block, so the best shape depends on the op)."""
    kernel = compilation.kernel.op(op_name).meta.get("kernel")
    if kernel is None or len(kernel.block) != 3:
        return []
    layout = compilation.levels["layout"]
    tile = compilation.target.tile
    kt = -(-gemm_dims(layout, layout.op(op_name))[1] // tile[1])
    bm, bn, kb = kernel.block
    blocks = {(bm, bn, k) for k in (1, 2, 4, 8, 16) if kt % k == 0}
    blocks |= {(m, n, kb) for m, n in ((bm // 2, bn), (bm, bn // 2)) if m and n and bm % m == 0 and bn % n == 0}
    found = [f"block#{m}x{n}x{k}" for m, n, k in sorted(blocks - {(bm, bn, kb)})]
    dest = compilation.target.pipeline.dest_tiles
    now = kernel.subblock or subblock(bm, bn, dest)
    for h in (h for h in range(1, min(bm, dest) + 1) if bm % h == 0):
        w = max(w for w in range(1, min(bn, dest // h) + 1) if bn % w == 0)
        if (h, w) != now:
            found.append(f"subblock#{h}x{w}")
    return found


def _tunable(compilation: Compilation, sim: SimResult) -> list[str]:
    """The ops an override may name, slowest first: the model's own ops (not those a pass made,
    such as a fused attention) with work at the layout level (not the conversions and collectives
    the compiler inserted)."""
    layout = compilation.levels["layout"]
    own = {op.name for op in compilation.model.graph.ops}
    named = {op.name for op in layout.ops if op.name in own and op.kind != "to_layout" and "operand_of" not in op.meta}
    timed = [t for t in sim.ops if t.name in named and opset.op_class(t.kind).kind_class != opset.COLLECTIVE]
    return [t.name for t in sorted(timed, key=lambda t: (-t.duration_ns, t.name))]


def alike(compilation: Compilation, sim: SimResult, items: dict[str, str]) -> list[list[str]]:
    """The tunable ops in groups that run the same kernel but for tensor names (a model's repeated
    layers) and have the same override, slowest group first (its ops' time summed). One trial
    changes a whole group, as a person tuning one layer's matmul would change them all."""
    kernels = compilation.kernel
    durations = {t.name: t.duration_ns for t in sim.ops}
    groups: dict[tuple, list[str]] = {}
    for name in _tunable(compilation, sim):
        kernel = kernels.op(name).meta.get("kernel")
        template = id(kernel.like or kernel) if kernel is not None else name
        value = items[name].partition("=")[2] if name in items else ""
        groups.setdefault((template, value), []).append(name)
    ranked = sorted(groups.values(), key=lambda names: (-sum(durations[n] for n in names), names[0]))
    return [sorted(names) for names in ranked]


def _renamed(item: str, op_name: str) -> str:
    return f"{op_name}={item.partition('=')[2]}"


def _of_output(item: str) -> bool:
    """Whether `item` lays out an op's output, the part of an op the search changes."""
    parsed = parse_item(item)
    return parsed.operand is None and parsed.result is None


def _start(
    model: ImportedModel, target: Target, dispatch: str, policy: str, items: tuple[str, ...], cap: float
) -> tuple[Compilation, SimResult, list[str]]:
    """`items` compiled under `policy` and simulated, less any the compiler rejects (as a run
    stored with rejected overrides ran without them); and the items kept."""
    kept = list(items)
    while True:  # without one, another may fit where it did not (L1 is planned for all at once)
        compiled = compile_model(model, target, [parse_item(i) for i in kept], policy, cap)
        rejected = {o.spec for o in compiled.override_outcomes if o.status == REJECTED}
        if not rejected:
            return compiled, simulate(compiled.kernel, target, dispatch), kept
        kept = [item for item in kept if parse_item(item).spec not in rejected]


@dataclass
class _Search:
    model: ImportedModel
    target: Target
    dispatch: str
    policy: str
    deadline: float
    max_trials: int | None
    l1_usage_cap: float
    cancelled: Callable[[], bool]
    reserved: int = 0  # trials' time kept of the budget for after the search (what its parts are worth)
    trials: int = 0
    began: float = field(default_factory=time.perf_counter)

    def out_of_budget(self) -> str:
        if self.cancelled():
            return "cancelled; the best set so far is kept"
        if self.max_trials is not None and self.trials >= self.max_trials:
            return f"stopped after its {self.max_trials} trials"
        now = time.perf_counter()
        if now + self.reserved * (now - self.began) / max(1, self.trials) >= self.deadline:
            return "stopped at the end of its time budget"
        return ""

    def trial(self, items: list[str], since: Compilation, costs) -> tuple[Compilation, SimResult] | None:
        """`items` compiled since `since` and simulated; None when the compiler rejects any."""
        self.trials += 1
        overrides = [parse_item(i) for i in items]
        compiled = compile_model(self.model, self.target, overrides, self.policy, self.l1_usage_cap, since=since)
        if any(o.status == REJECTED for o in compiled.override_outcomes):
            return None
        return compiled, simulate(compiled.kernel, self.target, self.dispatch, known=costs, timeline=False)


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
    l1_usage_cap: float = DEFAULT_L1_USAGE_CAP,
    cancelled: Callable[[], bool] = lambda: False,
    starts: tuple[str, ...] = LAYOUT_POLICIES,
    reserved: int = 0,
) -> Tuned:
    """The best override set found for `model` on `target` within the budget (seconds, trials or
    both; None: unbounded) or until `cancelled()`; never slower than where it started: the fastest
    of the `starts` policies (or `policy`) with the `start_items` it accepts (a search carried on
    from an earlier one, or a stored run's overrides; those it rejects are left out and named).
    The time budget covers the starts too: once it has ended, the first start alone is compiled.
    It ends up to `reserved` trials' time early (one per item found), for what follows it in the budget.
    `progress` hears a line at the start, at each kept override, and every HEARTBEAT_S."""
    start = time.perf_counter()
    deadline = start + budget_s if budget_s else float("inf")
    policies: dict[str, float] = {}
    runs: dict[str, tuple[Compilation, SimResult, list[str]]] = {}
    for name in (policy,) if policy else starts:
        if runs and (cancelled() or time.perf_counter() >= deadline):
            progress(f"left out the {name} start: {'cancelled' if cancelled() else 'the budget has ended'}")
            continue
        runs[name] = _start(model, target, dispatch, name, start_items, l1_usage_cap)
        policies[name] = runs[name][1].total_ns
    chosen = min(policies, key=lambda name: (policies[name], name))
    best, best_sim, accepted = runs[chosen]
    dropped = [item for item in start_items if item not in accepted]
    progress(f"start: {chosen} {best_sim.total_ns / 1e3:.1f} us")
    if dropped:
        progress(f"left out {len(dropped)} start override(s) {chosen} rejects, e.g. {dropped[0]}")
    search = _Search(model, target, dispatch, chosen, deadline, max_trials, l1_usage_cap, cancelled)
    said = time.perf_counter()
    rng = random.Random(seed)
    # the search changes an op's output override (one per op); one of how it reads an operand or
    # lays out one result is kept as it is
    fixed = [item for item in accepted if not _of_output(item)]
    items: dict[str, str] = {parse_item(item).op: item for item in accepted if _of_output(item)}
    search.reserved = min(reserved, len(items))  # a trial per item, at most: what it has to measure
    gains: list[Change] = []
    stopped = ""
    passes, grouped = 0, True  # groups of alike ops first; once that gains nothing, op by op
    while not stopped:
        kept_this_pass, passes = 0, passes + 1
        groups = alike(best, best_sim, items) if grouped else [[name] for name in _tunable(best, best_sim)]
        for place, names in enumerate(groups, 1):
            if time.perf_counter() - said >= HEARTBEAT_S:
                said = time.perf_counter()
                progress(
                    f"{search.trials} trials, {said - start:.0f} s: {best_sim.total_ns / 1e3:.1f} us; pass {passes} "
                    f"({'groups of alike ops' if grouped else 'op by op'}), {place} of {len(groups)}"
                )
            tries = candidates(best, names[0], knobs, items.get(names[0]))
            rng.shuffle(tries)  # the order decides between candidates that tie
            others = [*fixed, *(v for k, v in items.items() if k not in names)]
            winner_items, winner = (), None
            for item in tries:
                stopped = search.out_of_budget()
                if stopped:
                    break
                changed = tuple(_renamed(item, name) for name in names)
                tried = search.trial([*others, *changed], best, best_sim.costs)
                bar = (winner[1] if winner else best_sim).total_ns * (1 - MIN_GAIN)
                if tried is not None and tried[1].total_ns < bar:
                    winner_items, winner = changed, tried
            if winner is not None:  # the best candidate, even when the budget ended mid-way
                gains.append(Change(winner_items, best_sim.total_ns - winner[1].total_ns))
                items.update(zip(names, winner_items))
                search.reserved = min(reserved, len(items))
                best, best_sim = winner
                kept_this_pass += 1
                said = time.perf_counter()
                progress(f"{search.trials} trials: {best_sim.total_ns / 1e3:.1f} us with {gains[-1].label}")
            if stopped:
                break
        if not stopped and not kept_this_pass:
            if grouped and any(len(names) > 1 for names in groups):
                grouped = False  # each op on its own now, alike or not
                continue
            stopped = "no override of any op makes it faster" if not gains else "a pass over every op kept nothing"
    return Tuned(
        policy=chosen,
        policies=policies,
        best_ns=best_sim.total_ns,
        items=[*fixed, *items.values()],
        gains=gains,
        trials=search.trials,
        seconds=time.perf_counter() - start,
        stopped=stopped,
        l1_usage_cap=l1_usage_cap,
        dropped=dropped,
        compilation=best,
        sim=best_sim,
    )


def worth_groups(tuned: Tuned, limit: int = 10) -> list[list[str]]:
    """The final set's items in groups of alike ops with the same item, the `limit` of most time."""
    items = {parse_item(item).op: item for item in tuned.items if _of_output(item)}
    return [names for names in alike(tuned.compilation, tuned.sim, items) if names[0] in items][:limit]


def contributions(
    model: ImportedModel,
    target: Target,
    tuned: Tuned,
    dispatch: str,
    limit: int = 10,
    stop: Callable[[], bool] = lambda: False,
) -> list[tuple[str, float | None]]:
    """What the final set's parts are worth: for each of `worth_groups` until `stop()`, the step's
    time without the group less the time with the whole set. Parts interact (L1 is shared, a
    layout change moves conversions), so this differs from what a change saved when it was kept.
    None: without the group, the rest is rejected (another op's tensor no longer fits in L1, say)."""
    fixed = [item for item in tuned.items if not _of_output(item)]
    items = {parse_item(item).op: item for item in tuned.items if _of_output(item)}
    search = _Search(model, target, dispatch, tuned.policy, float("inf"), None, tuned.l1_usage_cap, lambda: False)
    found = []
    for names in worth_groups(tuned, limit):
        if stop():
            break
        rest = [*fixed, *(i for op, i in items.items() if op not in names)]
        tried = search.trial(rest, tuned.compilation, tuned.sim.costs)
        found.append((label_of(tuple(items[n] for n in names)), tried[1].total_ns - tuned.best_ns if tried else None))
    return sorted(found, key=lambda pair: (pair[1] is None, -(pair[1] or 0.0), pair[0]))
