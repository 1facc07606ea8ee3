"""`tilescope validate`: the simulator against the shipped public hardware measurements, or with
`--models` whole models against tt-metal's published figures (validation_report.py prints them)."""

from __future__ import annotations

import argparse

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
    validate.add_argument("--json", action="store_true", help="rows and summaries as JSON")
    validate.add_argument(
        "--fit",
        action="store_true",
        help="refit Wormhole's pipeline constants on the calibration half (needs scipy) and report with them",
    )
    validate.set_defaults(command_fn=cmd_validate)


def cmd_validate(args: argparse.Namespace) -> int:
    from tilescope.app.cli.validation_report import main

    return main(args.models, args.rows, args.fit, args.json)
