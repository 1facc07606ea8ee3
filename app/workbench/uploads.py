"""Files a page sends (an uploaded model, an overrides file, a profile measured on hardware): their
names as messages show them, and their bytes, refused past a limit before they are decoded; a
profile read and stored as a measured run."""

from __future__ import annotations

import base64
import binascii
from pathlib import PurePosixPath

from sqlalchemy.orm import Session, sessionmaker

from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.profiles.profile_file import profile_text, read_profile

from tilescope.app.workbench.measured_runs import store_measured
from tilescope.app.workbench.measured_summary import ImportSummary, summarize


def upload_name(filename: str | None, default: str = "upload") -> str:
    """An uploaded file's name as messages and model references show it: its last part, without
    control characters (a newline would break a one-line message), at most 200 characters."""
    name = "".join(ch if ch.isprintable() else "?" for ch in PurePosixPath(filename or default).name)[:200]
    return name or default


def uploaded_bytes(filename: str, contents: str, limit: int, what: str) -> bytes:
    """The bytes of a data: URL as dcc.Upload gives them; refused past `limit` before decoding."""
    body = (contents or "").partition(",")[2]
    if len(body) > (limit + 2) // 3 * 4:  # base64 of `limit` bytes
        raise TilescopeError(
            f"{filename}: {len(body) * 3 / 4 / 2**20:,.1f} MiB is over the {limit // 2**20} MiB {what} limit"
        )
    try:
        return base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        raise TilescopeError(f"{filename}: the upload is damaged (not base64)") from None


def uploaded_text(filename: str, data: bytes, access, on_stage=lambda stage: None) -> str:
    """The MLIR text of an uploaded model: an .mlir file's own, a .pt2's as the PyTorch import
    writes it, made in a child process within `access`'s limits (its graph is read, no pickle in
    it opened: compiler/frontend/torch_archive.py)."""
    if not filename.lower().endswith(".pt2"):
        try:
            return data.decode()
        except UnicodeDecodeError:
            raise TilescopeError(f"{filename}: not MLIR text (not UTF-8)") from None

    def work(say) -> str:
        from tilescope.compiler.frontend.torch_models import import_pt2

        say(f"reading the PyTorch program {filename}")
        return import_pt2(data, name=filename).text

    return access.isolated(work, filename, on_stage)


def upload_report(
    sessions: sessionmaker[Session], filename: str, contents: str, limit: int, on_stage=lambda stage: None
) -> ImportSummary:
    """Store an uploaded ops perf report or JSON trace (a data: URL's base64 body, as dcc.Upload
    gives it) as a measured run; what was read and stored. Bad files raise TilescopeError with one
    line naming the cause, and store nothing."""
    filename = upload_name(filename)
    text = profile_text(uploaded_bytes(filename, contents, limit, "upload"), filename)
    on_stage(f"reading {filename}")
    report = read_profile(text, filename)
    on_stage(f"storing {len(report.ops):,} ops")
    with sessions() as session:
        stored = store_measured(session, report, text)
    return summarize(report, stored)
