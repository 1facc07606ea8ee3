"""What the server is doing to open a model, as the pages waiting on it ask for it."""

from __future__ import annotations

from tilescope.app.workbench import openings

KEY = ("zoo:mlp", "wormhole_n150", "greedy-l1", "host", False)


def test_a_stage_is_its_keys_while_reported_and_gone_after():
    assert openings.stage_of(KEY) == ""
    with openings.reporting(KEY) as say:
        assert openings.stage_of(KEY) == ""  # nothing said yet
        say("compiling")
        assert openings.stage_of(KEY) == "compiling"
        assert openings.stage_of((*KEY[:4], True)) == ""  # another opening (data-tiling) is not this one
    assert openings.stage_of(KEY) == ""


def test_two_requests_opening_the_same_model_share_its_stage_until_both_are_done():
    with openings.reporting(KEY) as first:
        with openings.reporting(KEY) as second:
            first("importing 7 ops")
            assert openings.stage_of(KEY) == "importing 7 ops"
            second("storing the run")
        assert openings.stage_of(KEY) == "storing the run"  # the first still waits on it
    assert openings.stage_of(KEY) == ""
