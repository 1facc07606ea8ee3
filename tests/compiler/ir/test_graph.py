"""The graph IR's own behaviour: finding an op by name however the passes change the op list, and
a layout's hash, kept on it and not pickled."""

from __future__ import annotations

from tilescope.compiler.ir.graph import Graph, Op, Tensor


def _op(name: str) -> Op:
    return Op(name, "relu", ["x"], [name])


def _graph(*names: str) -> Graph:
    tensors = {n: Tensor(n, (32, 32), "f32") for n in ("x", *names)}
    return Graph("g", "graph", tensors, [_op(n) for n in names], ["x"], list(names))


def test_an_op_is_found_after_two_equal_length_list_replacements():
    """CPython gives a freed list's address to the next list made, so the list two replacements on
    may sit where the indexed one was: an index keyed by the list's id and length took it for the
    old one and answered with an op no longer in the graph."""
    graph = _graph("a")
    for i in range(10):
        assert graph.op(graph.ops[0].name) is graph.ops[0]  # indexes the list of now
        first, second = _op(f"first_{i}"), _op(f"second_{i}")
        graph.ops = [first]  # the indexed list is freed here...
        graph.ops = [second]  # ...and its address is free for this one
        assert graph.op(second.name) is second
        assert not graph.has_op(first.name)


def test_an_op_is_found_after_the_list_grows_in_place():
    graph = _graph("a")
    graph.op("a")
    graph.ops.append(_op("b"))
    assert graph.op("b") is graph.ops[1]


def test_a_copy_for_the_next_level_finds_its_own_ops():
    graph = _graph("a", "b")
    graph.op("a")
    copy = graph.with_level("partition")
    assert copy.op("b") is copy.ops[1] and copy.op("b") is not graph.op("b")


def test_a_layouts_hash_is_its_fields_and_stays_in_its_process():
    """Worked out once and kept on the layout, a hash is the fields' hash; pickled (to another
    process, whose strings hash otherwise), it is left out and worked out there again."""
    import pickle
    from dataclasses import replace

    from tilescope.compiler.ir.graph import Layout

    layout = Layout(memory="l1", memory_layout="height_sharded", grid=(8, 8), dtype="bf16", address=4096)
    assert hash(layout) == hash(("l1", "height_sharded", (8, 8), "bf16", "tile", (32, 32), 4096))
    sent = pickle.loads(pickle.dumps(layout))
    assert "_hash" not in sent.__dict__ and sent == layout and {layout: 1}[sent] == 1
    assert replace(layout, address=None) != layout and hash(replace(layout, address=None)) != hash(layout)
