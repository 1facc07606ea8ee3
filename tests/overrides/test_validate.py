"""check_op_names: every override names an op of the graph; the error suggests close names."""

from __future__ import annotations

import pytest

from compiler.errors import OverrideError
from compiler.models import load_model
from overrides import check_op_names, parse_item


def test_known_names_pass_and_one_unknown_name_fails_the_batch(model_file):
    path, names = model_file
    graph = load_model(path).graph
    known = [parse_item(f"{name}=l1") for name in names]
    assert check_op_names(known, graph) is None
    assert check_op_names([], graph) is None
    with pytest.raises(OverrideError, match="no op named 'nope'"):
        check_op_names([*known, parse_item("nope=l1")], graph)


def test_typo_suggests_the_right_name(model_file):
    path, _ = model_file
    graph = load_model(path).graph
    with pytest.raises(OverrideError) as err:
        check_op_names([parse_item("matmul_l=2x2")], graph)
    message = str(err.value)
    assert "no op named 'matmul_l'" in message
    assert "did you mean" in message and "matmul_1" in message
    assert "override 'matmul_l=2x2'" in message
    assert graph.name in message


def test_far_off_name_has_no_suggestion(tiny_path):
    graph = load_model(tiny_path).graph
    with pytest.raises(OverrideError) as err:
        check_op_names([parse_item("zzzzzzzz=l1")], graph)
    assert "did you mean" not in str(err.value)


def test_first_bad_override_is_reported(tiny_path):
    graph = load_model(tiny_path).graph
    items = [parse_item("matmul_0=l1"), parse_item("relu_9=l1"), parse_item("nope=l1")]
    with pytest.raises(OverrideError, match="relu_9"):
        check_op_names(items, graph)


def test_hierarchical_names(wormhole):
    graph = load_model("zoo:mlp").graph
    check_op_names([parse_item("mlp.layer.1.gelu=l1")], graph)
    with pytest.raises(OverrideError, match=r"mlp\.layer\.1\.gelu"):
        check_op_names([parse_item("mlp.layer.1.gelux=l1")], graph)
