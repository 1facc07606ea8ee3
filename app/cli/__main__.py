"""`python -m tilescope.app.cli`: the `tilescope` command."""

from tilescope.app.cli import entry

entry()
