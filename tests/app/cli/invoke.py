"""The CLI run in-process, as the tests call it: its exit code, what it printed, never a traceback."""

from __future__ import annotations

from tilescope.app.cli import main


def cli(capsys, *argv):
    try:
        code = main(list(argv))
    except SystemExit as exited:
        code = exited.code
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err
