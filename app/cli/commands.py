"""The `tilescope` command line."""

from __future__ import annotations

import argparse
import contextlib
import gc
import getpass
import importlib.metadata
import os
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError

from compiler.errors import TilescopeError
from compiler.ir import LEVELS
from compiler.models import load_model
from compiler.policies import DEFAULT_L1_USAGE_CAP, DEFAULT_POLICY, POLICIES
from compiler.target import DISPATCH_MODES, builtin_names, load_target
from overrides import format_item, parse_item, validate
from overrides.formats import OverrideSet, load_file, unique_items
from perfdb.engine import ENV_VAR as DB_ENV
from perfdb.engine import DatabaseError, embedded_url, open_db, session_factory
from perfdb.ops_csv import CsvImportError, import_csv
from perfdb.queries import RunNotFound, list_runs, op_records, run_id_back

from ..web.auth import AUTH_ENV, set_password
from ..workbench.model_access import DEFAULT_MAX_OPS, ModelAccess
from ..workbench.run_export import EXPORT_FORMATS, export_run
from ..workbench.runs import DEFAULT_TARGET, RunResult, compile_cached, execute

EXAMPLE_MODEL = "zoo:mlp"
MODEL_HELP = (
    "an .mlir file (file.mlir#func picks a function), a shipped example (classifier.mlir) or a zoo model: "
    "zoo:mlp, zoo:bert-base, zoo:llama-3.2-1b[?mode=decode], zoo:resnet50, zoo:matmul:MxKxN "
    "(parameters by query string, e.g. zoo:bert-base?layers=2&seq=128)"
)


TARGET_HELP = f"built-in target ({', '.join(builtin_names())}) or a target .toml file (default {DEFAULT_TARGET})"
DB_HELP = f"SQLAlchemy URL of the perf database (default: ${DB_ENV}, else {embedded_url()})"
PORT_ENV, DEFAULT_PORT = "TILESCOPE_PORT", 8050
RUN_HELP = "run id (see tilescope runs), or last, or last~N for the run N before the newest"


def run_ref(text: str) -> int | str:
    """A run as typed: its id, or `last`/`last~N` counted back from the newest run (resolved by `_run_id`)."""
    if _digits(text):
        return int(text)
    back = text.removeprefix("last")
    if text.startswith("last") and (back == "" or (back.startswith("~") and _digits(back[1:]))):
        return text
    raise argparse.ArgumentTypeError(f"{text!r} is not a run: give a run id, last, or last~N")


def _digits(text: str) -> bool:
    """A number that can name a run: ASCII digits, no longer than a 64-bit id."""
    return text.isascii() and text.isdigit() and len(text) <= 19


def _run_id(session, ref: int | str) -> int:
    if isinstance(ref, int):
        return ref
    try:
        return run_id_back(session, int(ref.partition("~")[2] or 0))
    except LookupError as err:
        raise TilescopeError(f"{ref}: {err}") from None


def _version() -> str:
    try:
        return importlib.metadata.version("tilescope")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tilescope", description="Tune ML accelerator compilation: compile, simulate, store, compare."
    )
    parser.add_argument("--version", action="version", version=f"tilescope {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def common(p: argparse.ArgumentParser, db: bool = True, target: bool = True) -> None:
        if target:
            p.add_argument("--target", default=DEFAULT_TARGET, help=TARGET_HELP)
            p.add_argument(
                "--override",
                action="append",
                default=[],
                metavar="SPEC",
                help="op output layout, tt-mlir syntax: "
                "OP=RxC:l1|dram:interleaved|block_sharded|...:tile|row_major:DTYPE"
                " (repeatable)",
            )
            p.add_argument(
                "--overrides",
                metavar="FILE",
                help="overrides file: tilescope JSON, TT-Explorer JSON, "
                "or tt-mlir options (override-output-layout=...)",
            )
            p.add_argument(
                "--policy",
                choices=POLICIES,
                default=None,
                help=f"layout policy before overrides (default {DEFAULT_POLICY})",
            )
            p.add_argument(
                "--l1-usage-cap",
                type=float,
                default=None,
                metavar="SHARE",
                help=f"share of L1 that tensors may use (default {DEFAULT_L1_USAGE_CAP})",
            )
        if db:
            p.add_argument("--db", default=None, metavar="URL", help=DB_HELP)

    def web_limits(p: argparse.ArgumentParser, same: str = "") -> None:
        """What the page may name and compile; the command line itself has no such limits."""
        p.add_argument(
            "--models-dir",
            action="append",
            default=[],
            metavar="DIR",
            help=f"a directory whose .mlir files the page may open, besides zoo models, examples, uploads and stored "
            f"models (repeatable) {same}".strip(),
        )
        p.add_argument(
            "--max-ops",
            type=int,
            default=DEFAULT_MAX_OPS,
            metavar="N",
            help=f"the most ops a model the page compiles may have (default {DEFAULT_MAX_OPS:,}) {same}".strip(),
        )

    def as_json(p: argparse.ArgumentParser, what: str) -> None:
        p.add_argument("--json", action="store_true", help=f"print {what} as JSON")

    run = sub.add_parser("run", help="compile, simulate and store a run; print per-op timings")
    run.add_argument("model", help=MODEL_HELP)
    common(run)
    run.add_argument("--label", default="", help="a note to tell this run apart")
    run.add_argument(
        "--dispatch", choices=DISPATCH_MODES, default=None, help="host launches per op (default), or a captured trace"
    )
    run.add_argument("--keep-going", action="store_true", help="store the run even if an override is rejected")
    as_json(run, "the run (run_id, model, target, total_ns, ops, overrides, ...)")

    runs = sub.add_parser("runs", help="list stored runs, newest first")
    common(runs, target=False)
    as_json(runs, "the runs")

    show = sub.add_parser("show", help="print a model at one compiler level as MLIR")
    show.add_argument("model", help=MODEL_HELP)
    show.add_argument("--level", choices=LEVELS, default="graph", help="compiler level to print (default graph)")
    common(show, db=False)

    check = sub.add_parser(
        "check", help="list every problem of a set of overrides on a model at once, without storing a run"
    )
    check.add_argument("model", help=MODEL_HELP)
    common(check, db=False)
    as_json(check, "{ok, problems, overrides}")

    export = sub.add_parser(
        "export",
        help="write a stored run: its overrides (overrides, tt-mlir, tt-explorer), its trace (chrome) or its "
        "ops in tt-metal's ops perf report columns (csv)",
    )
    export.add_argument("run", type=run_ref, help=RUN_HELP)
    export.add_argument(
        "--format",
        choices=list(EXPORT_FORMATS),
        default="overrides",
        help="overrides: tilescope JSON; tt-mlir: compiler options; tt-explorer: its JSON; chrome: trace JSON "
        "for Perfetto; csv: tt-metal's ops perf report (default overrides)",
    )
    export.add_argument("-o", "--output", metavar="FILE", help="file to write (default: standard output)")
    export.add_argument("--force", action="store_true", help="replace FILE if it exists")
    common(export, target=False)

    measured = sub.add_parser(
        "import", help="store a measured ops perf CSV (tt-metal's columns) as a measured run beside a simulated one"
    )
    measured.add_argument("run", type=run_ref, help="the simulated run of the same model: " + RUN_HELP)
    measured.add_argument("csv", help="ops perf report: LOC (or OP NAME) and DEVICE KERNEL DURATION [ns] per row")
    measured.add_argument("--label", default="", help="a note for the measured run (default: measured: FILE)")
    common(measured, target=False)

    diff = sub.add_parser("diff", help="compare run B with run A, op by op")
    diff.add_argument("a", type=run_ref, help="the baseline: " + RUN_HELP)
    diff.add_argument("b", type=run_ref, help="the run to compare with it, given the same way")
    as_json(diff, "the diff")
    common(diff, target=False)

    stats = sub.add_parser("stats", help="where a run's device time goes, per op name or op kind")
    stats.add_argument("run", type=run_ref, help=RUN_HELP)
    stats.add_argument(
        "--by", choices=("name", "kind"), default="kind", help="group ops by name or by kind (default kind)"
    )
    as_json(stats, "the rows")
    common(stats, target=False)

    database = sub.add_parser("db", help="manage the perf database")
    database_sub = database.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    common(database_sub.add_parser("upgrade", help="upgrade its schema to the newest revision"), target=False)

    bench = sub.add_parser("bench", help="time import, each compiler level, simulation and storage at 1k-100k ops")
    bench.add_argument("--quick", action="store_true", help="the 1k and 10k sizes (and the corpus ResNet-50) only")
    as_json(bench, "the figures")
    bench.add_argument("--target", default=DEFAULT_TARGET, help=TARGET_HELP)

    serve = sub.add_parser("serve", help="start the web app")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument(
        "--port",
        type=port_number,
        default=None,
        help=f"port to listen on (default ${PORT_ENV} or {DEFAULT_PORT})",
    )
    serve.add_argument(
        "--model",
        default=EXAMPLE_MODEL,
        help="model the page opens on, compiled and stored if it has no run yet: " + MODEL_HELP,
    )
    serve.add_argument("--target", default=DEFAULT_TARGET, help=TARGET_HELP)
    serve.add_argument(
        "--debug",
        action="store_true",
        help="Dash's debug mode on Flask's development server, one process: reload on code changes, errors in the page",
    )
    serve.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="gunicorn worker processes, for several users at once (default 1)",
    )
    serve.add_argument(
        "--auth",
        metavar="FILE",
        default=None,
        help=f"users who may sign in (HTTP basic), one NAME:HASH a line "
        f"as tilescope passwd writes (default ${AUTH_ENV})",
    )
    serve.add_argument(
        "--insecure",
        action="store_true",
        help="serve on an address other machines reach without signing in (anyone there reads every run)",
    )
    web_limits(serve)
    common(serve, target=False)

    passwd = sub.add_parser("passwd", help="add a user to a users file for serve --auth, or change their password")
    passwd.add_argument("file", help="the users file (made, readable by its owner only, if missing)")
    passwd.add_argument("name", help="user name: letters, digits, ._@+-")

    worker = sub.add_parser(
        "worker",
        help="run compile and re-run jobs for the app on Celery ($TILESCOPE_CELERY_BROKER, e.g. redis://...)",
    )
    worker.add_argument("--model", default=EXAMPLE_MODEL, help="the model the app opens on (as given to serve)")
    worker.add_argument("--target", default=DEFAULT_TARGET, help="the app's target (as given to serve)")
    worker.add_argument("--concurrency", type=int, default=2, metavar="N", help="jobs run at once (default 2)")
    web_limits(worker, "(as given to serve)")
    common(worker, target=False)
    return parser


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
        "ops": [
            {
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
            }
            for o in sim.ops
        ],
    }


def _print_table(result: RunResult, model_ref: str) -> None:
    sim = result.sim
    print(
        f"run {result.run_id}  {model_ref} on {sim.target} "
        f"({sim.dispatch} dispatch, {result.compilation.policy} policy)"
    )
    width = max([len(o.name) for o in sim.ops] + [4])
    print(f"{'op':<{width}}  {'type':<10} {'start us':>10} {'dur us':>9} {'GFLOP':>8} {'bound':<8} {'memory':<6} grid")
    for o in sim.ops:
        print(
            f"{o.name:<{width}}  {o.kind:<10} {o.start_ns / 1e3:>10.1f} {o.duration_ns / 1e3:>9.2f} "
            f"{o.flops / 1e9:>8.3f} {o.bound:<8} {o.memory:<6} {o.grid}"
        )
    print(f"total {sim.total_ns / 1e3:.1f} us (device busy {sim.device_ns / 1e3:.1f} us)")
    for outcome in result.compilation.override_outcomes:
        print(f"override {outcome.spec}: {outcome.status}{': ' + outcome.reason if outcome.reason else ''}")


MAX_WARNINGS = 5


def _warn(warnings: list[str]) -> None:
    """Print the first few warnings and how many more there are; the kernel level lists them all."""
    for warning in warnings[:MAX_WARNINGS]:
        print(f"tilescope: warning: {warning}", file=sys.stderr)
    if len(warnings) > MAX_WARNINGS:
        print(
            f"tilescope: warning: ... and {len(warnings) - MAX_WARNINGS} more (tilescope show MODEL --level kernel)",
            file=sys.stderr,
        )


def _settings(args) -> tuple[list[str], str, str, float]:
    """Override items and globals: command-line flags win over an overrides file, which wins over
    the defaults."""
    loaded = load_file(args.overrides) if args.overrides else OverrideSet()
    items = [format_item(o) for o in loaded.items] + list(args.override)
    OverrideSet([parse_item(item) for item in items])  # one override per op, across file and flags
    policy = args.policy or loaded.policy or DEFAULT_POLICY
    dispatch = getattr(args, "dispatch", None) or loaded.dispatch or "host"
    cap = args.l1_usage_cap if args.l1_usage_cap is not None else loaded.l1_usage_cap
    if cap is not None and not 0 < cap <= 1:
        raise TilescopeError(f"--l1-usage-cap must be in (0, 1], got {cap:g}")
    return items, policy, dispatch, cap if cap is not None else DEFAULT_L1_USAGE_CAP


def cmd_run(args) -> int:
    items, policy, dispatch, cap = _settings(args)
    sessions = session_factory(open_db(args.db))
    result = execute(
        sessions,
        args.model,
        args.target,
        items,
        label=args.label,
        dispatch=dispatch,
        policy=policy,
        l1_usage_cap=cap,
        keep_going=args.keep_going,
    )
    _warn(result.compilation.warnings)
    for outcome in result.rejected:
        print(f"tilescope: override {outcome.spec!r} rejected: {outcome.reason}", file=sys.stderr)
    if result.rejected and not args.keep_going:
        print("tilescope: error: run not stored (use --keep-going to store it anyway)", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(_run_json(result, args.model), indent=1))
    else:
        _print_table(result, args.model)
    return 0


def cmd_runs(args) -> int:
    with session_factory(open_db(args.db))() as session:
        runs = list_runs(session)
        rows = [
            {
                "run_id": r.id,
                "label": r.label,
                "model": r.model_ref,
                "target": r.target.name,
                "total_ns": r.total_ns,
                "overrides": len(r.overrides),
                "created_at": r.created_at.isoformat(),
            }
            for r in runs
        ]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"{'id':>4}  {'model':<28} {'target':<14} {'total us':>10} {'ovr':>3}  label")
    for r in rows:
        print(
            f"{r['run_id']:>4}  {r['model'][:28]:<28} {r['target']:<14} {r['total_ns'] / 1e3:>10.1f} "
            f"{r['overrides']:>3}  {r['label']}"
        )
    return 0


def cmd_show(args) -> int:
    items, policy, _, cap = _settings(args)
    compilation, _ = compile_cached(args.model, args.target, tuple(items), policy=policy, l1_usage_cap=cap)
    _warn(compilation.warnings)
    sys.stdout.write(compilation.mlir(args.level))
    return 0


def cmd_check(args) -> int:
    """Read the file leniently, then compile once: every problem is listed, not just the first."""
    problems: list[str] = []
    loaded = load_file(args.overrides, problems) if args.overrides else OverrideSet()
    items = list(loaded.items)
    for item in args.override:
        try:
            items.append(parse_item(item))
        except TilescopeError as err:
            problems.append(str(err))
    unique = unique_items(items, problems)  # across file and flags
    policy = args.policy or loaded.policy or DEFAULT_POLICY
    cap = args.l1_usage_cap if args.l1_usage_cap is not None else loaded.l1_usage_cap
    report = validate(
        unique,
        load_model(args.model),
        load_target(args.target),
        policy,
        cap if cap is not None else DEFAULT_L1_USAGE_CAP,
        problems,
    )
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
        return 0 if report.ok else 1
    for problem in report.problems:
        print(problem)
    applied = sum(o.status != "rejected" for o in report.outcomes)
    summary = f"{len(report.problems)} problem(s); {applied} override(s) apply"
    print(summary if report.problems else f"no problems; {applied} override(s) apply")
    return 0 if report.ok else 1


def cmd_worker(args) -> int:
    from ..web.celery_jobs import BROKER_ENV, broker_url, work
    from ..web.server import create_app

    url = broker_url()
    if url is None:
        raise TilescopeError(f"no broker: set {BROKER_ENV} (e.g. redis://127.0.0.1:6379/0), as for the app")
    # registers the app's background callbacks as tasks; the server stores the opening run
    create_app(
        args.db, args.model, args.target, store_opening_run=False, access=ModelAccess.of(args.models_dir, args.max_ops)
    )
    work(url, args.concurrency)
    return 0


def port_number(text: str) -> int:
    if not text.strip().isdigit() or not 0 < int(text) < 65536:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (1-65535)")
    return int(text)


def _port_from_env() -> int:
    text = os.environ.get(PORT_ENV, "").strip()
    try:
        return port_number(text) if text else DEFAULT_PORT
    except argparse.ArgumentTypeError:
        raise TilescopeError(f"${PORT_ENV}={text!r} is not a port number (1-65535)") from None


def cmd_serve(args) -> int:
    from ..web.server import serve

    if args.workers < 1:
        raise TilescopeError(f"--workers {args.workers}: a number of processes is at least 1")
    port = args.port if args.port is not None else _port_from_env()
    serve(
        db_url=args.db,
        model_ref=args.model,
        target=args.target,
        host=args.host,
        port=port,
        debug=args.debug,
        workers=args.workers,
        access=ModelAccess.of(args.models_dir, args.max_ops),
        users_file=args.auth or os.environ.get(AUTH_ENV) or None,
        insecure=args.insecure,
    )
    return 0


def cmd_passwd(args) -> int:
    password = _password(args.name)
    new = set_password(args.file, args.name, password)
    print(f"{'added' if new else 'changed the password of'} {args.name} in {args.file}")
    return 0


def _password(name: str) -> str:
    """Asked twice on a terminal; else the first line of standard input (for scripts)."""
    if not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\n")
    first = getpass.getpass(f"password for {name}: ")
    if getpass.getpass("again: ") != first:
        raise TilescopeError("the passwords differ")
    return first


def cmd_bench(args) -> int:
    from .bench import main as bench_main

    return bench_main(quick=args.quick, as_json=args.json, target=args.target)


def cmd_export(args) -> int:
    output = Path(args.output) if args.output else None
    if output is not None:  # said before the export's work
        if output.is_dir() or not output.parent.is_dir():
            raise TilescopeError(f"{output}: cannot write: {'a directory' if output.is_dir() else 'no such directory'}")
        if os.path.lexists(output) and not args.force:
            raise TilescopeError(f"{output}: exists; give --force to replace it")
    with session_factory(open_db(args.db))() as session:
        text, _ = export_run(session, _run_id(session, args.run), args.format)
    if output is None:
        sys.stdout.write(text)
        return 0
    _replace(output, text)
    return 0


def _replace(path: Path, text: str) -> None:
    """Write `text` to a new file beside `path`, then rename it over `path`: a link at `path` is
    replaced, not written through, and a failed write leaves the old file whole."""
    try:
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    except OSError as err:
        raise TilescopeError(f"{path}: cannot write: {err.strerror or err}") from None
    try:
        with os.fdopen(fd, "w") as out:
            out.write(text)
        os.chmod(temporary, 0o666 & ~_umask())  # as a plain new file would be, not mkstemp's 0600
        os.replace(temporary, path)
    except OSError as err:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise TilescopeError(f"{path}: cannot write: {err.strerror or err}") from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def cmd_import(args) -> int:
    path = Path(args.csv)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise TilescopeError(f"{args.csv}: no such file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise TilescopeError(f"{args.csv}: cannot read: {err}") from None
    with session_factory(open_db(args.db))() as session:
        simulated = _run_id(session, args.run)
        try:
            run_id, problems = import_csv(session, text, simulated, path.name, args.label)
        except CsvImportError as err:
            raise TilescopeError(str(err)) from None
        matched = len(op_records(session, run_id))
    for problem in problems:
        print(f"tilescope: warning: {problem}", file=sys.stderr)
    print(f"run {run_id}: measured, {matched} op(s) from {path.name}; {len(problems)} bad row(s) skipped")
    print(f"compare: tilescope diff {simulated} {run_id}")
    return 0


def _run_ids(db: str | None, *refs: int | str) -> list[int]:
    with session_factory(open_db(db))() as session:
        return [_run_id(session, ref) for ref in refs]


def cmd_diff(args) -> int:
    from .diff import main as diff_main

    return diff_main(*_run_ids(args.db, args.a, args.b), args.db, args.json)


def cmd_stats(args) -> int:
    from .stats import main as stats_main

    return stats_main(*_run_ids(args.db, args.run), args.by, args.db, args.json)


def cmd_db(args) -> int:
    from .db import upgrade_main

    return upgrade_main(args.db)


COMMANDS = {
    "run": cmd_run,
    "runs": cmd_runs,
    "show": cmd_show,
    "serve": cmd_serve,
    "worker": cmd_worker,
    "bench": cmd_bench,
    "export": cmd_export,
    "diff": cmd_diff,
    "db": cmd_db,
    "stats": cmd_stats,
    "check": cmd_check,
    "import": cmd_import,
    "passwd": cmd_passwd,
}


# Collect cycles every 100k allocations rather than 700: a compilation makes hundreds of
# thousands of long-lived objects, and at the default each full collection walks them all again
# (a third of a re-run's time on a 10k-op model). tilescope makes few reference cycles.
GC_THRESHOLDS = (100_000, 50, 100)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        return COMMANDS[args.command](args)
    except (TilescopeError, DatabaseError, RunNotFound) as err:
        print(f"tilescope: error: {err}", file=sys.stderr)
        return 2
    except SQLAlchemyError as err:  # the database failed mid-way: say so in one line
        reason = str(getattr(err, "orig", None) or err).strip().splitlines()[0]
        print(f"tilescope: error: database: {reason}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:  # a run stores in one transaction: nothing of it was kept
        print("tilescope: interrupted", file=sys.stderr)
        return 130
