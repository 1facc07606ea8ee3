"""Read tt-metal's ops perf report (the CSV its device profiler writes, one row per op) into a
Report, whatever columns its version writes: only OP CODE and DEVICE KERNEL DURATION [ns] are
required; every other column is read when present.

A row that cannot be read is skipped and named with its reason; nothing is dropped silently. Work is
bounded: at most MAX_ROWS rows, each number at most a few digits long, times finite and at most
MAX_NS. Nothing in the file is evaluated.
"""

from __future__ import annotations

import csv
import io
import re
import reprlib
import statistics
from dataclasses import replace

from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.profiles.attributes import fidelity_of, output_memory, parse_attributes, shard_spec
from tilescope.compiler.profiles.report import Report, ReportOp, ReportTensor, Signpost

OP_CODE, DURATION = "OP CODE", "DEVICE KERNEL DURATION [ns]"
MAX_ROWS = 100_000
MAX_NS = 1e15  # 11.6 days: beyond it a time is a typo, and sums could overflow
MAX_OPERANDS = 16  # INPUT_n / OUTPUT_n read per op
MAX_DEVICE = 2**15 - 1  # a DEVICE ID (what perfdb keeps of it: a 16-bit integer)
SIGNPOST = "signpost"
HOST_TYPES = ("tt_dnn_cpu", "python_fallback")  # ops that ran in torch on the host
DTYPES = {
    "BFLOAT16": "bf16",
    "BFLOAT8_B": "bfp8",
    "BFLOAT4_B": "bfp4",
    "FLOAT32": "f32",
    "FLOAT16": "f16",
    "UINT32": "ui32",
    "INT32": "i32",
    "UINT16": "ui16",
    "UINT8": "ui8",
    "INT8": "i8",
}
FIDELITIES = {"lofi": "lofi", "hifi2": "hifi2", "hifi3": "hifi3", "hifi4": "hifi4"}
_DIM = re.compile(r"(\d{1,9})(?:\[(\d{1,9})\])?")
_MEMORY = re.compile(r"(?:DEV_\d{1,4}_)?(L1|DRAM|SYSTEM_MEMORY)_(\w+)")
_INT = re.compile(r"-?\d{1,18}")
_LOC = re.compile(r'^loc\("((?:[^"\\]|\\.)*)"')
_SHOWN = reprlib.Repr()
_SHOWN.maxstring = 60


class ReportError(TilescopeError):
    """The file is no ops perf report at all (no header, no OP CODE or duration column)."""


class _BadRow(ValueError):
    """One row's field cannot be read: the message names it."""


def read_ops_report(text: str, source: str = "ops.csv") -> Report:
    """The report in `text` (CSV), named `source` in what it says."""
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff"), newline=""))
    try:
        header = [h.strip() for h in next(reader, [])]
        if not any(header):
            raise ReportError(f"{source}: empty file (an ops perf report has a header line)")
        _check_header(header, source)
        columns = {name: i for i, name in reversed(list(enumerate(header)))}
        ops, host, signposts, skipped = [], [], [], []
        cycles: dict[int, tuple[int, int]] = {}
        rows, region, last = 0, "", (0, len(header))
        for line, fields in enumerate(reader, start=2):
            if not any(f.strip() for f in fields):
                continue  # a blank line, as spreadsheets leave at the end
            rows, last = rows + 1, (line, len(fields))
            if rows > MAX_ROWS:
                raise ReportError(f"{source}: more than {MAX_ROWS:,} rows; split the report")
            if any("\0" in field for field in fields):  # no database keeps it, nor would a report write it
                skipped.append(f"{source}:{line}: a field has a NUL character")
                continue
            row = _Row(fields, columns)
            if row.text("OP TYPE") == SIGNPOST:
                region = row.text(OP_CODE)
                signposts.append(Signpost(line, region[:128], _signpost_time(row)))
                continue
            try:
                op, found = _op(row, line, region)
            except _BadRow as err:
                skipped.append(f"{source}:{line}: {err}")
                continue
            if found:
                cycles[line] = found
            (host if op.op_type in HOST_TYPES else ops).append(op)
    except csv.Error as err:  # a field over csv's limit, a stray quote
        raise ReportError(f"{source}: not a CSV ops perf report: {err}") from None
    except _BadRow as err:
        raise ReportError(f"{source}: {err}") from None
    _check_whole(text, source, header, *last)
    return Report(
        source=source,
        format="ops-perf-csv",
        rows=rows,
        ops=tuple(_on_device_clock(ops, cycles)),
        host_ops=tuple(host),
        signposts=tuple(signposts),
        skipped=tuple(skipped),
        columns=tuple(header),
    )


def _check_whole(text: str, source: str, header: list[str], line: int, fields: int) -> None:
    """A report whose last row has fewer fields than its header and no line end was cut short (a
    copy that failed): the row's last field read would be a part of a number, so nothing is read."""
    if fields < len(header) and not text.endswith(("\n", "\r")):
        raise ReportError(
            f"{source}:{line}: the file ends inside this row ({fields} of {len(header)} fields); is it cut short?"
        )


def _check_header(header: list[str], source: str) -> None:
    missing = [c for c in (OP_CODE, DURATION) if c not in header]
    if missing:
        hint = "; columns must be separated by commas" if len(header) == 1 and DURATION in header[0] else ""
        raise ReportError(f"{source}: no {missing[0]!r} column (an ops perf report has it){hint}")
    twice = next((c for c in (OP_CODE, DURATION, "DEVICE ID", "LOC") if header.count(c) > 1), None)
    if twice:
        raise ReportError(f"{source}: column {twice!r} appears {header.count(twice)} times; which to read is a guess")


class _Row:
    """One CSV row, read by column name."""

    __slots__ = ("fields", "columns")

    def __init__(self, fields: list[str], columns: dict[str, int]) -> None:
        self.fields, self.columns = fields, columns

    def text(self, column: str) -> str:
        i = self.columns.get(column)
        return self.fields[i].strip() if i is not None and i < len(self.fields) else ""


def _time(row: _Row, column: str, optional: bool = True) -> float | None:
    value = row.text(column)
    if not value:
        if optional:
            return None
        raise _BadRow(f"no {column}")
    try:
        number = float(value) if len(value) <= 40 else float("nan")
    except ValueError:
        number = float("nan")
    if not 0 <= number <= MAX_NS:  # NaN is in no range
        raise _BadRow(f"{column} {_SHOWN.repr(value)} is not a time in ns (0 to {MAX_NS:g})")
    return number


def _signpost_time(row: _Row) -> float | None:
    try:
        return _time(row, "HOST START TS")
    except _BadRow:
        return None  # a marker's time is only shown; a bad one loses nothing measured


def _int(row: _Row, column: str, low: int = 0, high: int = 2**62) -> int | None:
    value = row.text(column)
    if not value:
        return None
    if not _INT.fullmatch(value) or not low <= int(value) <= high:
        raise _BadRow(f"{column} {_SHOWN.repr(value)} is not a whole number ({low:,} to {high:,})")
    return int(value)


def _op(row: _Row, line: int, region: str) -> tuple[ReportOp, tuple[int, int] | None]:
    code = row.text(OP_CODE)
    if not code:
        raise _BadRow("no OP CODE")
    if len(code) > 128:
        raise _BadRow(f"OP CODE {_SHOWN.repr(code)} is longer than 128 characters")
    if not code.isprintable():
        raise _BadRow(f"OP CODE {_SHOWN.repr(code)} has a character that is not printable")
    op_type = row.text("OP TYPE") or "tt_dnn_device"
    try:
        kernel = _time(row, DURATION, optional=op_type in HOST_TYPES)
        attributes = parse_attributes(row.text("ATTRIBUTES"))
        memory = output_memory(attributes)
        fidelity = row.text("MATH FIDELITY").lower() or fidelity_of(attributes)
        op = ReportOp(
            line=line,
            op_code=code,
            op_type=op_type,
            call=_int(row, "GLOBAL CALL COUNT"),
            device=_int(row, "DEVICE ID", 0, MAX_DEVICE) or 0,
            arch=row.text("DEVICE ARCH").lower()[:32],
            loc=_loc(row.text("LOC"))[:1024],
            fidelity=FIDELITIES.get(fidelity, ""),
            cores=_int(row, "CORE COUNT", 1, 1 << 16),
            attributes=attributes,
            inputs=_tensors(row, "INPUT"),
            outputs=_tensors(row, "OUTPUT"),
            kernel_ns=kernel,
            fw_ns=_time(row, "DEVICE FW DURATION [ns]"),
            core_min_ns=_time(row, "DEVICE KERNEL DURATION PER CORE MIN [ns]"),
            core_max_ns=_time(row, "DEVICE KERNEL DURATION PER CORE MAX [ns]"),
            op_to_op_ns=_time(row, "OP TO OP LATENCY [ns]"),
            host_start_ns=_time(row, "HOST START TS"),
            host_end_ns=_time(row, "HOST END TS"),
            trace_id=row.text("METAL TRACE ID")[:32],
            region=region,
            output_shard=shard_spec(memory) if memory else None,
        )
        found = _cycles(row)
    except _BadRow as err:
        raise _BadRow(f"{code}: {err}") from None
    return op, found


def _loc(text: str) -> str:
    """A LOC as the op's name: bare, or unwrapped from MLIR's loc("name") (the name as tilescope's
    import names an op by its location)."""
    match = _LOC.match(text)
    return match[1] if match else text


def _cycles(row: _Row) -> tuple[int, int] | None:
    """The firmware's start and end cycles, when the report has both in order."""
    start, end = _int(row, "DEVICE FW START CYCLE"), _int(row, "DEVICE FW END CYCLE")
    return (start, end) if start is not None and end is not None and end >= start else None


def _tensors(row: _Row, role: str) -> tuple[ReportTensor, ...]:
    tensors = []
    for i in range(MAX_OPERANDS):
        prefix = f"{role}_{i}_"
        dims = [row.text(prefix + d + "_PAD[LOGICAL]") or row.text(prefix + d) for d in "WZYX"]
        if not any(dims):
            break
        tensors.append(_tensor(row, prefix, dims))
    return tuple(tensors)


def _tensor(row: _Row, prefix: str, dims: list[str]) -> ReportTensor:
    padded, logical = [], []
    for d in dims:
        match = _DIM.fullmatch(d or "1")
        if match is None:
            raise _BadRow(f"{prefix}shape {_SHOWN.repr(d)} is not padded[logical]")
        padded.append(int(match[1]))
        logical.append(int(match[2] or match[1]))
    dtype_text = row.text(prefix + "DATATYPE")
    memory_text = row.text(prefix + "MEMORY")
    memory = _MEMORY.fullmatch(memory_text)
    if memory_text and memory is None:
        raise _BadRow(f"{prefix}MEMORY {_SHOWN.repr(memory_text)} is not a memory (DEV_0_L1_HEIGHT_SHARDED)")
    return ReportTensor(
        shape=tuple(logical),
        padded=tuple(padded),
        layout=row.text(prefix + "LAYOUT").lower()[:16],
        dtype=DTYPES.get(dtype_text, dtype_text.lower()[:16]),
        memory=memory[1].lower() if memory else "",
        memory_layout=memory[2].lower()[:32] if memory else "",
    )


def _on_device_clock(ops: list[ReportOp], cycles: dict[int, tuple[int, int]]) -> list[ReportOp]:
    """Each op's firmware start in ns from its device's first, at the clock its own cycles and
    durations give (the median over the device's ops: Wormhole's 1 GHz, Blackhole's 1.35 GHz)."""
    rates: dict[int, list[float]] = {}
    first: dict[int, int] = {}
    for op in ops:
        if op.line in cycles:
            start, end = cycles[op.line]
            first[op.device] = min(first.get(op.device, start), start)
            if op.fw_ns and end > start:
                rates.setdefault(op.device, []).append((end - start) / op.fw_ns)
    ghz = {device: statistics.median(found) for device, found in rates.items()}
    placed = []
    for op in ops:
        clock = ghz.get(op.device)
        at = (cycles[op.line][0] - first[op.device]) / clock if clock and op.line in cycles else None
        placed.append(replace(op, device_start_ns=at) if at is not None else op)
    return placed
