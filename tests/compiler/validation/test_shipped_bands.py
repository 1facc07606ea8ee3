"""The built-in chips' error bands are their held-out errors on the real reports, as they are now."""

from __future__ import annotations

import pytest

from tilescope.compiler.targets.catalog import load_target
from tilescope.compiler.validation.shipped_bands import REPORTS, chip_bands

from tests.conftest import PERF_REPORTS


@pytest.mark.parametrize("chip", sorted(REPORTS))
def test_a_chips_bands_are_its_held_out_errors_on_the_reports(chip):
    if not all((PERF_REPORTS / name).is_file() for name in REPORTS[chip]):
        pytest.skip("../shared profiles absent")
    shipped = load_target(chip).error_bands
    measured = chip_bands(chip, PERF_REPORTS)
    assert shipped.keys() == measured.keys() and all(
        shipped[k] == pytest.approx(measured[k], abs=2e-3) for k in shipped
    ), f"{chip}'s [error_bands] are stale: recompute them as docs/validation.md, 'Error bands', says"


def test_every_built_in_tenstorrent_chip_and_system_has_bands():
    for name in ("wormhole_n150", "blackhole_p150", "t3k", "blackhole_8xp150"):
        target = load_target(name)
        assert target.error_band("matmul") is not None and target.error_band("no such kind") > 0
