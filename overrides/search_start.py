"""Where a search begins: each layout policy (and, for those that fill L1 while it fits, each
other L1 cap) compiled with the start's overrides it accepts; the fastest is the best so far."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from tilescope.compiler.frontend.mlir_import import ImportedModel
from tilescope.compiler.pipeline.compilation import Compilation
from tilescope.compiler.pipeline.op_override import REJECTED
from tilescope.compiler.pipeline.options import GREEDY_L1, OPTIMIZER, CompileOptions
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.sim.simulator import SimResult, simulate
from tilescope.compiler.targets.chip import Target

from tilescope.overrides.spec import format_item, parse_item

# the policies that fill L1 while it fits, and the other L1 caps a search starts them from (the
# share of each core's L1 tensors may take: tt-mlir's tensor-l1-usage-cap; 0.8 by default)
GREEDY_POLICIES = (GREEDY_L1, OPTIMIZER)
L1_CAPS = (0.6, 0.7, 0.9, 0.95)


def of_output(item: str) -> bool:
    """Whether `item` lays out an op's output, the part of an op the search changes."""
    parsed = parse_item(item)
    return parsed.operand is None and parsed.result is None


def _start(model: ImportedModel, target: Target, options: CompileOptions) -> tuple[Compilation, SimResult, list[str]]:
    """`options` compiled and simulated, less any override the compiler rejects (as a run stored
    with rejected overrides ran without them); and the items kept."""
    kept = [format_item(o) for o in options.overrides]
    while True:  # without one, another may fit where it did not (L1 is planned for all at once)
        compiled = compile_model(model, target, options.with_overrides(parse_item(i) for i in kept))
        rejected = {o.spec for o in compiled.override_outcomes if o.status == REJECTED}
        if not rejected:
            return compiled, simulate(compiled.kernel, target, options.dispatch), kept
        kept = [item for item in kept if parse_item(item).spec not in rejected]


@dataclass
class Best:
    """The fastest set a search has found so far: its compilation and simulation, its items (one
    output item per op) and the items it keeps as the start gave them."""

    compilation: Compilation
    sim: SimResult
    items: dict[str, str]  # op -> its output's item
    fixed: list[str]  # how an op reads an operand, or lays out one result

    def all_items(self) -> list[str]:
        return [*self.fixed, *self.items.values()]


def fastest_start(
    model: ImportedModel,
    target: Target,
    options: CompileOptions,
    starts: tuple[str, ...],
    deadline: float,
    progress: Callable[[str], None],
    cancelled: Callable[[], bool],
    clock: Callable[[], float],
    caps: tuple[float, ...] = (),
) -> tuple[dict[str, float], str, Best, list[str]]:
    """Each of the `starts` policies' time with `options` (the first always; the rest while the
    budget lasts), and each greedy one's under the other L1 caps `caps`; the fastest's name, as
    the best so far, and the start items it rejects."""
    policies: dict[str, float] = {}
    runs: dict[str, tuple[Compilation, SimResult, list[str]]] = {}
    for name, made in _start_options(options, starts, caps):
        if runs and (cancelled() or clock() >= deadline):
            progress(f"left out the {name} start: {'cancelled' if cancelled() else 'the budget has ended'}")
            continue
        runs[name] = _start(model, target, made)
        policies[name] = runs[name][1].total_ns
    chosen = min(policies, key=lambda name: (policies[name], name))
    compilation, sim, accepted = runs[chosen]
    dropped = [format_item(o) for o in options.overrides]
    dropped = [item for item in dropped if item not in accepted]
    progress(f"start: {chosen} {sim.total_ns / 1e3:.1f} us")
    if dropped:
        progress(f"left out {len(dropped)} start override(s) {chosen} rejects, e.g. {dropped[0]}")
    # the search changes an op's output override (one per op); one of how it reads an operand or
    # lays out one result is kept as it is
    fixed = [item for item in accepted if not of_output(item)]
    items = {parse_item(item).op: item for item in accepted if of_output(item)}
    return policies, chosen, Best(compilation, sim, items, fixed), dropped


def _start_options(
    options: CompileOptions, starts: tuple[str, ...], caps: tuple[float, ...]
) -> list[tuple[str, CompileOptions]]:
    """Each start's name and options: each policy as `options` give its L1 cap, then each policy
    that fills L1 while it fits under the other `caps` (tt-mlir's tensor-l1-usage-cap)."""
    found = [(name, replace(options, policy=name)) for name in starts]
    found += [
        (f"{name} at L1 cap {cap:g}", replace(options, policy=name, l1_usage_cap=cap))
        for name in starts
        if name in GREEDY_POLICIES
        for cap in caps
        if cap != options.l1_usage_cap
    ]
    return found
