"""Read a Chrome / Perfetto JSON trace (the Trace Event Format the PyTorch profiler, JAX's
profiler, tt-metal's exporters and `tilescope export --format chrome` write) into a Report: one op
per complete event ("X", or a "B" and its "E"), on the track of its process and thread as the "M"
metadata events name them; ts and dur in microseconds.

The file is `{"traceEvents": [...]}` or a bare list of events. Each process is a device of the
report (numbered in the order first seen), each thread a track of it. Counter, instant, flow and
async events are not ops: how many there were is said in a note. An event that cannot be read is
skipped with its reason. Work is bounded: the text's size, its nesting (checked before the JSON
parser, which recurses per level, sees it), the events read and the ops kept; nothing in the file
is evaluated.
"""

from __future__ import annotations

import json
import math
import re
import reprlib
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.profiles.report import Report, ReportOp

MAX_CHARS = 256 * 2**20  # a trace's text: json makes several times its size in objects
MAX_NESTING = 32  # of [ and {: a trace nests 4 or 5 deep (its list, an event, its args)
MAX_EVENTS = 1_000_000  # events of any phase read
MAX_OPS = 100_000  # complete events kept as ops: each becomes stored records, as a report's row
MAX_TRACKS = 4096  # processes and threads
MAX_DEPTH = 256  # a thread's "B" events open at once
MAX_NAME = 128  # an event's name kept, as an ops perf report's OP CODE
TRACK_CHARS = 64  # a track's name (what perfdb keeps of it)
MAX_NS = 1e15  # a time, as an ops perf report's
US = 1e3  # ns per us
_SHOWN = reprlib.Repr()
_SHOWN.maxstring = 60
_SHOWN.maxother = 60
OPS = ("X", "B", "E")
# a JSON string (its closing quote optional, so an unclosed one is taken once, not from each quote
# in it again), and what is left that is no bracket
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_ME = {"process_name", "thread_name"}


class TraceError(TilescopeError):
    """The file is not a trace at all (not JSON, too large, too deep, no list of events)."""


class _BadEvent(ValueError):
    """One event cannot be read: the message says why."""


def read_trace(text: str, source: str = "trace.json") -> Report:
    """The trace in `text` (JSON), named `source` in what it says."""
    events = _events(_parse(text, source), source)
    reading = _Reading(source)
    for index, event in enumerate(events, start=1):
        reading.event(index, event)
    return reading.report(len(events))


def _parse(text: str, source: str):
    if len(text) > MAX_CHARS:
        raise TraceError(f"{source}: {len(text) / 2**20:,.0f} MiB of text; a trace is read up to {MAX_CHARS >> 20} MiB")
    _check_nesting(text, source)
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as err:
        raise TraceError(f"{source}: not JSON: {err.msg} at line {err.lineno} column {err.colno}") from None
    except (ValueError, RecursionError) as err:  # NaN, Infinity, an integer of thousands of digits
        raise TraceError(f"{source}: not a trace: {str(err).splitlines()[0][:200]}") from None


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number JSON has")


def _check_nesting(text: str, source: str) -> None:
    """Refuse nesting deeper than MAX_NESTING before json recurses into it: strings taken out, the
    brackets left counted (in C throughout: a trace of 100 MB takes a second)."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    if not brackets:
        return
    steps = np.frombuffer(brackets.encode("ascii"), np.uint8)
    depth = np.cumsum(np.where((steps == ord("[")) | (steps == ord("{")), 1, -1), dtype=np.int32)
    if int(depth.max()) > MAX_NESTING:
        raise TraceError(f"{source}: nested more than {MAX_NESTING} deep; a trace nests a few levels")


def _events(found, source: str) -> list:
    events = found.get("traceEvents") if isinstance(found, dict) else found
    if not isinstance(events, list):
        raise TraceError(f'{source}: no list of trace events (a trace is {{"traceEvents": [...]}} or a list)')
    if len(events) > MAX_EVENTS:
        raise TraceError(f"{source}: {len(events):,} events; a trace is read up to {MAX_EVENTS:,}")
    return events


@dataclass
class _Thread:
    track: str
    device: int
    open: list = field(default_factory=list)  # the "B" events not yet ended: (index, name, ts, cat)


class _Reading:
    """What a trace's events make, read one by one: metadata, then ops in time order per thread."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.ops: list[ReportOp] = []
        self.first = 0.0  # the earliest time (us) of any op's event: the trace's time zero
        self.skipped: list[str] = []
        self.other: Counter[str] = Counter()
        self.names: dict[tuple[str, str], str] = {}  # (pid, "") -> process name, (pid, tid) -> thread name
        self.timed: list[tuple[int, dict]] = []

    def event(self, index: int, event) -> None:
        try:
            if not isinstance(event, dict):
                raise _BadEvent(f"not an event but {type(event).__name__}")
            phase = event.get("ph")
            if phase == "M":
                self._metadata(event)
            elif phase in OPS:
                self.timed.append((index, event))
            else:
                self.other[str(phase)[:8]] += 1
        except _BadEvent as err:
            self.skipped.append(f"{self.source}:event {index}: {err}")

    def _metadata(self, event: dict) -> None:
        if event.get("name") not in _ME:
            return
        name = (event.get("args") or {}).get("name") if isinstance(event.get("args"), dict) else None
        if isinstance(name, str) and name.isprintable():
            key = (_id(event, "pid"), _id(event, "tid") if event["name"] == "thread_name" else "")
            self.names[key] = name

    def report(self, events: int) -> Report:
        threads: dict[tuple[str, str], _Thread] = {}
        times = [_ts(event) for _, event in self.timed]
        self.first = min((t for t in times if t is not None), default=0.0)  # the trace's time zero
        keys = [(_id(event, "pid"), _id(event, "tid"), t or 0.0) for (_, event), t in zip(self.timed, times)]
        # per thread in time order, as B/E pairs are matched (a trace need not list them sorted)
        for at in sorted(range(len(keys)), key=keys.__getitem__):
            index, event = self.timed[at]
            try:
                self._timed(index, event, keys[at][:2], threads)
            except _BadEvent as err:
                self.skipped.append(f"{self.source}:event {index}: {err}")
        for thread in threads.values():
            self.skipped += [
                f"{self.source}:event {i}: {_SHOWN.repr(name)} began and never ended" for i, name, _, _ in thread.open
            ]
        return self._report(events)

    def _timed(self, index: int, event: dict, key: tuple[str, str], threads: dict) -> None:
        thread = self._thread(key, threads)
        ts, phase = _number(event, "ts"), event["ph"]
        if phase == "B":
            if len(thread.open) >= MAX_DEPTH:
                raise _BadEvent(f"more than {MAX_DEPTH} events open at once on its thread")
            thread.open.append((index, _name(event), ts, event.get("cat")))
        elif phase == "E":
            if not thread.open:
                raise _BadEvent("ends an event that never began on its thread")
            begun, name, start, cat = thread.open.pop()
            self._op(begun, name, cat, start, ts - start, thread)
        else:
            self._op(index, _name(event), event.get("cat"), ts, _number(event, "dur"), thread)

    def _thread(self, key: tuple[str, str], threads: dict) -> _Thread:
        found = threads.get(key)
        if found is None:
            if len(threads) >= MAX_TRACKS:
                raise _BadEvent(f"on one thread more than the {MAX_TRACKS:,} read")
            devices = {t.device for t in threads.values()}
            same = next((t.device for k, t in threads.items() if k[0] == key[0]), len(devices))
            found = threads[key] = _Thread(self._track(key, {t.track for t in threads.values()}), same)
        return found

    def _track(self, key: tuple[str, str], taken: set[str]) -> str:
        process = self.names.get((key[0], ""), f"pid {key[0]}")
        thread = self.names.get(key, f"tid {key[1]}")
        thread = thread[: TRACK_CHARS - 15]
        track = f"{process[: TRACK_CHARS - 3 - len(thread)]} / {thread}"
        count = 1
        while track in taken:  # two threads whose names were cut alike
            count += 1
            track = f"{track[: TRACK_CHARS - 8]} #{count}"
        return track

    def _op(self, index: int, name: str, cat, ts: float, dur: float, thread: _Thread) -> None:
        if not 0 <= dur <= MAX_NS / US:
            raise _BadEvent(f"{_said(name)}: duration {_SHOWN.repr(dur)} us is not a time (0 to {MAX_NS / US:g} us)")
        if len(self.ops) >= MAX_OPS:
            raise _BadEvent(f"more than {MAX_OPS:,} complete events; split the trace")
        start = (ts - self.first) * US
        if start > MAX_NS:
            raise _BadEvent(f"{_said(name)}: starts {start:.3g} ns after the trace's first event")
        cat_text = cat[:64] if isinstance(cat, str) and cat.isprintable() else ""
        op = ReportOp(
            line=index,
            op_code=name,
            op_type="trace",
            call=None,
            device=thread.device,
            arch="",
            loc="",
            fidelity="",
            cores=None,
            attributes={"cat": cat_text} if cat_text else {},
            inputs=(),
            outputs=(),
            kernel_ns=dur * US,
            device_start_ns=start,
            track=thread.track,
        )
        self.ops.append(op)

    def _report(self, events: int) -> Report:
        ops = sorted(self.ops, key=lambda op: (op.device_start_ns, op.line))
        notes = [
            f"{count:,} event{'s' * (count != 1)} of phase {phase!r} not read (not an op)"
            for phase, count in sorted(self.other.items())
        ]
        return Report(
            source=self.source,
            format="chrome-trace",
            rows=events,
            ops=tuple(ops),
            skipped=tuple(sorted(self.skipped, key=_event_number)),
            notes=tuple(notes),
        )


def _event_number(line: str) -> int:
    number = line.rpartition(":event ")[2].partition(":")[0]
    return int(number) if number.isascii() and number.isdigit() else 0


def _ts(event: dict) -> float | None:
    """An event's time (us), when it has one to order it by (one that has none is refused when read)."""
    value = event.get("ts")
    return float(value) if _is_number(value) and math.isfinite(value) and abs(value) <= 1e18 else None


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _number(event: dict, key: str) -> float:
    value = event.get(key)
    if not _is_number(value) or not math.isfinite(value) or abs(value) > 1e18:
        raise _BadEvent(f"{key} {_SHOWN.repr(value)} is not a time in us")
    return float(value)


def _id(event: dict, key: str) -> str:
    """A pid or tid as text (traces write numbers or strings); "" when absent."""
    value = event.get(key, "")
    if isinstance(value, str):
        return value[:64]
    return str(value) if type(value) is int and abs(value) < 2**63 else _SHOWN.repr(value)


def _said(name: str) -> str:
    """A name as a one-line message quotes it: as it is, or escaped when it holds a line break or a
    control character."""
    return name if name.isprintable() else _SHOWN.repr(name)


def _name(event: dict) -> str:
    name = event.get("name", "")
    if not isinstance(name, str):
        raise _BadEvent(f"name {_SHOWN.repr(name)} is not text")
    if not name:
        raise _BadEvent("no name")
    if "\0" in name:
        raise _BadEvent(f"name {_SHOWN.repr(name)} has a NUL character")
    return name[:MAX_NAME]
