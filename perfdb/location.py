"""Which database is opened when none is named: $TILESCOPE_DB, else one SQLite file in the user's
data directory."""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import user_data_dir

ENV_VAR = "TILESCOPE_DB"


def embedded_url() -> str:
    """The embedded database: one SQLite file in the user's data directory, never the working tree."""
    return f"sqlite:///{Path(user_data_dir('tilescope')) / 'perf.db'}"


def default_url() -> str:
    return os.environ.get(ENV_VAR) or embedded_url()
