"""What the command line and the page use when not told otherwise: the target a model runs on,
and the most ops a model the page compiles may have."""

from __future__ import annotations

DEFAULT_TARGET = "wormhole_n150"
DEFAULT_MAX_OPS = 50_000  # ~20 s and ~1.5 GB to compile and store on a 2-core machine
