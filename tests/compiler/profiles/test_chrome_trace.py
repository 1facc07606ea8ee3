"""Chrome / Perfetto JSON traces read as measured profiles: complete events and B/E pairs as ops on
the tracks of their processes and threads, named by the metadata events; what is no op noted;
events that cannot be read skipped with why; files that are no trace refused in one line."""

from __future__ import annotations

import json

import pytest

from tilescope.compiler.profiles import chrome_trace
from tilescope.compiler.profiles.chrome_trace import TraceError, read_trace
from tilescope.compiler.profiles.profile_file import read_profile
from tests.compiler.profiles.reports import add, report_text

# what the PyTorch profiler writes, cut down: a process of two threads, its names in "M" events
TRACE = {
    "traceEvents": [
        {"ph": "M", "name": "process_name", "pid": 4242, "tid": 0, "args": {"name": "python3"}},
        {"ph": "M", "name": "thread_name", "pid": 4242, "tid": 1, "args": {"name": "main"}},
        {"ph": "M", "name": "thread_name", "pid": 4242, "tid": 2, "args": {"name": "backward"}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 4242, "tid": 1, "ts": 1000.5, "dur": 20},
        {"ph": "B", "name": "ProfilerStep#1", "pid": 4242, "tid": 1, "ts": 1000},
        {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 4242, "tid": 1, "ts": 1030, "dur": 5},
        {"ph": "E", "pid": 4242, "tid": 1, "ts": 1100},
        {"ph": "X", "name": "AddmmBackward0", "pid": 4242, "tid": 2, "ts": 1200, "dur": 40},
        {"ph": "X", "name": "kernel", "pid": "gpu", "tid": "stream 7", "ts": 1010, "dur": 12.25},
        {"ph": "C", "name": "memory", "pid": 4242, "ts": 1000, "args": {"bytes": 10}},
        {"ph": "i", "name": "mark", "pid": 4242, "tid": 1, "ts": 1001},
        {"ph": "i", "name": "mark", "pid": 4242, "tid": 1, "ts": 1002},
    ],
    "displayTimeUnit": "ns",
}


def test_complete_events_and_pairs_are_ops_on_their_threads():
    report = read_trace(json.dumps(TRACE), "torch.json")
    assert (report.format, report.rows, report.skipped) == ("chrome-trace", 12, ())
    found = [(op.op_code, op.track, op.device, op.device_start_ns, op.kernel_ns) for op in report.ops]
    assert found == [  # by start: the trace's first event is time zero; us become ns
        ("ProfilerStep#1", "python3 / main", 0, 0.0, 100_000.0),
        ("aten::linear", "python3 / main", 0, 500.0, 20_000.0),
        ("kernel", "pid gpu / tid stream 7", 1, 10_000.0, 12_250.0),  # no names given
        ("aten::relu", "python3 / main", 0, 30_000.0, 5_000.0),
        ("AddmmBackward0", "python3 / backward", 0, 200_000.0, 40_000.0),
    ]
    assert report.devices == (0, 1)  # a process each
    assert report.ops[1].attributes == {"cat": "cpu_op"} and report.ops[1].line == 4  # its event's place
    assert report.notes == ("1 event of phase 'C' not read (not an op)", "2 events of phase 'i' not read (not an op)")


def test_a_bare_list_of_events_is_a_trace_too():
    report = read_trace(json.dumps(TRACE["traceEvents"]), "t.json")
    assert len(report.ops) == 5
    assert read_profile(" \n" + json.dumps(TRACE), "t.json").format == "chrome-trace"
    assert read_profile(report_text(add()), "r.csv").format == "ops-perf-csv"


def test_pairs_match_the_latest_begin_of_their_thread_in_time_order():
    events = [
        {"ph": "E", "pid": 1, "tid": 1, "ts": 50},  # listed first, but after both begins in time
        {"ph": "B", "name": "outer", "pid": 1, "tid": 1, "ts": 0},
        {"ph": "B", "name": "inner", "pid": 1, "tid": 1, "ts": 10},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 20},
    ]
    report = read_trace(json.dumps(events))
    assert [(op.op_code, op.device_start_ns, op.kernel_ns) for op in report.ops] == [
        ("outer", 0.0, 50_000.0),
        ("inner", 10_000.0, 10_000.0),
    ]


@pytest.mark.parametrize(
    "event, reason",
    [
        ({"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 5}, "dur None is not a time in us"),
        ({"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 5, "dur": -1}, "a: duration -1.0 us is not a time"),
        ({"ph": "X", "name": "a\nb", "pid": 1, "tid": 1, "ts": 5, "dur": -1}, "'a\\nb': duration -1.0 us"),
        ({"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": "5", "dur": 1}, "ts '5' is not a time in us"),
        ({"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": True, "dur": 1}, "ts True is not a time in us"),
        ({"ph": "X", "name": "", "pid": 1, "tid": 1, "ts": 5, "dur": 1}, "no name"),
        ({"ph": "X", "name": 7, "pid": 1, "tid": 1, "ts": 5, "dur": 1}, "name 7 is not text"),
        ({"ph": "X", "name": "a\0b", "pid": 1, "tid": 1, "ts": 5, "dur": 1}, "has a NUL character"),
        ({"ph": "E", "pid": 1, "tid": 1, "ts": 5}, "ends an event that never began on its thread"),
        ({"ph": "B", "name": "open", "pid": 1, "tid": 1, "ts": 5}, "'open' began and never ended"),
        ([1, 2], "not an event but list"),
    ],
)
def test_an_event_that_cannot_be_read_is_skipped_with_its_place_and_reason(event, reason):
    good = {"ph": "X", "name": "ok", "pid": 1, "tid": 1, "ts": 0, "dur": 1}
    report = read_trace(json.dumps([good, event]), "t.json")
    (skipped,) = report.skipped
    assert skipped.startswith("t.json:event 2: ") and reason in skipped, skipped
    assert [op.op_code for op in report.ops] == ["ok"]


@pytest.mark.parametrize(
    "text, reason",
    [
        ("", "not JSON: Expecting value at line 1 column 1"),
        ('{"traceEvents": [', "not JSON"),
        ('{"traceEvents": 5}', "no list of trace events"),
        ("{}", "no list of trace events"),
        ('[{"ph": "X", "ts": NaN}]', "NaN is not a number JSON has"),
        ("[" * 33 + "]" * 33, "nested more than 32 deep"),
        ('[{"a": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}]', None),  # brackets in strings are text
        ('[{"a": "\\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}]', None),
        ("[" + "9" * 5000 + "]", "not a trace"),
    ],
)
def test_a_file_that_is_no_trace_is_one_line(text, reason):
    if reason is None:
        assert read_trace(text).ops == ()
        return
    with pytest.raises(TraceError) as err:
        read_trace(text, "bad.json")
    message = str(err.value)
    assert message.startswith("bad.json: ") and reason in message and "\n" not in message


def test_size_and_counts_are_bounded(monkeypatch):
    monkeypatch.setattr(chrome_trace, "MAX_CHARS", 100)
    with pytest.raises(TraceError, match="a trace is read up to"):
        read_trace(" " * 101)
    monkeypatch.setattr(chrome_trace, "MAX_CHARS", 10**9)
    monkeypatch.setattr(chrome_trace, "MAX_EVENTS", 3)
    with pytest.raises(TraceError, match="4 events; a trace is read up to 3"):
        read_trace(json.dumps([{}] * 4))
    monkeypatch.setattr(chrome_trace, "MAX_EVENTS", 100)
    monkeypatch.setattr(chrome_trace, "MAX_OPS", 2)
    report = read_trace(json.dumps([{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": t, "dur": 1} for t in range(3)]))
    assert len(report.ops) == 2 and "more than 2 complete events" in report.skipped[0]


def test_long_and_alike_thread_names_make_tracks_of_their_own_within_64_characters():
    long = "w" * 100
    events = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "p" * 100}}]
    events += [{"ph": "M", "name": "thread_name", "pid": 1, "tid": t, "args": {"name": long + str(t)}} for t in (1, 2)]
    events += [{"ph": "X", "name": "a", "pid": 1, "tid": t, "ts": 0, "dur": 1} for t in (1, 2)]
    tracks = [op.track for op in read_trace(json.dumps(events)).ops]
    assert len(set(tracks)) == 2 and all(len(t) <= 64 for t in tracks)
