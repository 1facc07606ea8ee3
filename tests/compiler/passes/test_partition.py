"""The partition level: a model split over a system's devices, and the collectives it needs."""

from __future__ import annotations

import pytest

from compiler import opset
from compiler.models import load_model
from compiler.pipeline import compile_model
from compiler.resharding import COLLECTIVES
from compiler.simulator import simulate
from compiler.target import load_target

LLAMA = "zoo:llama-3.2-1b?layers=1&seq=512"
TP_MATMULS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
BF16 = 2


def compiled(n: int):
    """The llama block tensor parallel over n devices (of a T3K; one device: an n150)."""
    ref = f"{LLAMA}&devices={n}" if n > 1 else LLAMA
    return compile_model(load_model(ref), load_target("t3k" if n > 1 else "wormhole_n150"))


@pytest.fixture(scope="module")
def by_devices():
    return {n: compiled(n) for n in (1, 2, 4, 8)}


def _matmul_flops(compilation) -> dict[str, int]:
    graph = compilation.levels["partition"]
    found = {}
    for op in graph.ops:
        part = next((p for p in TP_MATMULS if f".{p}." in op.name), None)
        if op.kind == "matmul" and part:
            found[part] = opset.flops(graph, op)
    return found


def test_each_device_does_one_nth_of_every_split_matmul(by_devices):
    whole = _matmul_flops(by_devices[1])
    assert set(whole) == set(TP_MATMULS)
    for n in (2, 4, 8):
        assert _matmul_flops(by_devices[n]) == {part: f // n for part, f in whole.items()}


def test_a_megatron_block_all_reduces_twice_a_layer(by_devices):
    for n in (2, 4, 8):
        graph = by_devices[n].levels["partition"]
        reduces = [op for op in graph.ops if op.kind == "all_reduce"]
        assert [op.name.split(".matmul")[0] for op in reduces] == [
            "model.layers.0.self_attn.o_proj",
            "model.layers.0.mlp.down_proj",
        ]
        assert all(op.attrs["group"] == n for op in reduces)


def test_all_reduce_moves_what_a_ring_moves_and_takes_the_link_model_time(by_devices):
    seq, hidden = 512, 2048
    size = seq * hidden * BF16
    for n in (2, 4, 8):
        compilation = by_devices[n]
        system = compilation.target.system
        sim = simulate(compilation.kernel, compilation.target, "trace")
        reduces = [o for o in sim.ops if o.kind == "all_reduce"]
        assert len(reduces) == 2
        cost = system.collective("all_reduce", n, size)
        for timing in reduces:
            assert timing.bytes["link"] == pytest.approx(2 * (n - 1) / n * size)
            assert timing.duration_ns >= cost.seconds * 1e9 * (1 - 1e-9)
            assert timing.bound == "link"
            assert timing.duration_ns == pytest.approx(cost.seconds * 1e9)


def test_per_device_compute_shrinks_about_one_nth_and_collectives_grow(by_devices):
    compute, links = {}, {}
    for n, compilation in by_devices.items():
        sim = simulate(compilation.kernel, compilation.target, "trace")
        compute[n] = sum(o.duration_ns for o in sim.ops if o.kind not in COLLECTIVES)
        links[n] = sum(o.duration_ns for o in sim.ops if o.kind == "all_reduce")
    for n in (2, 4, 8):
        # fixed per-op costs (launch, pipeline fill) and narrower matmuls filling fewer cores keep
        # it from 1/n exactly; it stays within twice that
        assert compute[1] / n <= compute[n] <= 2 * compute[1] / n
    # the links' time is what the system's link model gives: a line along a T3K row for 2 and 4
    # devices, the ring through all 8 for 8 (so 8 beats 4: it uses both directions of every link)
    assert links[1] == 0
    size = 512 * 2048 * BF16
    for n in (2, 4, 8):
        system = by_devices[n].target.system
        assert links[n] == pytest.approx(2 * system.collective("all_reduce", n, size).seconds * 1e9)
    assert [system.route(n).algorithm for n in (2, 4, 8)] == ["line", "line", "ring"]


def test_one_device_keeps_the_graph_level_as_it_was():
    compilation = compiled(1)
    graph, partition = compilation.levels["graph"], compilation.levels["partition"]
    assert [op.name for op in partition.ops] == [op.name for op in graph.ops]
    assert not any(op.kind in COLLECTIVES for op in partition.ops)
    assert {n: t.shape for n, t in partition.tensors.items()} == {n: t.shape for n, t in graph.tensors.items()}


def test_a_model_without_shardings_is_split_by_the_policy():
    compilation = compile_model(load_model("zoo:llama-3.2-1b?layers=1&seq=128"), load_target("wormhole_n300"))
    graph = compilation.levels["partition"]
    assert graph.meta["mesh"].devices == 2
    q = next(op for op in graph.ops if op.name == "model.layers.0.self_attn.q_proj.matmul")
    assert graph.tensors[q.outputs[0]].shape == (128, 1024)  # column-parallel: half the columns
    assert [op.kind for op in graph.ops if op.kind in COLLECTIVES].count("all_reduce") == 2


def test_a_mesh_larger_than_the_system_is_one_line():
    from compiler.errors import ModelLoadError

    with pytest.raises(ModelLoadError, match=r"needs 8 devices; wormhole_n300 has 2"):
        compile_model(load_model(f"{LLAMA}&devices=8"), load_target("wormhole_n300"))
