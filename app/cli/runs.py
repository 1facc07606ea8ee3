"""`tilescope run`, `runs`, `show` and `check`: compile a model with overrides, simulate it and
store the run; list runs; print a level; check overrides without storing."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING

from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.ir.graph import LEVELS
from tilescope.compiler.pipeline.options import DEFAULT_L1_USAGE_CAP, DEFAULT_POLICY, CompileOptions
from tilescope.compiler.targets.chip import DEFAULT_DISPATCH, DISPATCH_MODES

from tilescope.app.cli.messages import error, note, warning
from tilescope.app.cli.options import MODEL_HELP, add_common, add_json

if TYPE_CHECKING:  # the compiler and the runs are imported when a command runs
    from tilescope.compiler.sim.simulator import OpTiming

    from tilescope.app.workbench.runs import RunResult


def add(sub: argparse._SubParsersAction) -> None:
    run = sub.add_parser("run", help="compile, simulate and store a run; print per-op timings")
    run.add_argument("model", help=MODEL_HELP)
    add_common(run)
    run.add_argument("--label", default="", help="a note to tell this run apart")
    run.add_argument(
        "--dispatch", choices=DISPATCH_MODES, default=None, help="host launches per op (default), or a captured trace"
    )
    run.add_argument("--keep-going", action="store_true", help="store the run even if an override is rejected")
    add_json(run, "the run (run_id, model, target, total_ns, ops, load_ns, load_ops, overrides, ...)")

    runs = sub.add_parser("runs", help="list stored runs, newest first")
    add_common(runs, target=False)
    add_json(runs, "the runs")

    show = sub.add_parser("show", help="print a model at one compiler level as MLIR")
    show.add_argument("model", help=MODEL_HELP)
    show.add_argument("--level", choices=LEVELS, default="graph", help="compiler level to print (default graph)")
    add_common(show, db=False)

    check = sub.add_parser(
        "check", help="list every problem of a set of overrides on a model at once, without storing a run"
    )
    check.add_argument("model", help=MODEL_HELP)
    add_common(check, db=False)
    add_json(check, "{ok, problems, overrides}")
    run.set_defaults(command_fn=cmd_run)
    runs.set_defaults(command_fn=cmd_runs)
    show.set_defaults(command_fn=cmd_show)
    check.set_defaults(command_fn=cmd_check)


def _run_json(result: RunResult, model_ref: str) -> dict:
    sim = result.sim
    return {
        "run_id": result.run_id,
        "model": model_ref,
        "target": sim.target,
        "dispatch": sim.dispatch,
        "policy": result.compilation.policy,
        "total_ns": sim.total_ns,
        "device_ns": sim.device_ns,
        "overrides": [o.as_dict() for o in result.compilation.override_outcomes],
        "warnings": result.compilation.warnings,
        "ops": [_op_json(o) for o in sim.ops],
        # evaluated once when the model is loaded, on a clock of their own: not in total_ns
        "load_ns": sim.load_ns,
        "load_ops": [_op_json(o) for o in sim.load_ops],
    }


def _op_json(o: OpTiming) -> dict:
    return {
        "name": o.name,
        "type": o.kind,
        "start_ns": o.start_ns,
        "duration_ns": o.duration_ns,
        "flops": o.flops,
        "bytes": o.bytes,
        "bound": o.bound,
        "memory": o.memory,
        "grid": o.grid,
        "cores": o.cores,
        "roofline_ns": o.roofline_ns,
        "why": o.why,
        "achieved_flops": o.achieved_flops,
        "pct_peak": o.pct_peak,
        "bandwidth": {path: o.bandwidth(path) for path in o.bytes},
        "dispatch_wait_ns": o.dispatch_wait_ns,
        # the line of the model's source that made it (a PyTorch model's), and its code
        "code_line": o.code_line,
        "code": o.code,
    }


def _print_table(result: RunResult, model_ref: str) -> None:
    from tilescope.app.workbench.device_split import split_by_device
    from tilescope.app.workbench.load_time import load_line

    sim = result.sim
    tiled = ", data-tiling" if result.compilation.options.data_tiling else ""
    print(
        f"run {result.run_id}  {model_ref} on {sim.target} "
        f"({sim.dispatch} dispatch, {result.compilation.policy} policy{tiled})"
    )
    width = max([len(o.name) for o in sim.ops] + [4])
    print(f"{'op':<{width}}  {'type':<10} {'start us':>10} {'dur us':>9} {'GFLOP':>8} {'bound':<8} {'memory':<6} grid")
    for o in sim.ops:
        print(
            f"{o.name:<{width}}  {o.kind:<10} {o.start_ns / 1e3:>10.1f} {o.duration_ns / 1e3:>9.2f} "
            f"{o.flops / 1e9:>8.3f} {o.bound:<8} {o.memory:<6} {o.grid}"
        )
    print(f"total {sim.total_ns / 1e3:.1f} us (device busy {sim.device_ns / 1e3:.1f} us)")
    split = split_by_device(sim.ops, sim.zones.track_names(), sim.total_ns)
    alike = all(replace(s, device="") == replace(split[0], device="") for s in split)
    for each in split[:1] if alike else split:  # one program on every device: each device's step the same
        said = f"each of {len(split)} devices" if alike else each.device
        print(
            f"{said}: compute {each.compute_ns / 1e3:.1f} us, collectives "
            f"{each.collectives_ns / 1e3:.1f} us (on the links; {each.overlap_ns / 1e3:.1f} us of it under compute), "
            f"idle {each.idle_ns / 1e3:.1f} us"
        )
    if sim.load_ops:
        print(load_line(len(sim.load_ops), sim.load_ns))
    for outcome in result.compilation.override_outcomes:
        print(f"override {outcome.spec}: {outcome.status}{': ' + outcome.reason if outcome.reason else ''}")


MAX_WARNINGS = 5


def warn(warnings: list[str]) -> None:
    """Print the first few warnings and how many more there are; the kernel level lists them all."""
    for text in warnings[:MAX_WARNINGS]:
        warning(text)
    if len(warnings) > MAX_WARNINGS:
        warning(f"... and {len(warnings) - MAX_WARNINGS} more (tilescope show MODEL --level kernel)")


@dataclass(frozen=True)
class Settings:
    """What a command compiles and simulates with: command-line flags win over an overrides file,
    which wins over the defaults."""

    options: CompileOptions
    dispatch_defaulted: bool  # neither a flag nor the file named one: the command's own default


def settings(args, default_dispatch: str = DEFAULT_DISPATCH) -> Settings:
    from tilescope.overrides import parse_item
    from tilescope.overrides.formats import load_file
    from tilescope.overrides.override_set import OverrideSet

    loaded = load_file(args.overrides) if args.overrides else OverrideSet()
    items = [*loaded.items, *(parse_item(item) for item in args.override)]
    OverrideSet(items)  # one override per op, across file and flags
    dispatch = getattr(args, "dispatch", None) or loaded.dispatch
    options = CompileOptions(
        items, _policy(args, loaded), _cap(args, loaded), dispatch or default_dispatch, _data_tiling(args, loaded)
    )
    return Settings(options, dispatch_defaulted=dispatch is None)


def _policy(args, loaded) -> str:
    """--policy, else the overrides file's, else the default."""
    return args.policy or loaded.policy or DEFAULT_POLICY


def _data_tiling(args, loaded) -> bool:
    """--data-tiling, else the overrides file's, else off."""
    return bool(args.data_tiling if args.data_tiling is not None else loaded.data_tiling)


def _cap(args, loaded) -> float:
    """--l1-usage-cap, else the overrides file's, else the default; a share of L1 from 0 to 1."""
    cap = args.l1_usage_cap if args.l1_usage_cap is not None else loaded.l1_usage_cap
    if cap is not None and not 0 < cap <= 1:
        raise TilescopeError(f"--l1-usage-cap must be in (0, 1], got {cap:g}")
    return cap if cap is not None else DEFAULT_L1_USAGE_CAP


def cmd_run(args) -> int:
    from tilescope.perfdb.engine import open_db, session_factory

    from tilescope.app.workbench.runs import execute

    given = settings(args)
    sessions = session_factory(open_db(args.db))
    text = torch_text(args.model)
    result = execute(
        sessions, args.model, args.target, given.options, label=args.label, keep_going=args.keep_going, source_text=text
    )
    warn(result.compilation.warnings)
    if result.rejected and not args.keep_going:
        _refused(result.rejected)
        return 1
    for outcome in result.rejected:
        note(f"override {outcome.spec!r} rejected: {outcome.reason}")
    if args.json:
        print(json.dumps(_run_json(result, args.model), indent=1))
    else:
        _print_table(result, args.model)
    return 0


def _refused(rejected) -> None:
    """One line for one rejected override, which is what stopped the run; one each and a last line
    saying what it cost for several."""
    unstored = "run not stored (use --keep-going to store it anyway)"
    if len(rejected) == 1:
        error(f"override {rejected[0].spec!r} rejected: {rejected[0].reason}; {unstored}")
        return
    for outcome in rejected:
        note(f"override {outcome.spec!r} rejected: {outcome.reason}")
    error(f"{len(rejected)} overrides rejected; {unstored}")


MODEL_COLUMN = 48  # characters of a model reference `runs` shows; a longer one ends in "…"


@dataclass(frozen=True)
class ListedRun:
    """A stored run as `tilescope runs` lists it; its fields are the keys of `--json`."""

    run_id: int
    label: str
    name: str  # its label, or what names a run without one (app.workbench.run_labels)
    model: str
    target: str
    total_ns: float
    load_ns: float
    overrides: int  # how many
    created_at: str  # ISO 8601
    kind: str = "simulated"  # or measured: a profile imported


def cmd_runs(args) -> int:
    from tilescope.perfdb.engine import open_db, session_factory
    from tilescope.perfdb.runs import list_runs

    from tilescope.app.workbench.run_labels import name_of

    with session_factory(open_db(args.db))() as session:
        rows = [
            ListedRun(
                r.id,
                r.label,
                name_of(r),
                r.model_ref,
                r.target.name,
                r.total_ns,
                r.load_ns,
                len(r.overrides),
                r.created_at.isoformat(),
                r.kind,
            )
            for r in list_runs(session)
        ]
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=1))
        return 0
    width = min(max([len("model"), *(len(r.model) for r in rows)]), MODEL_COLUMN)
    print(f"{'id':>4}  {'model':<{width}} {'target':<14} {'total us':>12} {'ovr':>3}  label")
    for r in rows:
        model = r.model if len(r.model) <= width else r.model[: width - 1] + "…"
        print(f"{r.run_id:>4}  {model:<{width}} {r.target:<14} {r.total_ns / 1e3:>12,.1f} {r.overrides:>3}  {r.name}")
    return 0


def torch_text(ref: str) -> str | None:
    """The MLIR text of a PyTorch model the user named (model.pt2, model.py:build), else None:
    the model is read from its file."""
    from tilescope.app.cli.torch_refs import is_torch_ref, load_torch_ref

    return load_torch_ref(ref).text if is_torch_ref(ref) else None


def cmd_show(args) -> int:
    from tilescope.app.workbench.runs import compile_cached

    compilation = compile_cached(args.model, args.target, settings(args).options, torch_text(args.model))
    warn(compilation.warnings)
    sys.stdout.write(compilation.mlir(args.level))
    return 0


def cmd_check(args) -> int:
    """Read the file leniently, then compile once: every problem is listed, not just the first."""
    from tilescope.compiler.frontend.model_refs import load_model
    from tilescope.compiler.targets.catalog import load_target
    from tilescope.overrides import parse_item
    from tilescope.overrides import validate
    from tilescope.overrides.formats import load_file
    from tilescope.overrides.override_set import OverrideSet, unique_items

    problems: list[str] = []
    loaded = load_file(args.overrides, problems) if args.overrides else OverrideSet()
    items = list(loaded.items)
    for item in args.override:
        try:
            items.append(parse_item(item))
        except TilescopeError as err:
            problems.append(str(err))
    unique = unique_items(items, problems)  # across file and flags
    options = CompileOptions(unique, _policy(args, loaded), _cap(args, loaded), data_tiling=_data_tiling(args, loaded))
    report = validate(options, load_model(args.model), load_target(args.target), problems)
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
        return 0 if report.ok else 1
    for problem in report.problems:
        print(problem)
    applied = sum(o.status != "rejected" for o in report.outcomes)
    summary = f"{len(report.problems)} problem(s); {applied} override(s) apply"
    print(summary if report.problems else f"no problems; {applied} override(s) apply")
    return 0 if report.ok else 1
