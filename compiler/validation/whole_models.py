"""Whole models against tt-metal's published throughput: per published figure, the zoo model that
reproduces its configuration is compiled under the optimizer policy, simulated, and its step time
turned into the figure's metric.

What is compared is time per step: the ratio is predicted over published time, so 2.0 means
tilescope is twice as slow as the chip. The published figures and their sources are in
compiler/validation/measurements/ (tt_metal_models.csv, SOURCES.md). Each row is in the `dev` split (figures
the compiler may be tuned against) or `held-out` (declared before any prediction for them was
seen); the summaries are per split.
"""

from __future__ import annotations

import csv
import dataclasses
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.validation.files import MODELS_FILE
from tilescope.compiler.frontend.model_refs import load_model
from tilescope.compiler.pipeline.compilation import Compilation
from tilescope.compiler.pipeline.options import OPTIMIZER, CompileOptions
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.sim.simulator import simulate
from tilescope.compiler.targets.catalog import load_target
from tilescope.compiler.targets.chip import DISPATCH_MODES, Target

POLICY = OPTIMIZER  # whole models are compared as production compiles them
DEV, HELD_OUT = "dev", "held-out"
SPLITS = (DEV, HELD_OUT)
# the card a published figure was measured on, and the target that describes it
HARDWARE = {"n150": "wormhole_n150", "p150": "blackhole_p150"}
COLUMNS = (
    "model",
    "hardware",
    "target",
    "ref",
    "metric",
    "published",
    "batch",
    "seq",
    "formats",
    "dispatch",
    "release",
    "split",
)
OPTIONAL_COLUMNS = ("grid",)  # empty or absent: the card's whole compute grid
WITHIN = 2.0  # a prediction within this factor of the published time counts as close


# Each metric as seconds per step and back: (step seconds from the published value, value from
# step seconds), given the batch.
def _per_second(value: float, batch: int) -> float:
    return 1 / value


def _milliseconds(value: float, batch: int) -> float:
    return value / 1e3


def _items_per_second(value: float, batch: int) -> float:
    return batch / value


METRICS: dict[str, tuple[Callable[[float, int], float], Callable[[float, int], float]]] = {
    "t/s/u": (_per_second, _per_second),  # one decode step gives every user one token
    "ttft_ms": (_milliseconds, lambda seconds, batch: seconds * 1e3),  # one prefill step
    "fps": (_items_per_second, _items_per_second),  # a step takes the whole batch
    "sentences/s": (_items_per_second, _items_per_second),
}


def step_seconds(metric: str, value: float, batch: int) -> float:
    """The time of one step that a figure in `metric` stands for."""
    return METRICS[metric][0](value, batch)


def metric_value(metric: str, seconds: float, batch: int) -> float:
    """A step of `seconds` expressed in `metric`."""
    return METRICS[metric][1](seconds, batch)


@dataclass(frozen=True)
class ModelMeasurement:
    model: str  # as published
    hardware: str  # n150 | p150
    target: str
    ref: str  # the zoo reference that reproduces the published configuration
    metric: str
    published: float
    batch: int
    seq: int | None  # prompt or KV-cache positions, sequence length; None where there is none
    formats: str  # the data formats the published implementation used
    dispatch: str
    release: str  # the TT-Metalium release the table gives; "" where it gives none
    split: str
    # rows x columns of cores the published implementation's ops run on, when fewer than the
    # card's (its program configs name the grid); None: the whole compute grid
    grid: tuple[int, int] | None = None

    @property
    def published_s(self) -> float:
        return step_seconds(self.metric, self.published, self.batch)


@dataclass(frozen=True)
class ModelRow:
    measurement: ModelMeasurement
    step_ns: float | None  # simulated time of one step; None when the model could not be compiled
    error: str = ""

    @property
    def predicted(self) -> float | None:
        """The simulated step in the published metric."""
        m = self.measurement
        return None if self.step_ns is None else metric_value(m.metric, self.step_ns / 1e9, m.batch)

    @property
    def ratio(self) -> float | None:
        """Predicted over published time per step: above 1, tilescope is slower than the chip."""
        return None if self.step_ns is None else self.step_ns / 1e9 / self.measurement.published_s

    def as_dict(self) -> dict:
        return {
            **vars(self.measurement),
            "step_ns": self.step_ns,
            "predicted": self.predicted,
            "ratio": self.ratio,
            "error": self.error,
        }


@dataclass(frozen=True)
class ModelSummary:
    split: str
    rows: int  # rows with a prediction
    errors: int  # rows that could not be compiled or simulated
    geomean_ratio: float | None
    mean_abs_log2_ratio: float | None  # 1.0: off by 2x on average, either way
    worst_ratio: float | None  # the ratio furthest from 1, either way
    worst_model: str
    within_2x: int


# --- the published table ------------------------------------------------------------------------


def _bad(path: Path, line: int, problem: str) -> TilescopeError:
    return TilescopeError(f"{path}: row {line}: {problem}")


def _number(path: Path, line: int, key: str, text: str, kind: type) -> float | int:
    try:
        value = kind(text)
    except ValueError:
        raise _bad(path, line, f"{key} must be a {'whole ' if kind is int else ''}number, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise _bad(path, line, f"{key} must be positive, got {text!r}")
    return value


def _measurement(path: Path, line: int, r: dict[str, str]) -> ModelMeasurement:
    for key in ("model", "hardware", "target", "ref", "metric", "published", "batch", "dispatch", "split"):
        if not r[key].strip():
            raise _bad(path, line, f"{key} is empty")
    if r["hardware"] not in HARDWARE:
        raise _bad(path, line, f"hardware must be one of {', '.join(HARDWARE)}, got {r['hardware']!r}")
    if r["target"] != HARDWARE[r["hardware"]]:
        raise _bad(path, line, f"target for {r['hardware']} is {HARDWARE[r['hardware']]}, got {r['target']!r}")
    if r["metric"] not in METRICS:
        raise _bad(path, line, f"metric must be one of {', '.join(METRICS)}, got {r['metric']!r}")
    if r["dispatch"] not in DISPATCH_MODES:
        raise _bad(path, line, f"dispatch must be one of {', '.join(DISPATCH_MODES)}, got {r['dispatch']!r}")
    if r["split"] not in SPLITS:
        raise _bad(path, line, f"split must be one of {', '.join(SPLITS)}, got {r['split']!r}")
    seq = r["seq"].strip()
    grid = (r.get("grid") or "").strip()
    cores = re.fullmatch(r"([1-9][0-9]?)x([1-9][0-9]?)", grid)
    if grid and not cores:
        raise _bad(path, line, f"grid must be rows x columns of cores such as 8x6, got {grid!r}")
    return ModelMeasurement(
        model=r["model"].strip(),
        hardware=r["hardware"],
        target=r["target"],
        ref=r["ref"].strip(),
        metric=r["metric"],
        published=float(_number(path, line, "published", r["published"], float)),
        batch=int(_number(path, line, "batch", r["batch"], int)),
        seq=int(_number(path, line, "seq", seq, int)) if seq else None,
        formats=r["formats"].strip(),
        dispatch=r["dispatch"],
        release=r["release"].strip(),
        split=r["split"],
        grid=(int(cores[1]), int(cores[2])) if cores else None,
    )


def load_models(path: Path | str | None = None) -> list[ModelMeasurement]:
    """The published figures in `path` (the shipped table by default); a malformed file is a
    one-line TilescopeError naming the file and the row."""
    path = Path(path) if path is not None else MODELS_FILE
    try:
        with path.open(newline="", encoding="utf-8") as file:
            reader = csv.DictReader(file)
            missing = [c for c in COLUMNS if c not in (reader.fieldnames or ())]
            if missing:
                raise _bad(path, 1, f"missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
            measurements, seen = [], set()
            for r in reader:
                line = reader.line_num
                if None in r or any(
                    r[c] is None for c in (*COLUMNS, *OPTIONAL_COLUMNS) if c in r
                ):  # more or fewer cells than the header
                    raise _bad(path, line, f"expected {len(reader.fieldnames)} cells")
                m = _measurement(path, line, r)
                key = (m.model, m.hardware, m.metric)
                if key in seen:
                    raise _bad(path, line, f"{m.model} {m.metric} on {m.hardware} is given twice")
                seen.add(key)
                measurements.append(m)
    except OSError as err:
        raise TilescopeError(f"{path}: cannot read: {err.strerror}") from None
    except (UnicodeDecodeError, csv.Error) as err:
        raise TilescopeError(f"{path}: not a CSV table: {err}") from None
    if not measurements:
        raise TilescopeError(f"{path}: no rows")
    return measurements


# --- predictions ----------------------------------------------------------------------------------


def model_rows(
    measurements: Sequence[ModelMeasurement], targets: Callable[[str], Target] = load_target
) -> list[ModelRow]:
    """Each figure with its prediction. Each distinct model is compiled once per target and
    simulated once per dispatch; one that cannot be loaded or compiled gives its rows an error,
    and the others are still predicted."""
    compiled: dict[tuple, Compilation | str] = {}
    steps: dict[tuple, float | str] = {}
    rows = []
    for m in measurements:
        key = (m.ref, m.target, m.grid)
        if key not in compiled:
            compiled[key] = _compile(m.ref, m.target, m.grid, targets)
        compilation = compiled[key]
        if isinstance(compilation, str):
            rows.append(ModelRow(m, None, compilation))
            continue
        if (*key, m.dispatch) not in steps:
            steps[(*key, m.dispatch)] = _step_ns(compilation, m.dispatch)
        step = steps[(*key, m.dispatch)]
        rows.append(ModelRow(m, None, step) if isinstance(step, str) else ModelRow(m, step))
    return rows


def _compile(
    ref: str, target: str, grid: tuple[int, int] | None, targets: Callable[[str], Target]
) -> Compilation | str:
    """The compilation, or what went wrong in one line: a row reports it rather than stopping
    the others. With `grid`, the target's compute grid is cut to it."""
    try:
        card = targets(target)
        if grid is not None:
            if grid[0] > card.grid[0] or grid[1] > card.grid[1]:
                return f"grid {grid[0]}x{grid[1]} is larger than {target}'s {card.grid[0]}x{card.grid[1]}"
            card = dataclasses.replace(card, grid=grid)
        return compile_model(load_model(ref), card, CompileOptions(policy=POLICY))
    except TilescopeError as err:
        return str(err)
    except Exception as err:  # a compiler failure on one model must not hide the other rows
        return f"{ref} on {target}: compile failed: {type(err).__name__}: {err}"


def _step_ns(compilation: Compilation, dispatch: str) -> float | str:
    try:
        return simulate(compilation.kernel, compilation.target, dispatch).total_ns
    except Exception as err:  # as for compiling: one row's failure, reported on it
        return f"simulation failed: {type(err).__name__}: {err}"


def summaries(rows: Sequence[ModelRow]) -> list[ModelSummary]:
    """Per split that has rows: how far predictions are from the published times."""
    result = []
    for split in SPLITS:
        part = [r for r in rows if r.measurement.split == split]
        if not part:
            continue
        done = [r for r in part if r.ratio is not None]
        logs = [math.log2(r.ratio) for r in done]
        worst = max(done, key=lambda r: abs(math.log2(r.ratio)), default=None)
        result.append(
            ModelSummary(
                split=split,
                rows=len(done),
                errors=len(part) - len(done),
                geomean_ratio=2 ** (sum(logs) / len(logs)) if logs else None,
                mean_abs_log2_ratio=sum(abs(v) for v in logs) / len(logs) if logs else None,
                worst_ratio=worst.ratio if worst else None,
                worst_model=f"{worst.measurement.model} {worst.measurement.metric} on {worst.measurement.hardware}"
                if worst
                else "",
                within_2x=sum(abs(v) <= math.log2(WITHIN) for v in logs),
            )
        )
    return result
