"""`tilescope validate`: the simulator against the shipped public hardware measurements, with
`--models` whole models against tt-metal's published figures (validation_report.py prints them),
or with `--report` real ops perf reports replayed op by op (report_validation.py)."""

from __future__ import annotations

import argparse

from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.validation.files import MODELS_FILE


def add(sub: argparse._SubParsersAction) -> None:
    validate = sub.add_parser(
        "validate",
        help="simulated vs published hardware times (tt-metal GEMM and eltwise benchmarks, or with --models whole "
        "models): error and rank agreement",
    )
    validate.add_argument(
        "--rows", action="store_true", help="print every measurement with its prediction (always, with --models)"
    )
    validate.add_argument(
        "--models",
        nargs="?",
        const=str(MODELS_FILE),
        metavar="CSV",
        help="whole models: predicted vs published tt-metal throughput, every row and a summary per split "
        "(the shipped table, or a CSV with its columns)",
    )
    validate.add_argument(
        "--report",
        nargs="+",
        metavar="FILE",
        help="ops perf reports (tt-metal's CSV): each replayed, and its ops' measured device time against the "
        "predicted, per kind of op and per report",
    )
    validate.add_argument(
        "--target", help="with --report: the target to replay on (default: the chip each report names)"
    )
    validate.add_argument("--json", action="store_true", help="rows and summaries as JSON")
    validate.add_argument(
        "--fit",
        action="store_true",
        help="refit Wormhole's pipeline constants on the calibration half (needs scipy) and report with them",
    )
    validate.set_defaults(command_fn=cmd_validate)


def cmd_validate(args: argparse.Namespace) -> int:
    if args.report:
        if args.models is not None or args.fit:
            raise TilescopeError("--report compares reports alone: not with --models or --fit")
        from tilescope.app.cli.report_validation import main as report_main

        return report_main(args.report, args.target, args.rows, args.json)
    if args.target:
        raise TilescopeError("--target is for --report: the published measurements name their own")
    from tilescope.app.cli.validation_report import main

    return main(args.models, args.rows, args.fit, args.json)
