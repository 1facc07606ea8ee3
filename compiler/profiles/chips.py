"""The built-in target a report was measured on, from the chip its DEVICE ARCH column names."""

from __future__ import annotations

from typing import NamedTuple

# DEVICE ARCH -> the built-in target of that chip (a Wormhole B0 board is an n150 here; every
# Blackhole board, p100 or p150, a p150: the p100 has fewer cores and no links, its peaks alike)
ARCH_TARGETS = {"wormhole_b0": "wormhole_n150", "wormhole": "wormhole_n150", "blackhole": "blackhole_p150"}
UNSAID_TARGET = "blackhole_p150"  # a report that names no chip: the newest Tenstorrent chip


class ReportTarget(NamedTuple):
    name: str
    note: str  # "" when the report named its chip; else why this target


def report_target(arch: str) -> ReportTarget:
    """The target of a report whose DEVICE ARCH is `arch` (as read: lower case, "" when blank)."""
    if arch in ARCH_TARGETS:
        return ReportTarget(ARCH_TARGETS[arch], "")
    said = f"names chip {arch[:32]!r}, which tilescope does not know" if arch else "names no chip (DEVICE ARCH)"
    return ReportTarget(UNSAID_TARGET, f"the report {said}: taken as measured on {UNSAID_TARGET}")
