"""The simulator: deterministic, never below the roofline, ops in order, zones inside each op."""

from __future__ import annotations

import pytest

from tilescope.compiler.ir.meta import KERNEL, L1_LIVE_PER_CORE
from tilescope.compiler.sim.simulator import simulate


@pytest.fixture(params=["mnist", "zoo:mlp", "tiny"])
def ref(request, tiny_path):
    return {"zoo:mlp": "zoo:mlp", "tiny": tiny_path}.get(request.param) or request.getfixturevalue("mnist_path")


def _by_name(sim):
    return {o.name: o for o in sim.ops}


def test_deterministic(ref, build, wormhole):
    compilation, first = build(ref)
    _, second = build(ref)
    third = simulate(compilation.kernel, wormhole)
    for other in (second, third):
        assert other.total_ns == first.total_ns
        assert [(o.name, o.start_ns, o.duration_ns, o.bytes, o.bound, o.why) for o in other.ops] == [
            (o.name, o.start_ns, o.duration_ns, o.bytes, o.bound, o.why) for o in first.ops
        ]
        assert other.zones == first.zones


@pytest.mark.parametrize("dispatch", ["host", "trace"])
def test_without_the_timeline_the_times_are_the_same(ref, build, wormhole, dispatch):
    compilation, _ = build(ref)
    full = simulate(compilation.kernel, wormhole, dispatch)
    times = simulate(compilation.kernel, wormhole, dispatch, timeline=False)
    assert times.total_ns == full.total_ns and times.load_ns == full.load_ns
    assert times.ops == full.ops
    assert full.zones.track_names() and not times.zones.track_names()


def test_never_faster_than_the_roofline(ref, build):
    _, sim = build(ref)
    for o in sim.ops:
        assert o.roofline_ns > 0
        assert o.duration_ns >= o.roofline_ns * (1 - 1e-6), o.name


def test_ops_in_graph_order_without_overlap(ref, build):
    compilation, sim = build(ref)
    assert [o.name for o in sim.ops] == [op.name for op in compilation.kernel.ops]
    for before, after in zip(sim.ops, sim.ops[1:]):
        assert after.start_ns >= before.end_ns
    assert sim.total_ns == sim.ops[-1].end_ns
    assert sim.device_ns == pytest.approx(sum(o.duration_ns for o in sim.ops))


def test_host_dispatch_spaces_launches(ref, build, wormhole):
    _, sim = build(ref)
    host = wormhole.dispatch_ns["host"]
    assert sim.dispatch == "host"
    for i, o in enumerate(sim.ops):
        assert o.start_ns >= (i + 1) * host


def test_zones_per_core_and_phase(ref, build):
    _, sim = build(ref)
    for o in sim.ops:
        zones = [z for z in sim.zones if z.op == o.name]
        top = [z for z in zones if z.depth == 0]
        phases = [z for z in zones if z.depth == 1]
        assert {z.depth for z in zones} == {0, 1}
        assert len(top) == o.cores == len({z.track for z in top})
        for z in top:
            assert z.track.startswith("core ") and z.name == o.name
            r, c = map(int, z.track.removeprefix("core ").split(","))
            assert 0 <= r < 8 and 0 <= c < 8
            assert z.start_ns == o.start_ns and z.end_ns <= o.end_ns + 1e-6
        top_tracks = {z.track for z in top}
        kinds = set()
        for z in phases:
            core, _, engine = z.track.partition("/")
            assert core in top_tracks
            assert engine in ("reader", "compute", "writer")
            kinds.add(engine)
            assert z.name == {"reader": "read", "compute": "compute", "writer": "write"}[engine]
            assert o.start_ns - 1e-6 <= z.start_ns < z.end_ns <= o.end_ns + 1e-6
        assert kinds == {"reader", "compute", "writer"}


def test_why_mentions_the_bound(ref, build):
    _, sim = build(ref, dispatch="trace")
    for o in sim.ops:
        assert o.bound in ("compute", "dram", "l1", "noc", "latency", "balanced")
        assert (f"{o.bound}-bound" if o.bound != "balanced" else "balanced:") in o.why.lower()
        assert "roofline" in o.why and "% of peak" in o.why


def test_short_ops_under_host_dispatch_are_dispatch_bound(ref, build):
    _, host = build(ref, dispatch="host")
    _, trace = build(ref, dispatch="trace")
    for h, t in zip(host.ops, trace.ops):
        if h.duration_ns < h.dispatch_wait_ns:  # the device idled longer than the op ran
            assert h.bound == "dispatch" and h.why.startswith("dispatch-bound: waited ")
        assert t.bound != "dispatch" and t.dispatch_wait_ns == 0
        assert h.duration_ns == pytest.approx(t.duration_ns)  # device time does not depend on the host
    assert host.total_ns > trace.total_ns


def test_achieved_rates_and_share_of_peak(build, wormhole):
    _, sim = build("zoo:matmul:2048x2048x2048", dispatch="trace")
    (op,) = sim.ops
    assert op.achieved_flops == pytest.approx(op.flops / (op.duration_ns / 1e9))
    # bf16 runs at HiFi2 by default: the peak is half the LoFi one
    assert op.pct_peak == pytest.approx(op.achieved_flops / (wormhole.peak_flops("bf16", "hifi2")) * 100)
    assert 50 < op.pct_peak <= 100
    assert op.bandwidth("dram") == pytest.approx(op.bytes["dram"] / (op.duration_ns / 1e9))


def test_counters_follow_l1_use_and_dram_traffic(tiny_path, build):
    compilation, sim = build(tiny_path, "matmul_0=1x4:l1:block_sharded", dispatch="trace")
    l1 = [c for c in sim.counters if c.name == "l1_bytes"]
    first, second = sim.ops
    kernel = compilation.kernel
    # while matmul_1 runs, core 0,0 holds its shard of matmul_0's output plus matmul_1's buffers
    at_second = {c.track: c.value for c in l1 if c.t_ns == second.start_ns}
    shard = compilation.levels["layout"].op("matmul_1").meta[L1_LIVE_PER_CORE][0, 0]
    group = next(g for g in kernel.op("matmul_1").meta[KERNEL].groups if (0, 0) in g.cores)
    assert shard > 0 and at_second["core 0,0"] == shard + group.cb_bytes
    dram = [(c.t_ns, c.value) for c in sim.counters if c.name == "dram_bytes_per_s"]
    assert dram[0] == (first.start_ns, pytest.approx(first.bandwidth("dram")))
    assert dram[1] == (first.end_ns, 0.0)


def test_bytes_and_flops(mnist_path, build):
    _, sim = build(mnist_path)
    ops = _by_name(sim)
    assert list(ops) == ["matmul_0", "matmul_1", "matmul_2"]  # bias adds and relus fused
    # 2*M*K*N for the matmul, plus one op per output element for each of the fused add and relu
    assert ops["matmul_0"].flops == 2 * 1 * 784 * 512 + 2 * 512
    assert ops["matmul_2"].flops == 2 * 1 * 512 * 10 + 10
    assert ops["matmul_0"].kind == "matmul" and ops["matmul_0"].grid == "8x8"
    assert ops["matmul_0"].memory == "dram"
    # 16 cores each read 25 tiles of B and one bias tile and write one 4 KiB tile; the first also
    # reads A's 25 tiles from DRAM and multicasts them to the other 15
    assert ops["matmul_0"].bytes == {"dram": 16 * (26 * 4096 + 4096) + 25 * 4096, "mcast": 15 * 25 * 4096}
    assert ops["matmul_0"].cores == 16


def test_one_core_is_much_slower_than_the_full_grid(build):
    _, full = build("zoo:matmul:2048x2048x2048")
    compilation, one = build("zoo:matmul:2048x2048x2048", "matmul=1x1")
    assert compilation.override_outcomes[0].status == "applied"
    assert one.ops[0].grid == "1x1" and one.ops[0].cores == 1
    assert full.ops[0].cores == 64
    assert one.ops[0].duration_ns > 10 * full.ops[0].duration_ns
    assert one.ops[0].bound == "compute"


def test_one_core_is_over_20x_slower_than_the_full_grid(build):
    _, full = build("zoo:matmul:2048x2048x2048")
    _, one = build("zoo:matmul:2048x2048x2048", "matmul=1x1")
    assert one.ops[0].duration_ns > 20 * full.ops[0].duration_ns


def test_l1_sharded_output_speeds_up_the_op_and_its_consumer(tiny_path, build):
    # both ops on the 1x4 cores matmul_0's four output tiles shard over; only the memory changes
    compilation, base = build(tiny_path, "matmul_0=1x4", "matmul_1=1x4")
    tuned_c, tuned = build(tiny_path, "matmul_0=1x4:l1:block_sharded", "matmul_1=1x4")
    assert [o.status for o in tuned_c.override_outcomes] == ["applied", "applied"]
    before, after = _by_name(base), _by_name(tuned)
    # the op writes to its own L1 instead of DRAM ...
    assert after["matmul_0"].memory == "l1" and before["matmul_0"].memory == "dram"
    assert after["matmul_0"].bytes.get("l1", 0) > 0
    assert after["matmul_0"].duration_ns < before["matmul_0"].duration_ns
    # ... and its consumer reads it from L1 (its own shard, the rest by multicast) instead of DRAM
    assert after["matmul_1"].bytes.get("l1", 0) > 0
    assert after["matmul_1"].bytes["dram"] < before["matmul_1"].bytes["dram"]
    assert after["matmul_1"].duration_ns < before["matmul_1"].duration_ns


def test_l1_sharded_input_speeds_up_a_matmul_consumer(mnist_path, build):
    # matmul_0 and its consumer on the 1x8 cores its 1x16 output tiles shard over
    _, base = build(mnist_path, "matmul_0=1x8", "matmul_1=1x8")
    _, tuned = build(mnist_path, "matmul_0=1x8:l1:block_sharded", "matmul_1=1x8")
    before, after = _by_name(base), _by_name(tuned)
    assert after["matmul_0"].duration_ns < before["matmul_0"].duration_ns
    assert after["matmul_1"].duration_ns < before["matmul_1"].duration_ns
    assert after["matmul_2"].duration_ns == before["matmul_2"].duration_ns  # neither writes nor reads it


def test_applied_override_changes_the_op_duration(model_file, build):
    path, _ = model_file
    _, base = build(path)
    _, tuned = build(path, "matmul_1=1x2:l1:block_sharded")
    before, after = _by_name(base), _by_name(tuned)
    assert after["matmul_1"].grid == "1x2" and after["matmul_1"].memory == "l1"
    assert after["matmul_1"].duration_ns != before["matmul_1"].duration_ns


def test_rejected_override_changes_nothing(model_file, build):
    path, _ = model_file
    _, base = build(path)
    _, tuned = build(path, "matmul_1=2x2:lls")
    assert [(o.name, o.duration_ns) for o in tuned.ops] == [(o.name, o.duration_ns) for o in base.ops]


def test_trace_dispatch_has_no_host_gaps(ref, build):
    _, host = build(ref)
    _, trace = build(ref, dispatch="trace")
    assert trace.dispatch == "trace"
    assert trace.total_ns <= host.total_ns
    assert trace.ops[0].start_ns == 0
    for before, after in zip(trace.ops, trace.ops[1:]):
        assert after.start_ns == pytest.approx(before.end_ns)
    assert all(o.dispatch_wait_ns == 0 for o in trace.ops)
    # the same work on the device either way
    assert [o.duration_ns for o in trace.ops] == [o.duration_ns for o in host.ops]
    assert trace.device_ns == pytest.approx(host.device_ns)
