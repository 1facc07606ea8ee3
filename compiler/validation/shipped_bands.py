"""The error bands the built-in Tenstorrent chips ship with: each chip's held-out error per kind of
op over the real ops perf reports measured on it (../shared/profiles; see docs/validation.md), the
chip's constants as they are (nothing fitted to the reports), the DeepLabV3 report held out whole.

The test suite checks that the bands in the chip files are what `chip_bands` gives, so a change to
the simulator that moves its errors updates them (docs/validation.md, "Error bands", says how).
"""

from __future__ import annotations

from pathlib import Path

import sys

from tilescope.compiler.profiles.ops_report import read_ops_report
from tilescope.compiler.targets.catalog import BUILTIN_DIR
from tilescope.compiler.targets.file_values import with_table
from tilescope.compiler.validation.report_calibration import calibrate

# chip -> the reports measured on it (a Blackhole p100, a 2-device OFT and an 8-device DeepSeek
# included: their device is a Blackhole chip); the report judged apart from every fit
REPORTS = {
    "wormhole_n150": ("wh_clip_encoder_2.csv",),
    "blackhole_p150": (
        "bh20_oft.csv",
        "bh20_oft_integral_image_trace.csv",
        "bh_64_clip_encoder_1.csv",
        "bh_8xp150_deepseek_v3_d_p.csv",
        "bh_p100_dlv3.csv",
        "ops_perf_results_2025_09_18_11_39_20.csv",
    ),
}
HELD_OUT_WHOLE = ("bh_p100_dlv3.csv",)


def chip_bands(chip: str, reports_dir: Path) -> dict[str, float]:
    """The bands of `chip` from the reports in `reports_dir`."""
    reports = [read_ops_report((reports_dir / name).read_text(), name) for name in REPORTS[chip]]
    held = [name for name in HELD_OUT_WHOLE if name in REPORTS[chip]]
    return calibrate(reports, None, held, fitting=False).bands


COMMENT = """Per kind of op, the share of a predicted time about two measurements in three fall within:
the 68th percentile of |measured / predicted - 1| over the held-out half (by shape) of the real
ops perf reports measured on this chip, nothing fitted to them (compiler/validation/shipped_bands.py;
docs/validation.md, "Error bands"). 'default' for kinds with fewer than 10 held-out rows."""


def write_bands(reports_dir: Path) -> None:
    """Each built-in chip's file with its bands as the reports now give them (a checkout's files)."""
    for chip in REPORTS:
        path = BUILTIN_DIR / f"{chip}.toml"
        path.write_text(with_table(path.read_text(), "error_bands", chip_bands(chip, reports_dir), COMMENT))
        print(f"{path}: [error_bands] written")


if __name__ == "__main__":  # python -m tilescope.compiler.validation.shipped_bands ../shared/profiles/tt-perf-report
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_dir():
        sys.exit("usage: python -m tilescope.compiler.validation.shipped_bands REPORTS_DIR")
    write_bands(Path(sys.argv[1]))
