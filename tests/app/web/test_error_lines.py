"""A failure told in one line, one way wherever it is told: a page's message, a job's, the log."""

from __future__ import annotations

import errno
import os
import sqlite3

import pytest

from tilescope.app.web.error_lines import LINE_CHARS, error_line
from tilescope.compiler.errors import ModelLoadError, TilescopeError


def test_tilescopes_own_errors_are_said_as_they_are():
    """They are written for their reader, naming the cause."""
    assert error_line(ModelLoadError("no such model 'zoo:nope'")) == "no such model 'zoo:nope'"


@pytest.mark.parametrize(
    "err, line",
    [
        (
            OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/srv/tilescope/jobs/cache.db"),
            "OSError: No space left on device",
        ),
        (
            FileNotFoundError(errno.ENOENT, "No such file", "/home/srv/.cache"),
            "FileNotFoundError: No such file or directory",
        ),
    ],
)
def test_a_system_error_says_its_cause_without_the_servers_path(err, line):
    assert error_line(err) == line


def test_any_other_error_is_named_by_its_type():
    assert error_line(sqlite3.OperationalError("database is locked")) == "OperationalError: database is locked"
    assert error_line(ValueError()) == "ValueError"


@pytest.mark.parametrize("err", [ValueError("first\nsecond"), TilescopeError("first\nsecond"), KeyError("x" * 10_000)])
def test_an_error_is_its_first_line_cut_to_a_readable_length(err):
    line = error_line(err)
    assert "\n" not in line and "second" not in line and len(line) <= LINE_CHARS


def test_an_error_with_nothing_on_its_first_line_is_named_by_its_type():
    assert error_line(ValueError("\nsecond")) == "ValueError" and error_line(TilescopeError("")) == "TilescopeError"
