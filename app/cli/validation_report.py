"""What `tilescope validate` prints: the simulator against the shipped public hardware measurements.

Prints, per target, kind of op and split (the rows the constants were fitted on: Wormhole's
pipeline constants, Blackhole's unpacker rate; the rows held out), the mean absolute error in
throughput and the rank agreement; `--rows` adds every row, `--fit` refits the constants on the
calibration half and shows the errors they give.

`--models` compares whole models instead: every published tt-metal model figure (or those of a
table given after it) against the simulated step of the zoo model that reproduces it, each row
and then a summary per split; with `--fit`, under the refitted constants.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict

from tilescope.compiler.validation import whole_models
from tilescope.compiler.validation import agreement
from tilescope.compiler.validation import calibration
from tilescope.compiler.validation import microbench
from tilescope.compiler.validation import op_benchmarks
from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.validation.files import SOURCES_FILE
from tilescope.compiler.targets.catalog import load_target
from tilescope.compiler.targets.chip import Target

UNPACKER_KEY = f"{op_benchmarks.UNPACKER_REFIT}.{calibration.UNPACKER}"
SPLIT_NOTE = {
    op_benchmarks.FIT: "constants fitted on these (Blackhole: its unpacker)",
    op_benchmarks.HELD_OUT: "never seen by the fit",
    op_benchmarks.NO_REFIT: "Wormhole's fitted constants, own specs",
}


def main(models: str | None, every_row: bool, fit: bool, as_json: bool) -> int:
    """`models`: the whole-model table to compare against, or None for the GEMM and eltwise rows."""
    # the table first: a malformed one is reported before any fit or compile
    measurements = whole_models.load_models(models) if models is not None else None
    gemm = op_benchmarks.load_gemm()
    fitted: dict[str, float] = {}
    targets = load_target
    if fit:
        fitted = _fit(gemm)
        unpacker = fitted.pop(UNPACKER_KEY)
        targets = calibration.fitted_targets(dict(fitted), unpacker)  # its own copy: the key below is not a constant
        fitted[UNPACKER_KEY] = unpacker
    if measurements is not None:
        return _models(measurements, targets, fitted, as_json)
    rows = microbench.gemm_rows(gemm, targets) + microbench.eltwise_rows(op_benchmarks.load_eltwise(), targets)
    summaries = agreement.summaries(rows)
    if as_json:
        report = {
            "fitted": fitted,
            "summaries": [asdict(s) for s in summaries],
            "rows": [{**asdict(r), "error": r.error} for r in rows],
        }
        print(json.dumps(report, indent=1))
        return 0
    if fitted:
        print("fitted on the calibration half: " + ", ".join(f"{k} = {v:.4g}" for k, v in fitted.items()))
    if every_row:
        _print_rows(rows)
    _print_summaries(summaries)
    return 0


def _fit(gemm: list[op_benchmarks.GemmMeasurement]) -> dict[str, float]:
    """Wormhole's constants, and under UNPACKER_KEY Blackhole's unpacker rate."""
    try:
        fitted = calibration.fit(gemm)
        return {**fitted, UNPACKER_KEY: calibration.fit_unpacker(gemm, fitted)}
    except ImportError:
        raise TilescopeError("validate --fit needs scipy: pip install 'tilescope[calibrate]'") from None


def _print_rows(rows: list[microbench.Row]) -> None:
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


def _print_summaries(summaries: list[agreement.Summary]) -> None:
    print(f"{'target':<15} {'ops':<8} {'split':<9} {'rows':>5} {'mean abs error':>15} {'rank agreement':>25}  ")
    for s in summaries:
        ranks = f"{s.rank_agreement:.0%} of {s.rank_pairs} pairs" if s.rank_pairs else "no pairs"
        print(
            f"{s.target:<15} {s.kind:<8} {s.split:<9} {s.rows:>5} {s.mean_abs_error:>15.1%} {ranks:>25}  "
            f"{SPLIT_NOTE[s.split]}"
        )
    print(
        "error: simulated over measured throughput, minus one (device time, as the benchmark's profiler "
        f"measured it); sources: {SOURCES_FILE}"
    )


def _models(
    measurements: list[whole_models.ModelMeasurement],
    targets: Callable[[str], Target],
    fitted: dict[str, float],
    as_json: bool,
) -> int:
    rows = whole_models.model_rows(measurements, targets)
    summaries = whole_models.summaries(rows)
    if as_json:
        report = {
            "policy": whole_models.POLICY,
            "fitted": fitted,
            "summaries": [asdict(s) for s in summaries],
            "rows": [r.as_dict() for r in rows],
        }
        print(json.dumps(report, indent=1))
        return 0
    if fitted:
        print("fitted on the calibration half: " + ", ".join(f"{k} = {v:.4g}" for k, v in fitted.items()))
    _print_model_rows(rows)
    _print_model_summaries(summaries)
    return 0


def _print_model_rows(rows: list[whole_models.ModelRow]) -> None:
    width = max([len(r.measurement.model) for r in rows] + [5])
    print(
        f"{'model':<{width}} {'hardware':<8} {'metric':<11} {'published':>10} {'predicted':>10} {'ratio':>7}  "
        f"{'split':<8}  {'grid':<5}  formats"
    )
    for r in rows:
        m = r.measurement
        start = f"{m.model:<{width}} {m.hardware:<8} {m.metric:<11} {m.published:>10.4g}"
        if r.error:
            print(f"{start}  error: {r.error}")
            continue
        grid = f"{m.grid[0]}x{m.grid[1]}" if m.grid else "all"
        print(f"{start} {r.predicted:>10.4g} {r.ratio:>6.2f}x  {m.split:<8}  {grid:<5}  {m.formats}")
    print()


def _print_model_summaries(summaries: list[whole_models.ModelSummary]) -> None:
    print(f"{'split':<8} {'rows':>4} {'errors':>6} {'geomean ratio':>13} {'mean |log2|':>11} {'within 2x':>9}  worst")
    for s in summaries:
        if s.rows:
            print(
                f"{s.split:<8} {s.rows:>4} {s.errors:>6} {s.geomean_ratio:>12.2f}x {s.mean_abs_log2_ratio:>11.2f} "
                f"{s.within_2x:>4} of {s.rows:<2}  {s.worst_ratio:.2f}x {s.worst_model}"
            )
        else:
            print(f"{s.split:<8} {s.rows:>4} {s.errors:>6} {'-':>13} {'-':>11} {'-':>9}  -")
    print(
        f"ratio: simulated over published time per step (above 1: tilescope slower), {whole_models.POLICY} "
        f"policy; sources: {SOURCES_FILE}"
    )
