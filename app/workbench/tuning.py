"""Tune a stored run: search overrides from where it stands (overrides.search), store the best set
as a run whose parent is the run it started from, and say what was gained, against what, and how
far the result still is from the roofline. Shared by `tilescope tune` and the page's Tune action."""

from __future__ import annotations

import math

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from sqlalchemy.orm import Session, sessionmaker

from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.pipeline.options import GREEDY_L1, CompileOptions
from tilescope.overrides.search import (
    LAYOUT_KNOBS,
    LAYOUT_POLICIES,
    PRECISION_KNOBS,
    Tuned,
    contributions,
    tune,
    worth_groups,
)

from tilescope.app.workbench import runs
from tilescope.app.workbench.diff import WITHIN_ERROR
from tilescope.app.workbench.run_view import RunView

MAX_BUDGET_S = 3600.0  # an hour: a longer search is a batch job, not an interactive one
CONTRIBUTIONS = 10  # the items whose worth in the final set is measured and reported
HOST_BOUND = 0.5  # of the step the device waits for the host to issue ops, from which it is host-bound


@dataclass(frozen=True)
class Start:
    """The stored run a search started from, as its report names it."""

    id: int
    model_ref: str
    target_ref: str
    target_name: str
    options: CompileOptions
    total_ns: float

    @classmethod
    def of(cls, run: RunView) -> Start:
        return cls(run.id, run.model_ref, run.target_ref, run.target_name, run.options, run.total_ns)


@dataclass
class TuneReport:
    parent: Start  # the run the search started from
    run_id: int  # the tuned run, stored with `parent` as its parent
    total_ns: float  # the tuned run's time, as stored
    roofline_ns: float  # the tuned run's ops, each at its roofline (peak compute or bandwidth)
    tuned: Tuned
    knobs: tuple[str, ...]
    contributions: list[tuple[str, float | None]]  # item -> ns the final set loses without it
    unmeasured: int  # the top items whose worth the budget left no time (or a cancel no wish) to measure
    host_wait_ns: float  # of the tuned run's step, how long the device waited for the host to issue ops
    # the model's error on the tuned time: its ops' bands, taken as independent; None: none known
    error_ns: float | None = None

    @property
    def host_bound(self) -> bool:
        """Whether the host's issuing, not the device, sets the step's time: then an override that
        speeds an op up on the device leaves the step as long."""
        return self.host_wait_ns >= HOST_BOUND * self.total_ns

    def summary(self) -> TuneReport:
        """The report without the search's compilation and simulation: what another process needs."""
        return replace(self, tuned=replace(self.tuned, compilation=None, sim=None))

    @property
    def greedy_ns(self) -> float | None:
        """greedy-l1 with the overrides the search started from; None when the budget ended (or a
        cancel came) before that start was timed."""
        return self.tuned.policies.get(GREEDY_L1)

    @property
    def over_parent(self) -> float:
        return self.parent.total_ns / self.total_ns

    @property
    def over_greedy(self) -> float | None:
        return self.greedy_ns / self.total_ns if self.greedy_ns is not None else None

    @property
    def over_greedy_text(self) -> str:
        """The speedup over greedy-l1 as reports say it, or why there is none."""
        if self.over_greedy is None:
            return "greedy-l1 not timed (the budget ended first)"
        return f"{self.over_greedy:.3f}x over greedy-l1"

    @property
    def gain_text(self) -> str:
        """The gain over the start with the model's error on it (the start's error taken as the
        tuned run's, scaled to its time), and whether the gain is inside it."""
        if self.error_ns is None:
            return "no measurements of this chip bound the model's error"
        error = math.hypot(self.error_ns, self.error_ns * self.parent.total_ns / max(self.total_ns, 1e-9))
        gain = self.parent.total_ns - self.total_ns
        within = f" ({WITHIN_ERROR})" if abs(gain) <= error else ""
        return f"gain {gain / 1e3:,.1f} us +- {error / 1e3:,.1f} us{within}"

    @property
    def roofline_gap(self) -> float | None:
        """The tuned time as a multiple of its roofline bound (None: no op has a bound)."""
        return self.total_ns / self.roofline_ns if self.roofline_ns else None

    def as_dict(self) -> dict:
        t = self.tuned
        return {
            "parent_run_id": self.parent.id,
            "run_id": self.run_id,
            "knobs": list(self.knobs),
            "parent_ns": self.parent.total_ns,
            "policies_ns": t.policies,
            "start_policy": t.policy,
            "start": t.start or t.policy,  # the fastest start: a policy, or a policy at another L1 cap
            "start_ns": t.start_ns,
            "l1_usage_cap": t.options.l1_usage_cap,
            "total_ns": self.total_ns,
            "speedup_over_parent": self.over_parent,
            "speedup_over_greedy_l1": self.over_greedy,
            "roofline_ns": self.roofline_ns,
            "roofline_gap": self.roofline_gap,
            "overrides": t.items,
            "precision_overrides": t.precision_items(),
            "changes": [{"overrides": list(change.items), "ns": change.ns} for change in t.gains],
            "contributions": [{"override": item, "ns": ns} for item, ns in self.contributions],
            "host_wait_ns": self.host_wait_ns,
            "error_ns": self.error_ns,
            "trials": t.trials,
            "seconds": t.seconds,
            "stopped": t.stopped,
            "left_out": t.dropped,
            "illegal": t.illegal.as_dict(),
        }


def knobs_of(text: str) -> tuple[str, ...]:
    """`--knobs`: a comma list of LAYOUT_KNOBS and PRECISION_KNOBS; `+precision` adds both of the
    latter to the layout knobs (alone) or to the knobs listed."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise TilescopeError("knobs: name at least one")
    known = (*LAYOUT_KNOBS, *PRECISION_KNOBS)
    chosen: list[str] = []
    for name in names:
        if name == "+precision":
            chosen += [*(LAYOUT_KNOBS if len(names) == 1 else ()), *PRECISION_KNOBS]
        elif name in known:
            chosen.append(name)
        else:
            raise TilescopeError(f"unknown knob {name!r}; known: {', '.join(known)}, +precision")
    return tuple(dict.fromkeys(chosen))


def check_budget(budget_s: float | None, max_trials: int | None) -> None:
    if budget_s is None and max_trials is None:
        raise TilescopeError("give the search a budget: seconds, trials, or both")
    if budget_s is not None and not 0 < budget_s <= MAX_BUDGET_S:
        raise TilescopeError(f"budget must be more than 0 and at most {MAX_BUDGET_S:g} s, got {budget_s:g}")
    if max_trials is not None and max_trials < 1:
        raise TilescopeError(f"trials must be at least 1, got {max_trials}")


def tune_run(
    sessions: sessionmaker[Session],
    parent: RunView,
    knobs: tuple[str, ...] = LAYOUT_KNOBS,
    budget_s: float | None = 120.0,
    max_trials: int | None = None,
    seed: int = 0,
    progress: Callable[[str], None] = runs.no_progress,
    cancelled: Callable[[], bool] = lambda: False,
) -> TuneReport:
    """Search from `parent` (its overrides, dispatch and L1 cap; the fastest layout policy) and
    store what it found as a run whose parent is `parent`, even when it found nothing better: the
    report then says so, and the stored run is the start it could not beat."""
    check_budget(budget_s, max_trials)
    began = time.perf_counter()
    policy = parent.options.policy
    starts = (policy, *(p for p in LAYOUT_POLICIES if p != policy))  # its own first: never slower
    if policy not in LAYOUT_POLICIES and not set(PRECISION_KNOBS) & set(knobs):
        # its start would be slower than the run it tunes, or change what it computes
        raise TilescopeError(
            f"run {parent.id} is compiled with the {policy} policy, which changes precision: tune it "
            f"with +precision, or tune a run of the {' or '.join(LAYOUT_POLICIES)} policy"
        )
    compilation = parent.compiled
    tuned = tune(
        compilation.model,
        compilation.target,
        parent.options,
        knobs,
        budget_s,
        max_trials,
        seed,
        progress=progress,
        cancelled=cancelled,
        starts=starts,
        reserved=CONTRIBUTIONS,
    )
    # within the same budget, and not after a cancel: the page or the user asked for the set now
    deadline = began + budget_s if budget_s else float("inf")
    groups = len(worth_groups(tuned, CONTRIBUTIONS))
    progress("measuring what each of the top overrides is worth")
    worth = contributions(
        compilation.model,
        compilation.target,
        tuned,
        CONTRIBUTIONS,
        stop=lambda: cancelled() or time.perf_counter() >= deadline,
    )
    progress("storing the tuned run")
    result = runs.execute(
        sessions,
        parent.model_ref,
        parent.target_ref,
        tuned.options,
        label=f"tuned: {tuned.speedup:.3f}x over {tuned.policy}, {len(tuned.items)} overrides",
        parent_id=parent.id,
        source_text=compilation.model.text,
        target_source=parent.target_source,
    )
    if result.run_id is None:  # the search only keeps sets the compiler accepted
        raise TilescopeError("the tuned override set was rejected when compiled on its own")
    return TuneReport(
        parent=Start.of(parent),
        run_id=result.run_id,
        total_ns=result.sim.total_ns,
        roofline_ns=sum(o.roofline_ns for o in result.sim.ops),
        tuned=tuned,
        knobs=knobs,
        contributions=worth,
        unmeasured=groups - len(worth),
        host_wait_ns=sum(o.dispatch_wait_ns for o in result.sim.ops),
        error_ns=total_error(result.sim.ops),
    )


def total_error(ops) -> float | None:
    """The error of a run's summed time: the ops of one kind err alike (their errors add), the
    kinds independently (root of the sum of squares); None when no op has a band."""
    by_kind: dict[str, float] = {}
    for o in ops:
        if o.error_ns is not None:
            by_kind[o.kind] = by_kind.get(o.kind, 0.0) + o.error_ns
    return math.sqrt(math.fsum(e * e for e in by_kind.values())) if by_kind else None
