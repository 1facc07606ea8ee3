"""The server's cache directories: where background jobs keep their results and progress (Dash's
diskcache), and where large compilations are kept across restarts.

Both are private to the server's user (workbench.private_files). The jobs' cache holds pickled
results, which the server unpickles, and the secret that signs the job handles a page sends back:
whoever read it could have a cancel name any process. A jobs' cache that was open to others (an
older tilescope's) is emptied, as what it holds may be known or changed. A cache that cannot be
made private (another user's, read-only) is said in one line at start: jobs then keep their
results in a private temporary directory for this run, and compilations are not kept.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import sqlite3
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import diskcache
import platformdirs

from tilescope.compiler.errors import TilescopeError

from tilescope.app.workbench import runs
from tilescope.app.workbench.private_files import DIRECTORY_MODE, FILE_MODE, NotPrivate, make_private

JOBS = "jobs"
COMPILATIONS = "compilations"
DATABASE_FILES = ("cache.db", "cache.db-wal", "cache.db-shm")  # sqlite's, made with the umask's mode


@dataclass(frozen=True)
class CacheDirs:
    jobs: Path  # the jobs' diskcache
    compilations: Path | None  # where large compilations are kept; None: not kept


def default_jobs_dir() -> Path:
    return Path(platformdirs.user_cache_dir("tilescope")) / JOBS


def cache_dirs(jobs: Path) -> CacheDirs:
    """The caches of a server whose jobs' cache is `jobs` (compilations beside it), made private;
    decided once, before a server's workers start, as they must share the jobs' directory."""
    try:
        make_private(jobs.parent)
        if make_private(jobs, entries=True):  # others may have read the signing secret, or changed a result
            shutil.rmtree(jobs)
            make_private(jobs)
        open_job_cache(jobs).close()  # a database sqlite cannot write (read-only) fails here, not per job
    except (NotPrivate, OSError, sqlite3.Error) as err:
        return CacheDirs(_for_this_run(str(err) if isinstance(err, NotPrivate) else f"{jobs}: {err}"), None)
    try:
        compilations = jobs.parent / COMPILATIONS
        make_private(compilations, entries=True)
    except NotPrivate as err:
        _not_kept(err)
        compilations = None
    return CacheDirs(jobs, compilations)


def keep_compilations_in(directory: Path | None) -> None:
    """Keep large compilations in `directory` (None: not at all), if it is still private."""
    try:
        runs.keep_compilations_in(str(directory) if directory else None)
    except NotPrivate as err:  # made another user's, or read-only, since cache_dirs looked
        runs.keep_compilations_in(None)
        _not_kept(err)


def _not_kept(err: NotPrivate) -> None:
    _say(f"{err}; large compilations are not kept across restarts")


def open_job_cache(jobs: Path) -> diskcache.Cache:
    """The jobs' diskcache in `jobs` (private already: see cache_dirs), its files 0600."""
    cache = diskcache.Cache(str(jobs), disk=PrivateDisk)
    for name in DATABASE_FILES:
        with contextlib.suppress(FileNotFoundError):
            if stat.S_IMODE(os.stat(jobs / name).st_mode) != FILE_MODE:
                os.chmod(jobs / name, FILE_MODE)
    return cache


class PrivateDisk(diskcache.Disk):
    """diskcache's files for large values 0600, and their directories 0700 (diskcache makes both
    with the umask's mode)."""

    def filename(self, key=diskcache.core.UNKNOWN, value=diskcache.core.UNKNOWN):
        filename, full_path = super().filename(key, value)
        # the value's two levels of directories, made here so diskcache finds them (os.makedirs
        # gives a mode to the last level alone); what fails here, diskcache meets as it writes, and
        # one another process removes meanwhile it makes again, 0755 in the 0700 cache: out of reach
        parent = Path(full_path).parent
        for directory in (parent.parent, parent):
            with contextlib.suppress(OSError):
                os.mkdir(directory, DIRECTORY_MODE)
        return filename, full_path

    def store(self, value, read, key=diskcache.core.UNKNOWN):
        size, mode, filename, db_value = super().store(value, read, key)
        if filename:
            os.chmod(os.path.join(self._directory, filename), FILE_MODE)
        return size, mode, filename, db_value


def _for_this_run(why: str) -> Path:
    """A private temporary directory for the jobs' cache, removed as the server stops."""
    try:
        jobs = Path(tempfile.mkdtemp(prefix="tilescope-")) / JOBS
        make_private(jobs)
        open_job_cache(jobs).close()
    except (NotPrivate, OSError, sqlite3.Error) as err:
        elsewhere = tempfile.gettempdir()
        raise TilescopeError(f"{why}; and no directory for the jobs' results in {elsewhere}: {err}") from None
    _remove_at_exit(jobs.parent)
    _say(f"{why}; jobs keep their results in {jobs} for this run only, and compilations are not kept")
    return jobs


def _remove_at_exit(directory: Path) -> None:
    """Remove `directory` as this process exits. A process forked from it inherits the handler
    (gunicorn's workers are forked after the caches are decided), and one worker that ends alone,
    restarted, would remove the directory under the others: there it does nothing."""
    maker = os.getpid()

    def remove() -> None:
        if os.getpid() == maker:
            shutil.rmtree(directory, ignore_errors=True)

    atexit.register(remove)


def _say(line: str) -> None:
    sys.stderr.write(f"tilescope: {line[:400]}\n")  # one write: threads' lines stay whole
