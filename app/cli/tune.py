"""`tilescope tune`: search per-op overrides for the fastest simulated step, store the start and the
best set found as two runs (the second the first's child), write the set in the three overrides
formats, and report what was gained."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.targets.chip import DEFAULT_DISPATCH as RUN_DISPATCH
from tilescope.compiler.targets.chip import DISPATCH_MODES

from tilescope.app.cli.options import MODEL_HELP, add_common, add_json
from tilescope.app.cli.output_files import check_writable, replace_file

if TYPE_CHECKING:
    from tilescope.app.workbench.tuning import TuneReport

SHOWN_CHANGES = 10
# overrides.search.LAYOUT_KNOBS, spelt here so that building the parser imports no compiler
KNOBS = "memory,layout,grid,block,double_buffer,tile,fusion,l1_cap,inner_tiles"
DEFAULT_BUDGET_S = 120.0
# a tuned model is deployed with a captured trace; launched op by op from the host, a step waits on
# launches that no override shortens
DEFAULT_DISPATCH = "trace"
# beside FILE (tilescope's JSON, which `tilescope run --overrides` reads back): the tools' formats
TOOL_FILES = {"tt-mlir": ".tt-mlir.txt", "tt-explorer": ".tt-explorer.json"}


def add(sub: argparse._SubParsersAction) -> None:
    tune = sub.add_parser(
        "tune",
        help="search per-op overrides (memory, layout, grid, blocking, buffering, tiles) and the compiler's "
        "choices (fusions, L1 cap, inner tiles) for the fastest step; "
        "store the result as a run",
    )
    tune.add_argument("model", help=MODEL_HELP)
    add_common(tune)
    tune.add_argument(
        "--budget",
        type=float,
        default=None,
        metavar="SECONDS",
        help=f"search for at most this long (default {DEFAULT_BUDGET_S:g}, unless --trials is given)",
    )
    tune.add_argument("--trials", type=int, default=None, metavar="N", help="try at most N override sets")
    tune.add_argument(
        "--knobs",
        default=KNOBS,
        help="what the search may change, comma-separated (default: all that leave the numbers as they are); "
        "dtype and fidelity change results: add them by name or with +precision",
    )
    tune.add_argument("--seed", type=int, default=0, help="orders the candidates that tie (default 0)")
    tune.add_argument(
        "--dispatch",
        choices=DISPATCH_MODES,
        default=None,
        help=f"what the step's time counts: a captured trace (default, unless an overrides file names one; run's "
        f"default is {RUN_DISPATCH}) or host launches per op",
    )
    tune.add_argument("--label", default="", help="a note for the stored start run")
    tune.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write the overrides to FILE (tilescope JSON), and beside it FILE's stem"
        + " and ".join(TOOL_FILES.values())
        + " for tt-mlir and TT-Explorer",
    )
    tune.add_argument("--force", action="store_true", help="replace the files -o names if they exist")
    add_json(tune, "the report")
    tune.set_defaults(command_fn=cmd_tune)


def output_paths(output: str) -> dict[str, Path]:
    """Each format's file: FILE itself for tilescope's JSON, then its stem with the tools' suffixes."""
    path = Path(output).expanduser()
    stem = path.with_suffix("") if path.suffix == ".json" else path
    return {"overrides": path, **{fmt: stem.with_name(stem.name + suffix) for fmt, suffix in TOOL_FILES.items()}}


class _Interrupt:
    """Ctrl-C ends the search at its next trial, and its best set is stored; a second one stops at once."""

    def __init__(self) -> None:
        self.asked = False

    def __enter__(self) -> _Interrupt:
        self._before = signal.signal(signal.SIGINT, self._ask)
        return self

    def _ask(self, *_args) -> None:
        if self.asked:
            raise KeyboardInterrupt
        self.asked = True
        print("tilescope: ending the search; Ctrl-C again to drop it", file=sys.stderr)

    def __exit__(self, *_exc) -> None:
        signal.signal(signal.SIGINT, self._before)


def cmd_tune(args) -> int:
    from tilescope.overrides.formats import dump, left_out
    from tilescope.overrides.override_set import OverrideSet
    from tilescope.perfdb.engine import open_db, session_factory

    from tilescope.app.workbench.explorer import Explorer
    from tilescope.app.workbench.runs import execute
    from tilescope.app.workbench.tuning import check_budget, knobs_of
    from tilescope.app.cli.runs import settings

    knobs = knobs_of(args.knobs)
    if args.budget is None and args.trials is None:
        args.budget = DEFAULT_BUDGET_S
    check_budget(args.budget, args.trials)
    paths = output_paths(args.output) if args.output else {}
    for path in paths.values():  # said before the search, not after it
        check_writable(path, args.force)
    given = settings(args, default_dispatch=DEFAULT_DISPATCH)
    sessions = session_factory(open_db(args.db))
    start = execute(sessions, args.model, args.target, given.options, label=args.label or "tune: start")
    if start.run_id is None:
        raise TilescopeError(f"override {start.rejected[0].spec!r} rejected: {start.rejected[0].reason}")
    say = (lambda _line: None) if args.json else (lambda line: print(f"tune: {line}", file=sys.stderr, flush=True))
    with _Interrupt() as interrupt:
        report = Explorer(sessions).tune(
            start.run_id,
            knobs=knobs,
            budget_s=args.budget,
            max_trials=args.trials,
            seed=args.seed,
            progress=say,
            cancelled=lambda: interrupt.asked,
        )
    best = report.tuned.options
    tuned = OverrideSet(list(best.overrides), best.policy, best.dispatch, best.l1_usage_cap, best.data_tiling or None)
    for fmt, path in paths.items():
        replace_file(path, dump(tuned, fmt))
    if args.json:
        print(json.dumps(report.as_dict() | {"files": {f: str(p) for f, p in paths.items()}}, indent=1))
        return 0
    missing = {fmt: left_out(tuned, fmt) for fmt in TOOL_FILES if paths}
    print_report(report, args.model, paths, missing, given.dispatch_defaulted)
    return 0


def _starts_shown(policies: dict[str, float], chosen: str) -> dict[str, float]:
    """The starts a report lists: each policy, and a policy at another L1 cap where the cap changed
    its time (or it is the start the search took)."""
    shown = {}
    for name, ns in policies.items():
        policy, at_cap, _ = name.partition(" at L1 cap ")
        if not at_cap or policies.get(policy) != ns or name == chosen:
            shown[name] = ns
    return shown


def print_illegal(illegal, shown: int = 3) -> None:
    """Why candidates were rejected, by family, most trials first, with each family's commonest
    reasons in full."""
    if not illegal.total:
        return
    print(f"{illegal.total:,} candidates were illegal:")
    for name, count, reasons in illegal.families():
        print(f"  {count:>6,}  {name}")
        for reason in reasons[:shown]:
            print(f"          {reason.count:>6,}  e.g. {reason.example}")


def print_report(
    report: TuneReport, model_ref: str, paths: dict[str, Path], missing: dict[str, list[str]], defaulted: bool
) -> None:
    from tilescope.overrides.search import changes_precision

    t, parent = report.tuned, report.parent
    # a start compared with a run of the same model differs by its dispatch too, unless given alike
    dispatch = f"{parent.options.dispatch} dispatch" + (
        f": tune's default; run's is {RUN_DISPATCH}" if defaulted else ""
    )
    print(
        f"tuned {model_ref} on {parent.target_name} ({dispatch}), knobs {','.join(report.knobs)}: "
        f"{t.trials:,} trials in {t.seconds:.1f} s; {t.stopped}"
    )
    start = f"start ({parent.options.policy}, {len(parent.options.overrides)} overrides)"
    rows = [(f"run {parent.id}", start, parent.total_ns)]
    shown = _starts_shown(t.policies, t.start)
    rows += [("", policy, ns) for policy, ns in sorted(shown.items(), key=lambda kv: -kv[1])]
    if len(shown) < len(t.policies):
        rows.append(("", f"(and {len(t.policies) - len(shown)} at other L1 caps: the same times)", float("nan")))
    rows.append((f"run {report.run_id}", f"tuned (from {t.policy}, {len(t.items)} overrides)", report.total_ns))
    for where, what, ns in rows:
        if ns != ns:  # a note, no time
            print(f"  {where:<9} {what}")
            continue
        print(f"  {where:<9} {what:<44} {ns / 1e3:>12,.1f} us  {ns / report.total_ns:>6.3f}x the tuned")
    gap = report.roofline_gap or float("inf")
    print(
        f"  speedup {report.over_parent:.3f}x over the start ({report.gain_text}), {report.over_greedy_text}; "
        f"roofline bound {report.roofline_ns / 1e3:,.1f} us: the tuned run is {gap:.2f}x it"
    )
    if report.contributions:
        print("top changes (what the tuned run loses without each):")
        for label, ns in report.contributions[:SHOWN_CHANGES]:
            worth = f"{ns / 1e3:>+10.2f} us" if ns is not None else "  (the rest is rejected without it)"
            marked = "  [changes results]" if changes_precision(label.partition(" (and ")[0]) else ""
            print(f"  {worth}  {label}{marked}")
    print_illegal(t.illegal)
    precision = t.precision_items()
    if precision:
        print(f"{len(precision)} of the overrides change dtype or fidelity: they change results")
    if t.dropped:
        print(f"left out {len(t.dropped)} start override(s) {t.policy} rejects: {', '.join(t.dropped[:3])}")
    if paths:
        print("overrides written: " + ", ".join(f"{p} ({fmt})" for fmt, p in paths.items()))
    for fmt, left in missing.items():
        if left:
            print(f"  {paths[fmt]} leaves out what {fmt} cannot read: {len(left)} item(s), e.g. {left[0]}")
    print(f"compare: tilescope diff {parent.id} {report.run_id}")
