"""What `tilescope validate --report FILE...` prints: each report replayed (compiler/profiles/replay.py)
and compared with what it measured, per kind of op over every report (rows, median and mean
absolute error, the worst rows) and per report (the device time of its built ops, measured and
predicted); `--rows` adds every op, `--json` all of it."""

from __future__ import annotations

import json

from tilescope.app.cli.messages import warning
from tilescope.app.cli.replay import read_report

NAME_SHOWN = 48  # characters of an op's name in the worst rows (a LOC may run to 1,024)


def main(files: list[str], target: str | None, every_row: bool, as_json: bool) -> int:
    from tilescope.compiler.profiles.replay import replay
    from tilescope.compiler.validation.measured_reports import kind_summaries, op_rows, report_summary

    reports = [read_report(name)[0] for name in files]  # every file read before any replay
    rows, summaries = [], []
    for report in reports:
        replayed = replay(report, target)
        for line in replayed.warnings:
            warning(line)
        rows += op_rows(replayed)
        summaries.append(report_summary(replayed))
    kinds = kind_summaries(rows)
    if as_json:
        out = {
            "error": "simulated over measured throughput, minus one",
            "rows": [r.as_dict() for r in rows],
            "kinds": [k.as_dict() for k in kinds],
            "reports": [s.as_dict() for s in summaries],
        }
        print(json.dumps(out, indent=1))
        return 0
    if every_row:
        _print_rows(rows)
    _print_kinds(kinds)
    _print_reports(summaries)
    return 0


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.0%}"


def _abs_pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _short(name: str) -> str:
    return name if len(name) <= NAME_SHOWN else f"{name[: NAME_SHOWN - 3]}..."


def _print_rows(rows) -> None:
    print(f"{'report':<34} {'op':<40} {'kind':<22} {'measured us':>12} {'predicted us':>13} {'error':>7}")
    for r in rows:
        print(
            f"{_short(r.report)[:34]:<34} {_short(r.name)[:40]:<40} {r.kind[:22]:<22} {r.measured_ns / 1e3:>12.1f} "
            f"{r.predicted_ns / 1e3:>13.1f} {_pct(r.error):>7}"
        )
    print()


def _print_kinds(kinds) -> None:
    print(
        f"{'kind':<30} {'rows':>5} {'measured us':>12} {'predicted us':>13} {'median |err|':>12} {'mean |err|':>10}  "
        "worst (measured / predicted us)"
    )
    for k in kinds:
        worst = ", ".join(f"{_short(r.name)} ({r.measured_ns / 1e3:.1f} / {r.predicted_ns / 1e3:.1f})" for r in k.worst)
        views = f" ({k.no_kernel} views)" if k.no_kernel else ""
        print(
            f"{k.kind:<30} {k.rows:>5} {k.measured_ns / 1e3:>12.1f} {k.predicted_ns / 1e3:>13.1f} "
            f"{_abs_pct(k.median_abs_error):>12} {_abs_pct(k.mean_abs_error):>10}  {worst}{views}"
        )
    print()


def _print_reports(summaries) -> None:
    print(
        f"{'report':<44} {'target':<17} {'built':>12} {'coverage':>8} {'measured us':>12} {'predicted us':>13} "
        f"{'error':>7}"
    )
    for s in summaries:
        print(
            f"{_short(s.name)[:44]:<44} {s.target:<17} {f'{s.built_ops}/{s.ops}':>12} {s.coverage:>8.1%} "
            f"{s.measured_ns / 1e3:>12.1f} {s.predicted_ns / 1e3:>13.1f} {_pct(s.error):>7}"
        )
    print(
        "error: simulated over measured throughput, minus one (+10%: the simulator is 10% optimistic); "
        "device time of the built ops, as the report's DEVICE KERNEL DURATION measured it; nothing fitted to these"
    )
