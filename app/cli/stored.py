"""`tilescope export`, `import`, `diff`, `stats`, `db` and `bench`: what is done with stored runs,
and the benchmark."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tilescope.compiler.errors import TilescopeError

from tilescope.app.workbench.defaults import DEFAULT_TARGET
from tilescope.app.workbench.export_formats import EXPORT_FORMATS
from tilescope.app.cli.input_files import read_text
from tilescope.app.cli.messages import note, warning
from tilescope.app.cli.output_files import check_writable, replace_file
from tilescope.app.cli.options import RUN_HELP, TARGET_HELP, add_common, add_json, resolve_run, run_ids, run_ref


def add(sub: argparse._SubParsersAction) -> None:
    _add_export(sub)
    _add_import(sub)
    _add_diff_and_stats(sub)
    database = sub.add_parser("db", help="manage the perf database")
    database_sub = database.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    add_common(database_sub.add_parser("upgrade", help="upgrade its schema to the newest revision"), target=False)
    database.set_defaults(command_fn=cmd_db)
    _add_bench(sub)


def _add_export(sub: argparse._SubParsersAction) -> None:
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
    add_common(export, target=False)
    export.set_defaults(command_fn=cmd_export)


def _add_import(sub: argparse._SubParsersAction) -> None:
    measured = sub.add_parser(
        "import",
        help="store a profile measured on hardware as a measured run: an ops perf report (tt-metal's CSV) or a "
        "Chrome/Perfetto trace on its own, or an ops perf CSV beside a simulated run of the same model",
        usage="%(prog)s [-h] [--label LABEL] [--target TARGET] [--db URL] (REPORT | RUN CSV)",
    )
    measured.add_argument(
        "first",
        metavar="REPORT | RUN",
        help="alone: an ops perf report (CSV) or a JSON trace, stored as a measured run with no model; "
        "followed by CSV: the simulated run of the same model (" + RUN_HELP + ")",
    )
    measured.add_argument(
        "csv", nargs="?", metavar="CSV", help="ops perf report whose rows name the run's ops (LOC or OP NAME)"
    )
    measured.add_argument("--label", default="", help="a note for the measured run (default: measured: FILE)")
    measured.add_argument(
        "--target",
        default=None,
        help="a REPORT alone: the target it was measured on, when not the one its DEVICE ARCH names " + TARGET_HELP,
    )
    add_common(measured, target=False)
    measured.set_defaults(command_fn=cmd_import)


def _add_diff_and_stats(sub: argparse._SubParsersAction) -> None:
    diff = sub.add_parser(
        "diff",
        help="compare run B with run A, op by op",
        description="Compare run B with run A, op by op: ops matched by name, or, for measured reports "
        "that name ops by op code and count, aligned by op code in execution order, device by device.",
    )
    diff.add_argument("a", type=run_ref, help="the baseline: " + RUN_HELP)
    diff.add_argument("b", type=run_ref, help="the run to compare with it, given the same way")
    add_json(diff, "the diff")
    add_common(diff, target=False)

    stats = sub.add_parser(
        "stats", help="where a run's device time goes, per op name, op kind, op code or line of source"
    )
    stats.add_argument("run", type=run_ref, help=RUN_HELP)
    stats.add_argument(
        "--by",
        choices=("name", "kind", "code", "source"),
        default="kind",
        help="group ops by name, by kind, by op code (a measured report's; a simulated op's kind), or by "
        "the line of the model's source that made them (a PyTorch model's Python) (default kind)",
    )
    add_json(stats, "the rows")
    add_common(stats, target=False)
    diff.set_defaults(command_fn=cmd_diff)
    stats.set_defaults(command_fn=cmd_stats)


def _add_bench(sub: argparse._SubParsersAction) -> None:
    bench = sub.add_parser("bench", help="time import, each compiler level, simulation and storage at 1k-100k ops")
    bench.add_argument("--quick", action="store_true", help="the 1k and 10k sizes (and the corpus ResNet-50) only")
    add_json(bench, "the figures")
    bench.add_argument("--target", default=DEFAULT_TARGET, help=TARGET_HELP)
    bench.add_argument(
        "--peer-python",
        metavar="PYTHON",
        help="the Python of a venv with ai-edge-model-explorer: time its conversion of the files import is timed on",
    )
    bench.set_defaults(command_fn=cmd_bench)


def cmd_bench(args) -> int:
    from tilescope.app.cli.bench import main as bench_main

    return bench_main(quick=args.quick, as_json=args.json, target=args.target, peer_python=args.peer_python)


def cmd_export(args) -> int:
    from tilescope.perfdb.engine import open_db, session_factory

    from tilescope.app.workbench.run_export import export_run

    output = Path(args.output) if args.output else None
    if output is not None:  # said before the export's work
        check_writable(output, args.force)
    with session_factory(open_db(args.db))() as session:
        run_id = resolve_run(session, args.run)
        text, _, left_out = export_run(session, run_id, args.format)
    if left_out:
        note(left_out)
    if output is None:
        sys.stdout.write(text)
        return 0
    replace_file(output, text)
    what, _, how = EXPORT_FORMATS[args.format][0].partition(", ")
    print(f"wrote run {run_id}'s {what} to {output} ({how})")
    return 0


def cmd_import(args) -> int:
    """`import REPORT`: a measured run on its own; `import RUN CSV`: a measured run of RUN's model."""
    if args.csv is None:
        from tilescope.app.cli.import_report import import_report

        return import_report(args.first, args.label, args.target, args.db)
    if args.target is not None:
        raise TilescopeError("--target is for a report imported alone: RUN's target is the one measured")
    try:
        run = run_ref(args.first)
    except argparse.ArgumentTypeError as err:
        raise TilescopeError(str(err)) from None
    return _import_beside(run, args.csv, args.label, args.db)


def _import_beside(run: int | str, csv_name: str, label: str, db: str | None) -> int:
    from tilescope.perfdb.engine import open_db, session_factory
    from tilescope.perfdb.ops_csv import CsvImportError, import_csv
    from tilescope.perfdb.runs import op_records

    path = Path(csv_name)
    text = read_text(csv_name)
    with session_factory(open_db(db))() as session:
        simulated = resolve_run(session, run)
        try:
            run_id, problems = import_csv(session, text, simulated, path.name, label)
        except CsvImportError as err:
            raise TilescopeError(str(err)) from None
        matched = len(op_records(session, run_id))
    for problem in problems:
        warning(problem)
    print(f"run {run_id}: measured, {matched} op(s) from {path.name}; {len(problems)} bad row(s) skipped")
    print(f"compare: tilescope diff {simulated} {run_id}")
    return 0


def cmd_diff(args) -> int:
    from tilescope.app.cli.diff import main as diff_main

    return diff_main(*run_ids(args.db, args.a, args.b), args.db, args.json)


def cmd_stats(args) -> int:
    from tilescope.app.cli.stats import main as stats_main

    return stats_main(*run_ids(args.db, args.run), args.by, args.db, args.json)


def cmd_db(args) -> int:
    from tilescope.app.cli.db import upgrade_main

    return upgrade_main(args.db)
