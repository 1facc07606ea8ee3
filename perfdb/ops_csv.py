"""Ops perf CSV, in the columns of tt-metal's ops perf report, both ways.

`write_csv` writes a stored run one op per row, so scripts written for tt-metal's report (and
tt-perf-report) read tilescope's output. `import_csv` reads a measured report of the same model and
stores it as a measured run beside a simulated one, ops matched by `LOC` (the MLIR location, i.e.
the stable op name) or `OP NAME`: the UI and `diff` then compare simulated with measured per op.
Bad rows are reported, never fatal; a file with no usable row, or one that is not CSV at all, is one
CsvImportError line. The run and the record of its import are stored together or not at all. Work
is bounded (at most MAX_ROWS rows) and every stored time finite (each duration and latency at most
MAX_NS).
"""

from __future__ import annotations

import csv
import io
import math
import re
import reprlib
from collections.abc import Mapping
from dataclasses import replace

from sqlalchemy.orm import Session

from tilescope.compiler.sim.records import OpTiming, TensorUse
from tilescope.perfdb import timeline
from tilescope.perfdb.runs import get_run, load_ops, op_records
from tilescope.perfdb.records import CounterColumns, NewRun, ZoneColumns
from tilescope.perfdb.schema import MeasuredImport
from tilescope.perfdb.store import add_run


class CsvImportError(ValueError):
    """The file cannot be imported at all (no usable row, no duration column)."""


DURATION = "DEVICE KERNEL DURATION [ns]"
LATENCY = "OP TO OP LATENCY [ns]"
MAX_ROWS = 100_000  # rows of one import: each becomes stored records (an op, a zone, counters)
MAX_NS = 1e15  # a duration or latency (11.6 days): beyond it, a typo, and sums could overflow to inf
MAX_CORES = 256 * 256  # a target's largest grid (compiler.targets.chip_file.MAX_GRID)
# the columns import_csv reads: one of each, or which to believe is a guess
READ = (DURATION, LATENCY, "LOC", "OP NAME", "CORE COUNT", "MATH FIDELITY")
_SHOWN = reprlib.Repr()
_SHOWN.maxstring = 100  # a field may hold 131,072 characters; a problem line quotes it cut
MAX_OPERANDS = 3  # INPUT_0.. columns written
# tt-metal's spellings
DATATYPES = {
    "f32": "FLOAT32",
    "bf16": "BFLOAT16",
    "f16": "FLOAT16",
    "bfp8": "BFLOAT8_B",
    "bfp4": "BFLOAT4_B",
    "i32": "INT32",
    "ui32": "UINT32",
    "ui16": "UINT16",
    "ui8": "UINT8",
    "i8": "INT8",
}
FIDELITIES = {"lofi": "LoFi", "hifi2": "HiFi2", "hifi3": "HiFi3", "hifi4": "HiFi4"}
_FIDELITY_OF = {spelled.lower(): ours for ours, spelled in FIDELITIES.items()}


def _columns() -> list[str]:
    columns = [
        "OP CODE",
        "OP TYPE",
        "GLOBAL CALL COUNT",
        "DEVICE ID",
        "MATH FIDELITY",
        "CORE COUNT",
        "HOST START TS",
        "HOST END TS",
        "DEVICE FW DURATION [ns]",
        DURATION,
        LATENCY,
    ]
    for role in ("INPUT", "OUTPUT"):
        for i in range(MAX_OPERANDS if role == "INPUT" else 1):
            columns += [f"{role}_{i}_{d}" for d in ("W", "Z", "Y", "X", "LAYOUT", "DATATYPE", "MEMORY")]
    columns += ["PM IDEAL [ns]", "PM COMPUTE [ns]", "PM BANDWIDTH [ns]", "DRAM BW UTIL (%)", "NOC UTIL (%)", "LOC"]
    return columns


COLUMNS = _columns()


def _shape4(shape: tuple[int, ...]) -> list[int]:
    """tt-metal's W, Z, Y, X: the shape padded to four dimensions, leading ones folded into W."""
    dims = list(shape)[-4:] if len(shape) <= 4 else [math.prod(shape[:-3]), *shape[-3:]]
    return [1] * (4 - len(dims)) + dims


def _memory(tensor: TensorUse) -> str:
    return f"DEV_0_{tensor.memory.upper()}_{tensor.memory_layout.upper()}" if tensor.memory else ""


def write_csv(session: Session, run_id: int, peak_bytes_per_s: Mapping[str, float] | None = None) -> str:
    """The run's ops as CSV text. With the target's peak bandwidths by path (e.g. {"dram": 2.6e11,
    "noc": ...}), DRAM and NoC utilization are filled in."""
    peaks = dict(peak_bytes_per_s or {})
    out = io.StringIO()
    writer = csv.DictWriter(out, COLUMNS, lineterminator="\n")
    writer.writeheader()
    # the first op's latency is its wait from the run's start (the host issuing it), so a report
    # read back by import_csv keeps the run's total; tt-metal writes 0 there, having no run start
    previous_end = 0.0
    for count, op in enumerate(op_records(session, run_id, tensors=True)):
        seconds = op.duration_ns / 1e9 if math.isfinite(op.duration_ns) else 0.0

        def util(*paths: str, op=op, seconds: float = seconds) -> str:
            moved = sum(op.bytes.get(p, 0.0) for p in paths)
            peak = peaks.get(paths[0])
            percent = moved / seconds / peak * 100 if peak and seconds else math.inf
            return f"{percent:.2f}" if math.isfinite(percent) else ""  # blank, not inf, for a vanishing time

        row = {
            "OP CODE": op.op_code or op.kind,  # a measured op's code as its report named it
            "OP TYPE": "tt_dnn_device",
            "GLOBAL CALL COUNT": count,
            "DEVICE ID": op.device,
            "MATH FIDELITY": FIDELITIES.get(op.fidelity, op.fidelity),
            "CORE COUNT": op.cores,
            "HOST START TS": _whole(op.start_ns),
            "HOST END TS": _whole(op.start_ns + op.duration_ns),
            "DEVICE FW DURATION [ns]": _whole(op.duration_ns),
            DURATION: _whole(op.duration_ns),
            LATENCY: _whole(max(0.0, op.start_ns - previous_end)),
            "PM IDEAL [ns]": _whole(op.roofline_ns),
            "PM COMPUTE [ns]": _whole(op.compute_ns),
            "PM BANDWIDTH [ns]": _whole(op.bandwidth_ns),
            "DRAM BW UTIL (%)": util("dram"),
            "NOC UTIL (%)": util("noc", "mcast"),
            "LOC": op.name,
        }
        previous_end = op.start_ns + op.duration_ns
        uses = [TensorUse.from_dict(t) for t in op.tensors]
        inputs = [t for t in uses if t.role.startswith("in")][:MAX_OPERANDS]
        outputs = [t for t in uses if t.role.startswith("out")][:1]
        for role, tensors in (("INPUT", inputs), ("OUTPUT", outputs)):
            for i, tensor in enumerate(tensors):
                for d, value in zip("WZYX", _shape4(tensor.shape)):
                    row[f"{role}_{i}_{d}"] = value
                row[f"{role}_{i}_LAYOUT"] = tensor.layout.upper()
                row[f"{role}_{i}_DATATYPE"] = DATATYPES.get(tensor.dtype, tensor.dtype.upper())
                row[f"{role}_{i}_MEMORY"] = _memory(tensor)
        writer.writerow(row)
    return out.getvalue()


def _whole(ns: float) -> int | str:
    """Whole ns; blank for a time that is not finite (runs imported before times were bounded)."""
    return round(ns) if math.isfinite(ns) else ""


_CORES = re.compile(r"[0-9]{1,9}")  # int() of thousands of digits is refused, not merely slow
_LOC = re.compile(r'^loc\("((?:[^"\\]|\\.)*)"')


def _op_name(row: dict) -> str:
    """The op a row measured: its LOC (bare, or loc("name") as MLIR prints it), else OP NAME."""
    loc = (row.get("LOC") or "").strip()
    match = _LOC.match(loc)
    return match.group(1) if match else loc or (row.get("OP NAME") or "").strip()


_BANDWIDTH = "_bytes_per_s"  # the suffix of a shared memory's bandwidth counter


def import_csv(
    session: Session, text: str, base_run_id: int, source: str = "ops.csv", label: str = ""
) -> tuple[int, list[str]]:
    """Store a measured ops perf report as a run of `base_run_id`'s model; returns (run id, problems).

    Rows follow the measured order; each op starts where the one before ended plus its OP TO OP
    LATENCY. An op measured twice keeps both records (diff sums them). A row of an op the base run
    does once per model load (const-eval) is measured load-time work: it goes to the measured run's
    load ops, not its step. Rows without a duration, or naming an op the base run lacks, are listed
    in the problems and skipped."""
    base = get_run(session, base_run_id)
    simulated = {op.name: op for op in op_records(session, base_run_id, tensors=True)}
    loaded = {op.name: op for op in load_ops(base)}
    # the base run's L1 samples, by the start of the op they were taken at
    l1_at: dict[float, list[tuple[str, float]]] = {}
    for sample in timeline.counters(session, base_run_id, "l1_bytes"):
        l1_at.setdefault(sample.t_ns, []).append((sample.track, sample.value))
    shared = [
        n.removesuffix(_BANDWIDTH) for n in timeline.counter_names(session, base_run_id) if n.endswith(_BANDWIDTH)
    ]
    session.commit()  # end the reading transaction: the run and its import record are written in one
    try:
        ops, load, zones, counters, problems, rows, clock = _read(
            text, source, base_run_id, simulated, loaded, l1_at, shared
        )
    except csv.Error as err:  # a field over csv's limit, a stray carriage return in a field
        raise CsvImportError(f"{source}: not a CSV ops report: {err}") from None
    if not ops and not load:
        raise CsvImportError(
            f"{source}: no row matched an op of run {base_run_id}" + (f" ({problems[0]})" if problems else "")
        )
    measured = NewRun(
        model_ref=base.model_ref,
        model_name=base.model.name,
        source_hash=base.model.source_hash,
        source_text=base.model.source_text,
        target=base.target.name,
        target_ref=base.target_ref or base.target.name,
        target_text=base.target.description,
        total_ns=clock,
        device_ns=sum(o.duration_ns for o in ops),
        ops=ops,
        zones=ZoneColumns.from_rows(zones),
        counters=CounterColumns.from_rows(counters),
        dispatch=base.dispatch,
        policy=base.policy,
        l1_usage_cap=base.l1_usage_cap,
        data_tiling=base.data_tiling,
        overrides=list(base.overrides),
        label=label or f"measured: {source}",
        parent_id=base.id,
        kind="measured",
        load_ops=load,
        load_ns=sum(op.duration_ns for op in load),
    )
    matched = len(ops) + len(load)
    with session.begin():
        run_id = add_run(session, measured)
        session.add(MeasuredImport(run_id=run_id, source=source, rows=rows, matched=matched, problems=problems))
    return run_id, problems


def _header(reader: csv.DictReader, source: str) -> list[str]:
    header = [h.strip() for h in reader.fieldnames or []]
    if not header:
        raise CsvImportError(f"{source}: empty file (an ops perf report has a header line)")
    if DURATION not in header:
        # a report saved with another delimiter still names the column, in its one long field
        hint = "; columns must be separated by commas" if any(DURATION in h for h in header) else ""
        raise CsvImportError(f"{source}: no {DURATION!r} column (an ops perf report has it){hint}")
    if "LOC" not in header and "OP NAME" not in header:
        raise CsvImportError(f"{source}: no LOC or OP NAME column to match ops by")
    twice = [column for column in READ if header.count(column) > 1]
    if twice:
        count = header.count(twice[0])
        raise CsvImportError(f"{source}: column {twice[0]!r} appears {count} times; which one to read is a guess")
    return header


def _ns(row: dict, column: str, default: str = "") -> float | None:
    """A time in ns from `column`: finite, >= 0 and at most MAX_NS; None otherwise."""
    try:
        value = float(row.get(column) or default)
    except ValueError:
        return None
    return value if 0 <= value <= MAX_NS else None  # NaN is in no range


def _read(text: str, source: str, base_run_id: int, simulated: dict, loaded: dict, l1_at: dict, shared: list[str]):
    """(ops, load ops, zones, counters, problems, rows, total ns of the step) of the report `text`."""
    # newline="": csv itself tells line ends (CR, LF, CRLF) from line breaks inside quoted fields
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff"), newline=""))
    _header(reader, source)
    problems: list[str] = []
    ops, load, zones, counters = [], [], [], []
    clock = 0.0
    rows = 0
    for line, raw in enumerate(reader, start=2):
        rows += 1
        if rows > MAX_ROWS:
            raise CsvImportError(f"{source}: more than {MAX_ROWS:,} rows; import the report in parts")
        row = {(k or "").strip(): (v or "").strip() for k, v in raw.items() if k is not None}
        name = _op_name(row)
        where = f"{source}:{line}"
        if not name:
            problems.append(f"{where}: no LOC or OP NAME")
            continue
        if name not in simulated and name not in loaded:
            problems.append(f"{where}: op {_SHOWN.repr(name)} is not in run {base_run_id}")
            continue
        duration, gap = _ns(row, DURATION), _ns(row, LATENCY, "0")
        cores = row.get("CORE COUNT", "")
        wrong = DURATION if duration is None else LATENCY if gap is None else None
        if wrong:
            what = "duration" if wrong == DURATION else "latency"
            problems.append(
                f"{where}: {name}: {wrong} {_SHOWN.repr(row.get(wrong))} is not a {what} in ns (0 to {MAX_NS:g})"
            )
            continue
        if cores and not (_CORES.fullmatch(cores) and 0 < int(cores) <= MAX_CORES):
            problems.append(
                f"{where}: {name}: CORE COUNT {_SHOWN.repr(cores)} is not a number of cores (1 to {MAX_CORES:,})"
            )
            continue
        if name not in simulated:  # run once when the model is loaded: not on the step's clock
            load.append(replace(loaded[name], duration_ns=duration, bound="measured"))
            continue
        sim = simulated[name]
        start = clock + gap
        fidelity = _FIDELITY_OF.get(row.get("MATH FIDELITY", "").lower(), sim.fidelity)
        ops.append(
            OpTiming(
                name=name,
                kind=sim.kind,
                start_ns=start,
                duration_ns=duration,
                flops=sim.flops,
                # the program the hardware ran moves what the compiler planned: the base run's bytes
                bytes=dict(sim.bytes),
                bound="measured",
                why=f"measured ({source}:{line})",
                memory=sim.memory,
                grid=sim.grid,
                cores=int(cores) if cores else sim.cores,
                roofline_ns=sim.roofline_ns,
                fidelity=fidelity,
                tensors=tuple(TensorUse.from_dict(t) for t in sim.tensors),
                compute_ns=sim.compute_ns,
                bandwidth_ns=sim.bandwidth_ns,
                level="measured",
            )
        )
        zones.append(("device", 0, name, start, start + duration, name))
        # L1 holds what it held in the base run while the op ran; a shared memory's bandwidth in
        # use is the op's bytes through it over its measured time
        counters += [(track, "l1_bytes", start, value) for track, value in l1_at.get(sim.start_ns, ())]
        for path in shared:
            # over less than a nanosecond (no kernel is that short) bytes/s would overflow to inf
            if sim.bytes.get(path) and duration >= 1.0:
                counters += [
                    (path, path + _BANDWIDTH, start, sim.bytes[path] / (duration * 1e-9)),
                    (path, path + _BANDWIDTH, start + duration, 0.0),
                ]
        clock = start + duration
    return ops, load, zones, counters, problems, rows, clock
