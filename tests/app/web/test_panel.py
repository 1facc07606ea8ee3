"""What a panel's callback returns when it changes some of its outputs only."""

from __future__ import annotations

from dash import no_update

from tilescope.app.web.panel import outputs
from tilescope.app.web.panels.override_form import FILLED


def test_outputs_left_as_they_are_keep_the_shape_dash_checks_a_result_against():
    """A group of outputs (the form's fields) left alone is a group of no_update, not one no_update:
    Dash refuses a result of another shape, and the page logs the failed request."""
    result = outputs(FILLED, apply_disabled=True)
    assert result["apply_disabled"] is True and result["stage_disabled"] is no_update
    assert set(result["form"]) == set(FILLED["form"]) and all(v is no_update for v in result["form"].values())
    assert outputs({"pair": ["a", "b"], "one": "c"}, one=1) == {"pair": [no_update, no_update], "one": 1}
