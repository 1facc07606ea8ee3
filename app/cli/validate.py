"""`tilescope validate`: the simulator against the shipped public hardware measurements.

Prints, per target, kind of op and split (the Wormhole rows the constants were fitted on, the
Wormhole rows held out, the Blackhole rows predicted with no refit), the mean absolute error in
throughput and the rank agreement; `--rows` adds every row, `--fit` refits the Wormhole constants
on the calibration half and shows the errors they give.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from compiler import validation
from compiler.errors import TilescopeError
from compiler.target import load_target

SPLIT_NOTE = {
    validation.FIT: "constants fitted on these",
    validation.HELD_OUT: "never seen by the fit",
    validation.NO_REFIT: "Wormhole's fitted constants, own specs",
}


def add(sub: argparse._SubParsersAction) -> None:
    validate = sub.add_parser(
        "validate",
        help="simulated vs published hardware times (tt-metal GEMM and eltwise benchmarks): error and rank agreement",
    )
    validate.add_argument("--rows", action="store_true", help="print every measurement with its prediction")
    validate.add_argument("--json", action="store_true", help="rows and summaries as JSON")
    validate.add_argument(
        "--fit",
        action="store_true",
        help="refit Wormhole's pipeline constants on the calibration half (needs scipy) and report with them",
    )
    validate.set_defaults(command_fn=cmd_validate)


def cmd_validate(args: argparse.Namespace) -> int:
    gemm = validation.load_gemm()
    fitted: dict[str, float] = {}
    targets = load_target
    if args.fit:
        fitted = _fit(gemm)
        targets = validation.fitted_targets(fitted)
    rows = validation.gemm_rows(gemm, targets) + validation.eltwise_rows(validation.load_eltwise(), targets)
    summaries = validation.summaries(rows)
    if args.json:
        report = {
            "fitted": fitted,
            "summaries": [asdict(s) for s in summaries],
            "rows": [{**asdict(r), "error": r.error} for r in rows],
        }
        print(json.dumps(report, indent=1))
        return 0
    if fitted:
        print("fitted on the calibration half: " + ", ".join(f"{k} = {v:.4g}" for k, v in fitted.items()))
    if args.rows:
        _print_rows(rows)
    _print_summaries(summaries)
    return 0


def _fit(gemm: list[validation.GemmMeasurement]) -> dict[str, float]:
    try:
        return validation.fit(gemm)
    except ImportError:
        raise TilescopeError("validate --fit needs scipy: pip install 'tilescope[calibrate]'") from None


def _print_rows(rows: list[validation.Row]) -> None:
    print(
        f"{'target':<15} {'split':<9} {'shape':<34} {'layout':<17} {'config':<11} "
        f"{'measured us':>12} {'simulated us':>13} {'error':>7}"
    )
    for r in rows:
        print(
            f"{r.target:<15} {r.split:<9} {r.shape:<34} {r.layout:<17} {r.config:<11} "
            f"{r.measured_ns / 1e3:>12.1f} {r.predicted_ns / 1e3:>13.1f} {r.error:>+7.1%}"
        )
    print()


def _print_summaries(summaries: list[validation.Summary]) -> None:
    print(f"{'target':<15} {'ops':<8} {'split':<9} {'rows':>5} {'mean abs error':>15} {'rank agreement':>25}  ")
    for s in summaries:
        ranks = f"{s.rank_agreement:.0%} of {s.rank_pairs} pairs" if s.rank_pairs else "no pairs"
        print(
            f"{s.target:<15} {s.kind:<8} {s.split:<9} {s.rows:>5} {s.mean_abs_error:>15.1%} {ranks:>25}  "
            f"{SPLIT_NOTE[s.split]}"
        )
    print(
        "error: simulated over measured throughput, minus one (device time, as the benchmark's profiler "
        "measured it); sources: compiler/measurements/SOURCES.md"
    )
