"""The formats a stored run is exported in (app.workbench.run_export writes them)."""

from __future__ import annotations

# format -> (what a user picks, file name suffix)
EXPORT_FORMATS = {
    "overrides": ("overrides, tilescope JSON", "overrides.json"),
    "tt-mlir": ("overrides, tt-mlir options", "overrides.txt"),
    "tt-explorer": ("overrides, TT-Explorer JSON", "tt-explorer.json"),
    "chrome": ("trace, Chrome/Perfetto JSON", "trace.json"),
    "csv": ("ops, tt-metal CSV", "ops.csv"),
}
