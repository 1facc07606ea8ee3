"""Which database is opened when none is named: $TILESCOPE_DB, else one SQLite file in the user's
data directory, readable by the user alone."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from platformdirs import user_data_dir

ENV_VAR = "TILESCOPE_DB"
PRIVATE_FOLDER, PRIVATE_FILE = 0o700, 0o600


def embedded_path() -> Path:
    return Path(user_data_dir("tilescope")) / "perf.db"


def embedded_url() -> str:
    """The embedded database: one SQLite file in the user's data directory, never the working tree."""
    return f"sqlite:///{embedded_path()}"


def default_url() -> str:
    return os.environ.get(ENV_VAR) or embedded_url()


def keep_private(db: Path) -> None:
    """The embedded database holds every model's source and run: its directory is made 0700 and
    the file 0600 (SQLite gives its -wal and -shm files the database's mode), or tightened to
    that if an older tilescope made them 0755 and 0644."""
    db.parent.mkdir(mode=PRIVATE_FOLDER, parents=True, exist_ok=True)
    try:  # an empty file is a new database to SQLite, which would otherwise make it 0644
        os.close(os.open(db, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, PRIVATE_FILE))
    except FileExistsError:
        pass
    for path, mode in (
        (db.parent, PRIVATE_FOLDER),
        *((db.with_name(db.name + end), PRIVATE_FILE) for end in ("", "-wal", "-shm")),
    ):
        _tighten(path, mode)


def _tighten(path: Path, mode: int) -> None:
    """Take from `path` any permission past `mode`, if it is the user's own."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return
    if st.st_uid == os.geteuid() and not stat.S_ISLNK(st.st_mode) and stat.S_IMODE(st.st_mode) & ~mode:
        os.chmod(path, stat.S_IMODE(st.st_mode) & mode)
