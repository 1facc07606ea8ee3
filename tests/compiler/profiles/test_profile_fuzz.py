"""Fuzzing the readers of measured profiles: ops perf reports with random columns (the ones read,
repeated, misspelt), ragged rows of hostile values (times from NaN to 1e308, shapes, memories and
attributes half right, NULs, quotes and line breaks), other delimiters, cut files and garbage; and
JSON traces with random events, wrong types, deep nesting, huge numbers and cut text. Each is a
Report whose every time is finite and whose skipped rows are one line each, or a TilescopeError of
one line, never a traceback. The stores of what they read are fuzzed in
tests/app/workbench/test_measured_fuzz.py."""

from __future__ import annotations

import csv
import io
import json
import math

from hypothesis import given
from hypothesis import strategies as st

from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.profiles.chrome_trace import read_trace
from tilescope.compiler.profiles.ops_report import MAX_NS, read_ops_report
from tilescope.compiler.profiles.report import Report
from tests.compiler.profiles.reports import COLUMNS, DURATION, SHARDED, attributes
from tests.fuzzing import HOSTILE_FIELDS, case, fuzz_settings, one_line

HOSTILE = st.sampled_from(HOSTILE_FIELDS) | st.text(max_size=12)
SHAPES = st.sampled_from(["1", "32", "32[19]", "1[1]", "999999999", "9" * 12, "32[", "[19]", "x", ""])
MEMORIES = st.sampled_from(["DEV_0_L1_HEIGHT_SHARDED", "DEV_1_DRAM_INTERLEAVED", "L1_X", "DRAM", "SYSTEM_MEMORY_Y", ""])
ATTRIBUTES = st.sampled_from(
    [
        attributes(output_mem_config=SHARDED),
        attributes(binary_op_type="BinaryOpType::SUB"),
        "{'a': '" + "b" * 5000,
        "{" + "'k': '" * 300,
        "None",
        "{'output_mem_config': 'MemoryConfig(shard_spec=ShardSpec(grid={[(x=0;y=0) - (x=9999;y=9999)]};shape={1; 1}",
    ]
) | st.text(max_size=40)
GOOD = {
    "OP CODE": st.sampled_from(["MatmulDeviceOperation", "BinaryNgDeviceOperation", "Conv2dDeviceOperation", "X"]),
    "OP TYPE": st.sampled_from(["tt_dnn_device", "tt_dnn_device", "tt_dnn_cpu", "signpost", "python_fallback"]),
    DURATION: st.floats(0, 2e15).map(repr) | st.integers(0, 10**6).map(str),
    "OP TO OP LATENCY [ns]": st.integers(0, 10**9).map(str),
    "CORE COUNT": st.integers(-1, 70_000).map(str),
    "DEVICE ID": st.integers(-1, 40_000).map(str),
    "DEVICE FW START CYCLE": st.integers(-10, 10**12).map(str),
    "DEVICE FW END CYCLE": st.integers(-10, 10**12).map(str),
    "DEVICE FW DURATION [ns]": st.integers(0, 10**6).map(str),
    "ATTRIBUTES": ATTRIBUTES,
}


def _cell(column: str) -> st.SearchStrategy[str]:
    if "PAD[LOGICAL]" in column:
        good = SHAPES
    elif column.endswith("_MEMORY"):
        good = MEMORIES
    else:
        good = GOOD.get(column, HOSTILE)
    return st.integers(0, 4).flatmap(lambda n: HOSTILE if n == 0 else good)  # mostly of the column's kind


@st.composite
def reports(draw) -> str:
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=300)).decode("latin-1")  # garbage
    header = draw(st.lists(st.sampled_from(COLUMNS), min_size=1, max_size=12, unique=True))
    header += draw(st.sampled_from([["OP CODE", DURATION], ["OP CODE", DURATION], [DURATION], ["OP CODE"], []]))
    if draw(st.booleans()):
        header.insert(draw(st.integers(0, len(header))), draw(st.sampled_from(["OP CODE", "LOC", " x "])))
    rows = []
    for _ in range(draw(st.integers(0, 10))):
        row = [draw(_cell(column)) for column in header]
        if draw(st.integers(0, 4)) == 0:  # ragged
            row = row[: draw(st.integers(0, len(row)))] + draw(st.lists(HOSTILE, max_size=2))
        rows.append(row)
    out = io.StringIO()
    csv.writer(out, lineterminator=draw(st.sampled_from(["\n", "\r\n", "\r"]))).writerows([header, *rows])
    text = out.getvalue()
    if draw(st.integers(0, 9)) == 0:
        text = text[: draw(st.integers(0, len(text)))]
    return draw(st.sampled_from(["", "\ufeff"])) + text


def _kept(report: Report) -> None:
    """What every report read keeps: times finite and in range, one line per row skipped."""
    for line in report.skipped:
        one_line(line)
    for op in (*report.ops, *report.host_ops):
        for ns in (op.kernel_ns, op.op_to_op_ns, op.device_start_ns, op.fw_ns):
            assert ns is None or (math.isfinite(ns) and ns >= 0), op
        assert op.kernel_ns is None or op.kernel_ns <= MAX_NS
        assert 0 <= op.device < 2**15 and (op.cores is None or 1 <= op.cores <= 1 << 16)
    assert math.isfinite(report.device_ns)


@fuzz_settings(default=150)
@given(reports())
def test_fuzz_ops_report(text):
    with case("profiles: ops perf report", lambda: text):
        try:
            report = read_ops_report(text, "fuzz.csv")
        except TilescopeError as err:
            one_line(str(err))
            return
        _kept(report)


NUMBERS = st.sampled_from([0, 1, -1, 1e18, 1e19, 2**70, 0.5, True, None, "1", [], {}]) | st.floats(allow_nan=False)
EVENTS = st.fixed_dictionaries(
    {},
    optional={
        "ph": st.sampled_from(["X", "X", "B", "E", "M", "C", "i", "b", 1, None]),
        "name": st.sampled_from(["aten::mm", "step", "", "a\x00b", "thread_name", "process_name", 3]) | st.text(),
        "pid": st.sampled_from([0, 1, "p", None, 2.5]),
        "tid": st.sampled_from([0, 1, 2, "t", [1]]),
        "ts": NUMBERS,
        "dur": NUMBERS,
        "cat": st.sampled_from(["cpu_op", "kernel", 5, "\n"]),
        "args": st.sampled_from([{"name": "main"}, {"name": 5}, {"name": "x" * 200}, [], "s", None]),
    },
)


@st.composite
def traces(draw) -> str:
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(st.binary(max_size=200)).decode("latin-1")
    if kind == 1:
        return "[" * draw(st.integers(1, 5000)) + draw(st.sampled_from(["", "]"]))  # deep, cut
    events = draw(st.lists(EVENTS | NUMBERS, max_size=15))
    found = {"traceEvents": events} if draw(st.booleans()) else events
    text = json.dumps(found)
    if draw(st.integers(0, 5)) == 0:
        text = text[: draw(st.integers(0, len(text)))]
    if draw(st.integers(0, 9)) == 0:
        text = text.replace("0", draw(st.sampled_from(["NaN", "Infinity", "9" * 5000, "1e999"])), 1)
    return text


@fuzz_settings(default=150)
@given(traces())
def test_fuzz_chrome_trace(text):
    with case("profiles: chrome trace", lambda: text):
        try:
            report = read_trace(text, "fuzz.json")
        except TilescopeError as err:
            one_line(str(err))
            return
        _kept(report)
        assert all(len(op.track) <= 64 and op.op_code for op in report.ops)
