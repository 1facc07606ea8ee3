"""A chip calibrated to a team's own measured reports: its constants fitted (report_fit.py), judged
on the held-out half (fit_errors.py), and its target file written with the fitted values and the
error bands in place of the old ones, every other line (and the source it cites) kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tilescope.compiler.errors import TargetError, TilescopeError
from tilescope.compiler.profiles.report import Report
from tilescope.compiler.targets.catalog import load_target, target_text
from tilescope.compiler.targets.file_values import with_table, with_values
from tilescope.compiler.validation import fit_errors
from tilescope.compiler.validation.holdout import FIT, HELD_OUT
from tilescope.compiler.validation.report_fit import MAX_SAMPLES, CONSTANTS, Predictor, fit, samples, value_of


MAX_SOURCES_SAID = 64  # reports named at the top of a calibrated file


@dataclass(frozen=True)
class Calibration:
    chip: str  # the chip fitted (a system's reports fit its device)
    base_text: str  # its target file as it was
    was: dict[str, float]
    now: dict[str, float]
    fit_rows: int
    held_out_rows: int
    kinds: tuple[fit_errors.KindError, ...]
    reports: tuple[fit_errors.ReportError, ...]
    bands: dict[str, float]
    notes: tuple[str, ...] = ()  # what the fit left out, for the user

    def target_file(self, name: str, sources: Sequence[str]) -> str:
        """The chip's file with the fitted values and the bands, named `name`."""
        fitted = {k: round(v, 4) for k, v in self.now.items() if v != self.was[k]}
        text = with_values(self.base_text, fitted, why="FITTED by tilescope calibrate (see the top)")
        text = with_values(text, {"name": name})
        # a file name may hold anything: in a comment, as Python would write it in a string
        said = "\n".join(f"#   {repr(source)[1:-1][:200]}" for source in sources[:MAX_SOURCES_SAID])
        text = f"# Calibrated by tilescope calibrate to these ops perf reports:\n{said}\n{text}"
        comment = (
            "Per kind of op: the 68th percentile of |measured / predicted - 1| over the held-out half of\n"
            "the calibration's rows (by shape); 'default' over all of them (tilescope calibrate)."
        )
        text = with_table(text, "error_bands", self.bands, comment)
        check_written(text, name, fitted, self.bands)
        return text


def check_written(text: str, name: str, values: dict[str, float], bands: dict[str, float] | None = None) -> None:
    """One line when `text`, a chip's file as calibrate writes it, does not read back as written:
    a target file laid out in a way the line editor (file_values.py) does not take."""
    try:
        target = load_target(name + ".toml", text=text)
    except TargetError as err:
        raise TilescopeError(f"cannot write the calibrated target: {err}") from None
    values = {k: round(v, 4) for k, v in values.items()}
    if {k: round(value_of(target, k), 4) for k in values} != values or bands not in (None, target.error_bands):
        raise TilescopeError(
            "cannot write the calibrated target: the chip's file is laid out in a way calibrate cannot edit "
            "(one [table] header per table, bare keys, one key per line)"
        )


def calibrate(
    reports: Sequence[Report],
    asked: str | None,
    held_out: Sequence[str] = (),
    fitting: bool = True,
    keys: Sequence[str] = (),
) -> Calibration:
    """Fit the chip `reports` were measured on (or `asked`) to their FIT half and judge it on the
    rest: its constants named in `keys`, or all of them; without `fitting`, only judge its
    constants as they are (its error bands)."""
    chosen = load_target(asked) if asked else None
    if chosen is not None and chosen.system.devices > 1:
        raise TargetError(f"{asked}: calibrate fits a chip; give its device, not the system")
    found = samples(reports, asked, held_out)
    if not any(s.side == FIT for s in found):
        raise TilescopeError("no op of the reports could be built and fitted: nothing to calibrate")
    if not any(s.side == HELD_OUT for s in found):  # its bands would be empty: no error measured
        raise TilescopeError("every shape of the reports fell on the fitted half: give reports of more shapes")
    chips = sorted({s.target.system.device or s.target.name for s in found})
    if len(chips) > 1 and not asked:
        raise TilescopeError(f"the reports were measured on {' and '.join(chips)}: calibrate one chip at a time")
    base_text = target_text(asked or chips[0])[0]
    was = {c.key: value_of(found[0].target, c.key) for c in CONSTANTS}
    check_written(with_values(base_text, was), "calibrated", was)  # before the fit: a file it can write
    now = fit(found, was, keys) if fitting else dict(was)
    before, after = Predictor(was), Predictor(now)
    return Calibration(
        chosen.name if chosen is not None else chips[0],
        base_text,
        was,
        now,
        sum(s.rows for s in found if s.side == FIT),
        sum(s.rows for s in found if s.side == HELD_OUT),
        tuple(fit_errors.kind_errors(found, before, after)),
        tuple(fit_errors.report_errors(found, before, after, held_out)),
        fit_errors.error_bands(found, after),
        (f"only the first {MAX_SAMPLES:,} distinct ops were built and fitted",) if len(found) >= MAX_SAMPLES else (),
    )
