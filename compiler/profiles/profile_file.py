"""A profile file, whichever kind it is: a JSON trace (compiler/profiles/chrome_trace.py) when its
text opens a JSON object or list, else an ops perf report (compiler/profiles/ops_report.py)."""

from __future__ import annotations

from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.profiles.chrome_trace import read_trace
from tilescope.compiler.profiles.ops_report import read_ops_report
from tilescope.compiler.profiles.report import Report


def read_profile(text: str, source: str) -> Report:
    """The profile in `text`, named `source` in what it says."""
    return read_trace(text, source) if is_trace(text) else read_ops_report(text, source)


def is_trace(text: str) -> bool:
    """Whether `text` is a JSON trace (it opens a JSON object or list) rather than an ops perf report."""
    return text.lstrip("\ufeff \t\r\n")[:1] in ("{", "[")


def profile_text(data: bytes, source: str) -> str:
    """A profile file's bytes as text (UTF-8, a byte order mark dropped)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise TilescopeError(f"{source}: not a text file (byte {err.start:,} is not UTF-8)") from None
