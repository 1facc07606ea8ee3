"""`python -m app.cli`: the `tilescope` command."""

from . import entry

entry()
