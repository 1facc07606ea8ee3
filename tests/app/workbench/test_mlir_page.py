"""What the MLIR view shows of a level: its search, its window of lines, and the op each line
belongs to."""

from __future__ import annotations

import pytest

from tilescope.app.workbench.mlir_page import (
    MAX_MATCHES,
    MAX_QUERY,
    checked_query,
    find_matches,
    line_matches,
    line_ops,
    window,
)
from tilescope.compiler.errors import TilescopeError

TEXT = """module {
  %0 = "ttir.MatMul"(%a) : (tensor<2xbf16>) -> tensor<2xbf16>
  %1 = "ttir.matmul"(%0) : (tensor<2xbf16>) -> tensor<2xbf16> loc("matmulmatmul")
  return %1 : tensor<2xbf16>
}
"""


def test_a_search_counts_every_match_of_the_level_ignoring_case_each_by_its_line():
    found = find_matches(TEXT, "MATMUL")
    # line 1 once; line 2 three times (the loc's two do not overlap); (line, nth in the line)
    assert found.at == ((1, 0), (2, 0), (2, 1), (2, 2)) and not found.capped
    assert found.count_text(1) == "2 of 4 matches"
    assert find_matches(TEXT, "return").count_text(0) == "1 of 1 match"
    assert find_matches(TEXT, "conv2d").count_text(None) == "no matches"
    assert find_matches(TEXT, "").at == ()


def test_matches_in_a_line_are_those_the_level_count_gives_it():
    text = "x = aaaa\naAa\n\nnothing\n" * 3
    found = find_matches(text, "aa")
    per_line = [line_matches(line, "aa") for line in text.split("\n")]
    assert [(n, i) for n, spans in enumerate(per_line) for i in range(len(spans))] == list(found.at)
    assert per_line[0] == [(4, 6), (6, 8)] and per_line[1] == [(0, 2)]
    # only ASCII letters fold: a letter whose lower case is longer ("İ") moves no offset
    assert line_matches("İİ tensor", "TENSOR") == [(3, 9)]
    assert line_matches("aaaa", "a", limit=3) == [(0, 1), (1, 2), (2, 3)]


def test_the_count_stops_at_its_cap_and_says_so():
    found = find_matches("ab\n" * (MAX_MATCHES + 5), "b")
    assert len(found.at) == MAX_MATCHES and found.capped
    assert found.at[-1] == (MAX_MATCHES - 1, 0)
    assert found.count_text(0) == f"1 of {MAX_MATCHES:,}+ matches"
    exact = find_matches("b" * MAX_MATCHES, "b")
    assert len(exact.at) == MAX_MATCHES and not exact.capped


@pytest.mark.parametrize(
    "query, fragment",
    [("x" * (MAX_QUERY + 1), f"at most {MAX_QUERY} characters"), ("a\nb", "one line of text"), ("a\rb", "one line")],
)
def test_a_search_too_long_or_over_lines_is_one_line_naming_why(query, fragment):
    with pytest.raises(TilescopeError) as err:
        checked_query(query)
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_an_empty_or_blank_search_is_none_and_a_short_one_is_kept_as_typed():
    assert checked_query(None) == "" and checked_query("   ") == ""
    assert checked_query(" %0 ") == " %0 " and checked_query("x" * MAX_QUERY) == "x" * MAX_QUERY


def test_the_window_holds_a_short_text_whole_and_a_long_one_around_what_to_show():
    assert window(120, 50, None, 500) == (0, 120)
    assert window(2_000, None, None, 500) == (0, 500)
    assert window(2_000, 900, None, 500) == (734, 1_234)  # the line a third of the way down
    assert window(2_000, 1_990, None, 500) == (1_500, 2_000)  # the last page stays full
    assert window(2_000, 10, None, 500) == (0, 500)
    # a line already in view keeps the window (a click does not move the text under the pointer)
    assert window(2_000, 1_100, (734, 1_234), 500) == (734, 1_234)
    assert window(2_000, None, (734, 1_234), 500) == (734, 1_234)
    assert window(2_000, 1_300, (734, 1_234), 500) == (1_134, 1_634)
    # a window that does not fit this text (another level's) is not kept
    assert window(1_000, 700, (734, 1_234), 500) == (500, 1_000)


def test_each_line_belongs_to_the_innermost_op_that_holds_it():
    spans = {"outer": (3, 12), "inner": (5, 7), "next": (13, 14), "far": (40, 41)}
    assert line_ops(spans, 0, 20) == [
        (3, 4, "outer"),
        (5, 7, "inner"),
        (8, 12, "outer"),
        (13, 14, "next"),
    ]
    # cut to the window: lines 6-13 (0-based 5..12)
    assert line_ops(spans, 5, 13) == [(6, 7, "inner"), (8, 12, "outer"), (13, 13, "next")]
    assert line_ops(spans, 20, 30) == []
