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

import itertools
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from tilescope.compiler.ir.meta import KERNEL, OPERAND_OF
from tilescope.compiler.frontend.mlir_import import ImportedModel
from tilescope.compiler.ir import opset
from tilescope.compiler.pipeline.compilation import Compilation
from tilescope.compiler.pipeline.op_override import REJECTED
from tilescope.compiler.pipeline.options import DEFAULT_POLICY, GREEDY_L1, CompileOptions
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.sim.simulator import SimResult, simulate
from tilescope.compiler.targets.chip import Target

from tilescope.overrides.candidates import candidates, pre_rejected
from tilescope.overrides.illegal import Illegal
from tilescope.overrides.search_start import L1_CAPS, Best, fastest_start, of_output
from tilescope.overrides.spec import parse_item

# what an override may change without changing the numbers the model computes, and what it may
# change only when asked (`+precision`): reported apart, since they change results
LAYOUT_KNOBS = ("memory", "layout", "grid", "block", "double_buffer", "tile", "fusion", "l1_cap", "inner_tiles")
PRECISION_KNOBS = ("dtype", "fidelity")
# the policies a search may start from: the optimizer's block-float weights change precision
LAYOUT_POLICIES = (DEFAULT_POLICY, GREEDY_L1)
PAIRED = 8  # the changes that made the step least slower that a pass keeping nothing tries in pairs
MIN_GAIN = 1e-9  # relative: a kept override must make the step faster, not equal
HEARTBEAT_S = 2.0  # how often a long search says where it is, between kept overrides
# why a search that settled stopped: a pass over every op, each op on its own, kept nothing
NOTHING_FASTER, PASS_KEPT_NOTHING = "no override of any op makes it faster", "a pass over every op kept nothing"


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

    # the best set as a run of it is made: its overrides, the policy the search started from (the
    # fastest of its starts), and the dispatch and L1 cap it searched under
    options: CompileOptions
    policies: dict[str, float]  # each start's time, ns: a policy, or a policy at another L1 cap
    best_ns: float
    items: list[str]  # the best override set, one item per op
    gains: list[Change]  # each change kept, in order, and the ns it saved when it was kept
    trials: int
    seconds: float
    stopped: str  # why the search ended, one line
    dropped: list[str]  # start items the chosen policy rejects, left out
    # the best's; None in a summary sent to another process (app/workbench/tuning.py)
    compilation: Compilation | None = field(repr=False)
    sim: SimResult | None = field(repr=False)
    start: str = ""  # the fastest start's name in `policies` ('': its policy's)
    illegal: Illegal = field(default_factory=Illegal)  # why candidates were rejected, grouped

    @property
    def policy(self) -> str:
        return self.options.policy

    @property
    def settled(self) -> bool:
        """Whether it ended on a pass over every op that kept nothing, not on its budget."""
        return self.stopped in (NOTHING_FASTER, PASS_KEPT_NOTHING)

    @property
    def start_ns(self) -> float:
        return self.policies[self.start or self.policy]

    @property
    def speedup(self) -> float:
        return self.start_ns / self.best_ns if self.best_ns else 1.0

    def precision_items(self) -> list[str]:
        """The items that change what the model computes (a dtype or a math fidelity)."""
        return [item for item in self.items if changes_precision(item)]


def changes_precision(item: str) -> bool:
    parsed = parse_item(item)
    return parsed.dtype is not None or parsed.fidelity is not None


def _tunable(compilation: Compilation, sim: SimResult) -> list[str]:
    """The ops an override may name, slowest first: the model's own ops (not those a pass made,
    such as a fused attention) with work at the layout level (not the conversions and collectives
    the compiler inserted)."""
    layout = compilation.levels["layout"]
    own = {op.name for op in compilation.model.graph.ops}
    named = {op.name for op in layout.ops if op.name in own and op.kind != "to_layout" and OPERAND_OF not in op.meta}
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
        kernel = kernels.op(name).meta.get(KERNEL)
        template = id(kernel.like or kernel) if kernel is not None else name
        value = items[name].partition("=")[2] if name in items else ""
        groups.setdefault((template, value), []).append(name)
    ranked = sorted(groups.values(), key=lambda names: (-sum(durations[n] for n in names), names[0]))
    return [sorted(names) for names in ranked]


def _renamed(item: str, op_name: str) -> str:
    return f"{op_name}={item.partition('=')[2]}"


@dataclass
class _Search:
    model: ImportedModel
    target: Target
    options: CompileOptions  # the policy, dispatch and L1 cap every trial is made with
    deadline: float
    max_trials: int | None
    cancelled: Callable[[], bool]
    reserve: int = 0  # trials' time to keep of the budget for after the search (what its parts are worth)
    reserved: int = 0  # of which kept now: a trial per item found, at most
    trials: int = 0
    clock: Callable[[], float] = time.perf_counter  # seconds; a test gives its own
    began: float = -1.0
    illegal: Illegal = field(default_factory=Illegal)  # why the compiler rejected trials
    # this pass's candidates that made the step slower, by group: the least slower of each, and
    # its items (what pairs of changes are made of when a pass keeps nothing)
    near: dict[tuple[str, ...], tuple[float, tuple[str, ...]]] = field(default_factory=dict)

    def missed(self, names: tuple[str, ...], items: tuple[str, ...], worse_ns: float) -> None:
        if names not in self.near or worse_ns < self.near[names][0]:
            self.near[names] = (worse_ns, items)

    def __post_init__(self) -> None:
        if self.began < 0:
            self.began = self.clock()

    def found(self, items: int) -> None:
        """The best set has `items` items now: what the time kept after the search measures."""
        self.reserved = min(self.reserve, items)

    def out_of_budget(self) -> str:
        if self.cancelled():
            return "cancelled; the best set so far is kept"
        if self.max_trials is not None and self.trials >= self.max_trials:
            return f"stopped after its {self.max_trials} trials"
        now = self.clock()
        if now + self.reserved * (now - self.began) / max(1, self.trials) >= self.deadline:
            return "stopped at the end of its time budget"
        return ""

    def trial(self, items: list[str], since: Compilation, costs) -> tuple[Compilation, SimResult] | None:
        """`items` compiled since `since` and simulated; None when the compiler rejects any."""
        self.trials += 1
        options = self.options.with_overrides(parse_item(i) for i in items)
        compiled = compile_model(self.model, self.target, options, since=since)
        if any(o.status == REJECTED for o in compiled.override_outcomes):
            self.illegal.add(compiled.override_outcomes)
            return None
        return compiled, simulate(compiled.kernel, self.target, options.dispatch, known=costs, timeline=False)


def tune(
    model: ImportedModel,
    target: Target,
    options: CompileOptions,
    knobs: tuple[str, ...] = LAYOUT_KNOBS,
    budget_s: float | None = 120.0,
    max_trials: int | None = None,
    seed: int = 0,
    progress: Callable[[str], None] = lambda _line: None,
    cancelled: Callable[[], bool] = lambda: False,
    starts: tuple[str, ...] = LAYOUT_POLICIES,
    reserved: int = 0,
    clock: Callable[[], float] = time.perf_counter,
) -> Tuned:
    """The best override set found for `model` on `target` within the budget (seconds, trials or
    both; None: unbounded) or until `cancelled()`; never slower than where it started: the fastest
    of the `starts` policies, each with `options`' overrides it accepts (a search carried on from
    an earlier one, or a stored run's overrides; those it rejects are left out and named), under
    `options`' dispatch and L1 cap (its policy is each of `starts` in turn).
    The time budget covers the starts too: once it has ended, the first start alone is compiled.
    It ends up to `reserved` trials' time early (one per item found), for what follows it in the budget.
    `progress` hears a line at the start, at each kept override, and every HEARTBEAT_S of `clock`."""
    start = clock()
    deadline = start + budget_s if budget_s else float("inf")
    caps = L1_CAPS if "l1_cap" in knobs else ()
    policies, chosen, best, dropped = fastest_start(
        model, target, options, starts, deadline, progress, cancelled, clock, caps
    )
    made = best.compilation.options
    every_trial = replace(options, overrides=(), policy=made.policy, l1_usage_cap=made.l1_usage_cap)
    search = _Search(model, target, every_trial, deadline, max_trials, cancelled, reserved, clock=clock)
    search.found(len(best.items))
    stopped, gains = _improve(search, best, knobs, random.Random(seed), progress, start)
    items = best.all_items()
    return Tuned(
        options=search.options.with_overrides(parse_item(i) for i in items),
        policies=policies,
        start=chosen,
        illegal=search.illegal,
        best_ns=best.sim.total_ns,
        items=items,
        gains=gains,
        trials=search.trials,
        seconds=clock() - start,
        stopped=stopped,
        dropped=dropped,
        compilation=best.compilation,
        sim=best.sim,
    )


def _improve(
    search: _Search,
    best: Best,
    knobs: tuple[str, ...],
    rng: random.Random,
    progress: Callable[[str], None],
    start: float,
) -> tuple[str, list[Change]]:
    """Pass after pass over the ops, slowest first, keep each group's fastest candidate that makes
    the step faster, until the budget ends or a pass keeps nothing (`best` follows what is kept).
    Why it stopped, and each change kept."""
    said = search.clock()
    gains: list[Change] = []
    passes, grouped = 0, True  # groups of alike ops first; once that gains nothing, op by op
    while True:
        kept_this_pass, passes = 0, passes + 1
        search.near.clear()
        if grouped:
            groups = alike(best.compilation, best.sim, best.items)
        else:
            groups = [[name] for name in _tunable(best.compilation, best.sim)]
        for place, names in enumerate(groups, 1):
            if search.clock() - said >= HEARTBEAT_S:
                said = search.clock()
                progress(
                    f"{search.trials} trials, {said - start:.0f} s: {best.sim.total_ns / 1e3:.1f} us; pass {passes} "
                    f"({'groups of alike ops' if grouped else 'op by op'}), {place} of {len(groups)}"
                )
            # a fusion kept earlier in the pass may have taken some of its ops into others
            names = [name for name in names if best.compilation.levels["layout"].has_op(name)]
            if not names:
                continue
            stopped, winner_items, winner = _try_group(search, best, names, knobs, rng)
            if winner is not None:  # the best candidate, even when the budget ended mid-way
                progress(_keep(search, best, gains, names, winner_items, winner))
                kept_this_pass += 1
                said = search.clock()
            if stopped:
                return stopped, gains
        if not kept_this_pass:
            stopped, names, winner_items, winner = _try_pairs(search, best)
            if winner is not None:
                progress(_keep(search, best, gains, names, winner_items, winner, "a pair, "))
            if stopped:
                return stopped, gains
            if winner is not None:
                continue
            if grouped and any(len(names) > 1 for names in groups):
                grouped = False  # each op on its own now, alike or not
                continue
            stopped = NOTHING_FASTER if not gains else PASS_KEPT_NOTHING
            return stopped, gains


def _keep(search: _Search, best: Best, gains: list[Change], names, items, winner, how: str = "") -> str:
    """Make `winner` (the ops `names` with `items`) the best, count what it saved; the line saying so."""
    gains.append(Change(tuple(items), best.sim.total_ns - winner[1].total_ns))
    best.items.update(zip(names, items))
    search.found(len(best.items))
    best.compilation, best.sim = winner
    return f"{search.trials} trials: {best.sim.total_ns / 1e3:.1f} us with {how}{gains[-1].label}"


def _try_group(
    search: _Search, best: Best, names: list[str], knobs: tuple[str, ...], rng: random.Random
) -> tuple[str, tuple[str, ...], tuple[Compilation, SimResult] | None]:
    """Each candidate of the group's first op, set on every op of the group, timed against the
    best: why the budget ended ('' if it did not), and the fastest that beats it, if any."""
    tries = candidates(best.compilation, names[0], knobs, best.items.get(names[0]))
    rng.shuffle(tries)  # the order decides between candidates that tie
    others = [*best.fixed, *(v for k, v in best.items.items() if k not in names)]
    winner_items, winner = (), None
    for item in tries:
        stopped = search.out_of_budget()
        if stopped:
            return stopped, winner_items, winner
        known = pre_rejected(best.compilation, item, best.items)
        if known:  # the compiler would reject it for the group's first op: no trial
            search.illegal.add_reason(item, known)
            continue
        changed = tuple(_renamed(item, name) for name in names)
        tried = search.trial([*others, *changed], best.compilation, best.sim.costs)
        bar = (winner[1] if winner else best.sim).total_ns * (1 - MIN_GAIN)
        if tried is not None and tried[1].total_ns < bar:
            winner_items, winner = changed, tried
        elif tried is not None:
            search.missed(tuple(names), changed, tried[1].total_ns - best.sim.total_ns)
    return "", winner_items, winner


def _try_pairs(search: _Search, best: Best) -> tuple[str, tuple[str, ...], tuple[str, ...], tuple | None]:
    """Where a pass kept nothing, a larger move: the PAIRED groups' changes that made the step
    least slower, two at a time (two tensors moved into L1 together, where either alone added a
    conversion, say). Why the budget ended ('' if it did not), and the names, items and
    compilation of the fastest pair that beats the best, if any."""
    misses = sorted(search.near.items(), key=lambda kv: (kv[1][0], kv[0]))[:PAIRED]
    found: tuple[tuple[str, ...], tuple[str, ...], tuple | None] = ((), (), None)
    for (names_a, (_, items_a)), (names_b, (_, items_b)) in itertools.combinations(misses, 2):
        if set(names_a) & set(names_b):
            continue
        stopped = search.out_of_budget()
        if stopped:
            return (stopped, *found)
        both = {*names_a, *names_b}
        others = [*best.fixed, *(v for k, v in best.items.items() if k not in both)]
        tried = search.trial([*others, *items_a, *items_b], best.compilation, best.sim.costs)
        bar = (found[2][1] if found[2] else best.sim).total_ns * (1 - MIN_GAIN)
        if tried is not None and tried[1].total_ns < bar:
            found = ((*names_a, *names_b), (*items_a, *items_b), tried)
    return ("", *found)


def worth_groups(tuned: Tuned, limit: int = 10) -> list[list[str]]:
    """The final set's items in groups of alike ops with the same item, the `limit` that saved the
    most when kept (the slowest first among equals)."""
    items = {parse_item(item).op: item for item in tuned.items if of_output(item)}
    groups = [names for names in alike(tuned.compilation, tuned.sim, items) if names[0] in items]
    # what each item saved when it was kept: a fusion makes its ops fast, so their time says little
    saved: dict[str, float] = {}
    for change in tuned.gains:
        for item in change.items:
            saved[item] = saved.get(item, 0.0) + change.ns / len(change.items)
    return sorted(groups, key=lambda names: -sum(saved.get(items[n], 0.0) for n in names))[:limit]


def contributions(
    model: ImportedModel,
    target: Target,
    tuned: Tuned,
    limit: int = 10,
    stop: Callable[[], bool] = lambda: False,
) -> list[tuple[str, float | None]]:
    """What the final set's parts are worth: for each of `worth_groups` until `stop()`, the step's
    time without the group less the time with the whole set. Parts interact (L1 is shared, a
    layout change moves conversions), so this differs from what a change saved when it was kept.
    None: without the group, the rest is rejected (another op's tensor no longer fits in L1, say)."""
    fixed = [item for item in tuned.items if not of_output(item)]
    items = {parse_item(item).op: item for item in tuned.items if of_output(item)}
    search = _Search(model, target, tuned.options.with_overrides(()), float("inf"), None, lambda: False)
    found = []
    for names in worth_groups(tuned, limit):
        if stop():
            break
        rest = [*fixed, *(i for op, i in items.items() if op not in names)]
        tried = search.trial(rest, tuned.compilation, tuned.sim.costs)
        found.append((label_of(tuple(items[n] for n in names)), tried[1].total_ns - tuned.best_ns if tried else None))
    return sorted(found, key=lambda pair: (pair[1] is None, -(pair[1] or 0.0), pair[0]))
