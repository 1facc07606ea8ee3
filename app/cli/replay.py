"""`tilescope replay REPORT`: a measured ops perf report replayed through tilescope's compiler and
simulator (compiler/profiles/replay.py) and stored as a simulated run named op for op as the
measured run is; what it prints: the target, the share of the report's device time it built, each
op code it did not build (with its count, share and why), the notes most ops share, and how to
compare it with the measured run."""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.profiles.replay_target import DEFAULT_TARGET
from tilescope.compiler.targets.catalog import builtin_names

from tilescope.app.cli.import_report import MAX_BYTES
from tilescope.app.cli.input_files import read_bytes
from tilescope.app.cli.messages import note, warning
from tilescope.app.cli.options import add_common

NOTES_SHOWN = 5  # the notes the most ops share, printed after the coverage
REPLAY_TARGET_HELP = (
    f"built-in target ({', '.join(builtin_names())}) or a target .toml file (default: the chip the report's "
    f"DEVICE ARCH names, or the system of that many of them; {DEFAULT_TARGET} when it names none)"
)


def add(sub: argparse._SubParsersAction) -> None:
    replay = sub.add_parser(
        "replay",
        help="build each op of a measured ops perf report as an op of tilescope's IR, simulate it and store a "
        "simulated run aligned op for op with the measured one (compare them with tilescope diff)",
    )
    replay.add_argument("report", help="tt-metal's ops perf report (CSV)")
    replay.add_argument("--target", help=REPLAY_TARGET_HELP)
    replay.add_argument("--label", default="", help="a note for the run (default: replay: REPORT on TARGET)")
    add_common(replay, target=False)
    replay.set_defaults(command_fn=cmd_replay)


def read_report(name: str):
    """The report in file `name` and its text; one line naming the cause when it cannot be read."""
    from tilescope.compiler.profiles.ops_report import read_ops_report
    from tilescope.compiler.profiles.profile_file import profile_text

    source = Path(name).name or name
    text = profile_text(read_bytes(name, MAX_BYTES), name)
    return read_ops_report(text, source), text


def cmd_replay(args: argparse.Namespace) -> int:
    from tilescope.compiler.profiles.replay import replay
    from tilescope.perfdb.engine import open_db, session_factory

    from tilescope.app.workbench.replay_runs import store_replay

    report, text = read_report(args.report)
    if not report.ops:
        raise TilescopeError(f"{report.source}: no device op to replay")
    replayed = replay(report, args.target)
    for line in replayed.warnings:
        warning(line)
    with session_factory(open_db(args.db))() as session:
        stored = store_replay(session, replayed, text, args.label, args.target or "")
    for line in coverage_lines(replayed):
        print(line)
    for line, count in Counter(n for r in replayed.ops for n in r.notes).most_common(NOTES_SHOWN):
        note(f"{count} op(s): {line}")
    print(f"run {stored.run_id}: simulated, {len(replayed.timings)} op(s) of {report.source} on {replayed.target.name}")
    if stored.measured_id is not None:
        print(f"compare: tilescope diff {stored.measured_id} {stored.run_id}")
    return 0


def coverage_lines(replayed) -> list[str]:
    """The coverage: built ops' share of the device time, then each op code not built."""
    c = replayed.coverage
    predicted = sum(t.duration_ns for t in replayed.timings)
    lines = [
        f"{replayed.report.source}: built {c.built_ops:,} of {c.ops:,} ops, {c.share:.1%} of its device time "
        f"({c.built_ns / 1e3:,.1f} us measured, {predicted / 1e3:,.1f} us predicted on {replayed.target.name})"
    ]
    for u in c.unbuilt:
        lines.append(f"  not built: {u.op_code} x{u.count}, {u.share:.1%} of device time: {u.reason}")
    return lines
