"""Fuzzing the ops perf CSV import against a stored run of tests/data/tiny_mlp.mlir, on SQLite and
PostgreSQL: random columns (the ones read, repeated, misspelt), ragged rows of random values (op
names, numbers from NaN to 1e308, text with NULs, quotes and line breaks), other delimiters and
line ends, byte order marks, cut files and binary garbage. Each is one CsvImportError line that
stores nothing, or a stored run with finite times, one line per problem, that exports again."""

from __future__ import annotations

import csv
import io
import math

from hypothesis import given
from hypothesis import strategies as st

from tilescope.perfdb.exports import chrome_trace
from tilescope.perfdb.ops_csv import DURATION, LATENCY, CsvImportError, import_csv, write_csv
from tilescope.perfdb.runs import get_run, op_records
from tilescope.perfdb.schema import Run
from tests.fuzzing import HOSTILE_FIELDS, case, fuzz_settings, one_line
from tests.perfdb.test_ops_csv import base, sessions  # noqa: F401  (fixtures: a stored run per database)

COLUMNS = st.sampled_from(
    ["LOC", "OP NAME", DURATION, LATENCY, "CORE COUNT", "MATH FIDELITY", "OP CODE", " LOC ", ""]
) | st.text(max_size=10)
CELLS = (
    st.sampled_from(
        ["matmul_0", "matmul_1", 'loc("matmul_0")', 'loc("matmul_1"("f":1:2))', "add_0", "nope", "LoFi", "HiFi4"]
        + ["hifi2", "64", "65537", *HOSTILE_FIELDS]
    )
    | st.floats().map(repr)
    | st.integers().map(str)
    | st.integers(4000, 5000).map("9".__mul__)
    | st.text(max_size=12)
)


def _mostly(good: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """Four times in five a value of the column's kind, so that rows are stored and times summed."""
    return st.integers(0, 4).flatmap(lambda n: CELLS if n == 0 else good)


NAMES = _mostly(st.sampled_from(["matmul_0", "matmul_1", 'loc("matmul_1")']))
TIMES = _mostly(st.floats(0, 2e15).map(repr) | st.integers(0, 10**6).map(str))
BY_COLUMN = {
    "LOC": NAMES,
    "OP NAME": NAMES,
    DURATION: TIMES,
    LATENCY: TIMES,
    "CORE COUNT": _mostly(st.integers(-1, 70_000).map(str)),
    "MATH FIDELITY": _mostly(st.sampled_from(["LoFi", "HiFi2", "hifi4"])),
}


@st.composite
def reports(draw) -> str:
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=300)).decode("latin-1")  # garbage
    header = draw(st.lists(COLUMNS, max_size=3))
    usable = [
        ["LOC", DURATION, LATENCY, "CORE COUNT"],
        ["LOC", DURATION],
        ["OP NAME", DURATION, LATENCY, "MATH FIDELITY"],
    ]
    header[draw(st.integers(0, len(header))) : 0] = draw(st.sampled_from([*usable * 3, [DURATION], []]))
    rows = []
    for _ in range(draw(st.integers(0, 12))):
        row = [draw(BY_COLUMN.get(column.strip(), CELLS)) for column in header]
        if draw(st.integers(0, 4)) == 0:  # ragged
            row = row[: draw(st.integers(0, len(row)))] + draw(st.lists(CELLS, max_size=2))
        rows.append(row)
    if draw(st.booleans()):  # as a CSV writer quotes it
        out = io.StringIO()
        csv.writer(out, lineterminator=draw(st.sampled_from(["\n", "\r\n", "\r"]))).writerows([header, *rows])
        text = out.getvalue()
    else:  # as a careless script joins it
        delimiter, end = draw(st.sampled_from([",", ",", ",", ";", "\t"])), draw(st.sampled_from(["\n", "\r\n", "\r"]))
        text = "".join(delimiter.join(row) + end for row in [header, *rows])
    if draw(st.integers(0, 9)) == 0:
        text = text[: draw(st.integers(0, len(text)))]
    return draw(st.sampled_from(["", "\ufeff"])) + text


@fuzz_settings(default=100)
@given(reports())
def test_fuzz_csv_import(sessions, base, text):  # noqa: F811  (the imported fixtures)
    with sessions() as s, case(f"csv: imports ({s.get_bind().dialect.name})", lambda: text):
        runs = s.query(Run).count()
        try:
            run_id, problems = import_csv(s, text, base, "fuzz.csv")
        except CsvImportError as err:
            one_line(str(err))
            assert s.query(Run).count() == runs  # nothing stored
            return
        for problem in problems:
            one_line(problem)
        run = get_run(s, run_id)
        ops = op_records(s, run_id)
        assert ops and math.isfinite(run.total_ns) and math.isfinite(run.device_ns)
        assert all(math.isfinite(op.start_ns) and 0 <= op.duration_ns <= 1e15 for op in ops)
        # what was stored exports again, one row per op
        assert len(list(csv.DictReader(io.StringIO(write_csv(s, run_id, {"dram": 258e9}))))) == len(ops)
        chrome_trace(s, run_id)
