"""`tilescope calibrate REPORT... -o my_chip.toml`: the chip's few physical constants fitted to a team's
own measured reports (compiler/validation/report_calibration.py), holding out half of the rows by
shape; it prints each constant before and after with its range, the held-out error per kind of
op before and after with the error band each kind's predictions will carry, and each report's
summed device time; then writes the chip's target file with the fitted values and the bands, for
`tilescope run MODEL --target my_chip.toml`."""

from __future__ import annotations

import argparse
import importlib.util
import json
from dataclasses import asdict
from pathlib import Path

from tilescope.compiler.targets.catalog import builtin_names
from tilescope.compiler.targets.chip_file import MAX_NAME
from tilescope.compiler.validation.fit_constants import CONSTANTS

from tilescope.app.cli.messages import warning
from tilescope.app.cli.output_files import check_writable, replace_file


def add(sub: argparse._SubParsersAction) -> None:
    cal = sub.add_parser(
        "calibrate",
        help="fit a chip's physical constants to measured ops perf reports (half of the shapes held out), print the "
        "held-out error per kind of op and write the chip's target file with them and its error bands",
    )
    cal.add_argument("report", nargs="+", help="tt-metal ops perf reports (CSV) measured on one chip")
    cal.add_argument(
        "--target",
        help=f"the chip to fit: built in ({', '.join(builtin_names())}) or a target .toml file "
        "(default: the chip the reports name)",
    )
    cal.add_argument("-o", "--output", required=True, help="the target file to write (.toml)")
    cal.add_argument("--name", help="the calibrated target's name (default: the output file's name)")
    cal.add_argument(
        "--hold-out",
        action="append",
        default=[],
        metavar="REPORT",
        help="a report (one of those given) the fit must not see: judged apart (repeat for more)",
    )
    cal.add_argument(
        "--no-fit",
        dest="fitting",
        action="store_false",
        help="keep the chip's constants: only measure its held-out error and write its error bands",
    )
    cal.add_argument(
        "--fit",
        dest="keys",
        action="append",
        default=[],
        metavar="KEY",
        choices=[c.key for c in CONSTANTS],
        help="fit only this constant (repeat for more; default: all of " + ", ".join(c.key for c in CONSTANTS) + ")",
    )
    cal.add_argument("--force", action="store_true", help="replace the output file if it exists")
    cal.add_argument("--json", action="store_true", help="the constants, errors and bands as JSON")
    cal.set_defaults(command_fn=cmd_calibrate)


def cmd_calibrate(args: argparse.Namespace) -> int:
    from tilescope.compiler.errors import TilescopeError
    from tilescope.compiler.profiles.replay_target import replay_target
    from tilescope.compiler.validation.report_calibration import calibrate

    from tilescope.app.cli.replay import read_report

    if args.fitting and importlib.util.find_spec("scipy") is None:
        raise TilescopeError("calibrate needs scipy to fit: pip install 'tilescope[calibrate]' (--no-fit needs none)")
    output = Path(args.output)
    if output.suffix != ".toml":
        raise TilescopeError(f"{args.output}: a target file's name ends in .toml")
    check_writable(output, args.force)
    name = args.name or output.stem
    if not (0 < len(name) <= MAX_NAME and name.isprintable()):
        raise TilescopeError(f"--name: a target's name is 1 to {MAX_NAME} printable characters")
    reports = [read_report(name)[0] for name in args.report]  # every file read before any fit
    sources = [r.source for r in reports]
    twice = next((s for s in sources if sources.count(s) > 1), None)
    if twice is not None:  # reports are told apart by their file names (held out, summed, named)
        raise TilescopeError(f"two reports are named {twice!r}: give each report once, by a name of its own")
    held = sorted({Path(h).name for h in args.hold_out})
    unknown = [h for h in held if h not in sources]
    if unknown:
        raise TilescopeError(f"--hold-out {unknown[0]}: not one of the reports given")
    if set(held) >= set(sources):
        raise TilescopeError("every report is held out: nothing is left to fit")
    result = calibrate(reports, args.target, held, args.fitting, args.keys)
    for report in reports:  # a report replayed on a chip it was not measured on, or on a guess
        said = replay_target(report, args.target).warning
        if said:
            warning(said)
    text = result.target_file(name, [s for s in sources if s not in held])
    for line in result.notes:
        warning(line)
    replace_file(output, text)
    if args.json:
        print(json.dumps(_as_dict(result, str(output)), indent=1))
        return 0
    for line in report_lines(result):
        print(line)
    print(f"wrote {output} (target {name!r}); use it: tilescope run MODEL --target {output}")
    if any(k.after > k.before for k in result.kinds if k.rows >= 20):
        warning("some kinds predict their held-out rows worse after the fit: a mechanism the simulator lacks")
    return 0


def report_lines(result) -> list[str]:
    lines = [
        f"calibrated {result.chip}: {result.fit_rows:,} rows fitted, {result.held_out_rows:,} held out (by shape)",
        "",
        f"{'constant':34} {'was':>10} {'now':>10}  range",
    ]
    for c in CONSTANTS:
        lines.append(f"{c.key:34} {result.was[c.key]:10.4g} {result.now[c.key]:10.4g}  {c.low:g}-{c.high:g}")
    lines += ["", f"{'held out: kind':30} {'rows':>6} {'median |err| before':>20} {'after':>8} {'band':>8}"]
    for k in result.kinds:
        band = f"+-{k.band:.0%}" if k.band is not None else "default"
        lines.append(f"{k.kind[:30]:30} {k.rows:6,} {k.before:20.0%} {k.after:8.0%} {band:>8}")
    lines += ["", f"{'report':44} {'rows':>6} {'measured us':>12} {'before':>8} {'after':>8}"]
    for r in result.reports:
        apart = "  (held out whole)" if r.held_out else ""
        errors = " ".join(f"{e:+8.0%}" if e is not None else f"{'-':>8}" for e in (r.error_before, r.error))
        lines.append(f"{r.report[:44]:44} {r.rows:6,} {r.measured_ns / 1e3:12.1f} {errors}{apart}")
    lines.append(
        "error: measured / predicted - 1; band: the share of a prediction two measurements in three fall within"
    )
    return lines


def _as_dict(result, written: str) -> dict:
    return {
        "chip": result.chip,
        "written": written,
        "fit_rows": result.fit_rows,
        "held_out_rows": result.held_out_rows,
        "was": result.was,
        "now": result.now,
        "kinds": [asdict(k) for k in result.kinds],
        "reports": [{**asdict(r), "error": r.error, "error_before": r.error_before} for r in result.reports],
        "bands": result.bands,
    }
