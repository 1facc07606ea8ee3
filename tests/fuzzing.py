"""What the fuzz tests of the file readers share: how many examples they run, the property every
reader keeps (a result, or a TilescopeError of one short line), and a tally of the cases run.

CI runs a few hundred examples per category. `TILESCOPE_FUZZ_EXAMPLES=N` runs N per category;
`TILESCOPE_FUZZ_REPORT=FILE` appends, when the run ends, a line per category to FILE: the cases
run, the slowest one, and the process's peak RSS.
"""

from __future__ import annotations

import atexit
import os
import resource
import time
from collections.abc import Callable
from contextlib import contextmanager

from hypothesis import HealthCheck, settings

EXAMPLES_ENV = "TILESCOPE_FUZZ_EXAMPLES"
REPORT_ENV = "TILESCOPE_FUZZ_REPORT"
MAX_MESSAGE = 1000  # characters: an error quotes what the user wrote, cut
# what a field of a CSV file read may hold that breaks a careless reader: numbers of every odd
# spelling and size, and characters that end fields, lines or strings
HOSTILE_FIELDS = [
    "",
    "0",
    "1",
    "-1",
    "2.5",
    "1e15",
    "1e16",
    "1e308",
    "nan",
    "inf",
    "-inf",
    "1_000",
    "0x10",
    "\u0663",
    "\x00",
    '"',
    "\r",
    "\n",
    ",",
    ";",
    "\ufeff",
]


def fuzz_settings(default: int = 150) -> settings:
    return settings(
        max_examples=int(os.environ.get(EXAMPLES_ENV) or default),
        deadline=None,  # speed is not the property; a hang shows as a stuck run
        # the examples are large on purpose (deep nesting, long fields); a fixture's database is
        # shared by the examples on purpose (one stored base run)
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
    )


def one_line(message: str) -> str:
    """The property of every reader's errors: one line, short enough to read."""
    assert message.strip(), "an empty error"
    assert "\n" not in message and "\r" not in message, message[:300]
    assert len(message) <= MAX_MESSAGE, message[:300]
    return message


_cases: dict[str, list] = {}  # category: [cases, slowest seconds, slowest case's description]


@contextmanager
def case(category: str, description: Callable[[], str]):
    """Count one case of `category` and time it; `description` is called only for a new slowest."""
    start = time.perf_counter()
    try:
        yield
    finally:
        seconds = time.perf_counter() - start
        tally = _cases.setdefault(category, [0, 0.0, ""])
        tally[0] += 1
        if seconds > tally[1]:
            tally[1], tally[2] = seconds, description()[:120]


@atexit.register
def _report() -> None:
    path = os.environ.get(REPORT_ENV)
    if not path or not _cases:
        return
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    with open(path, "a") as out:
        for category, (count, seconds, slowest) in sorted(_cases.items()):
            out.write(f"| {category} | {count} | {seconds * 1000:.0f} ms: {slowest!r} | {peak_mib:.0f} MiB |\n")
