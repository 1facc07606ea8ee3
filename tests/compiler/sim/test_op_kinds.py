"""Per-kind mechanisms of ttnn's kernels, each checked on one op replayed from a report row: what
the kernel skips or repeats, so the prediction moves as the measured time does."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tilescope.compiler.profiles.ops_report import read_ops_report
from tilescope.compiler.profiles.replay import compiled_op, op_timing
from tilescope.compiler.targets.catalog import load_target

from tests.compiler.profiles.replay_reports import op, report_text, shard_config, t

BLACKHOLE = load_target("blackhole_p150")


def _ns(row: dict, kind: str, target=BLACKHOLE) -> float:
    (measured,) = read_ops_report(report_text(row), "r.csv").ops
    built = compiled_op(measured, kind, target)
    assert not isinstance(built, str), built
    return op_timing(built[0], target)[0].duration_ns


def _sdpa(q_len: int, kv_len: int, **attributes) -> dict:
    q, kv = t(1, 8, q_len, 128), t(1, 8, kv_len, 128)
    return op("SDPAOperation", [q, kv, kv], [t(1, 8, q_len, 128)], cores=64, arch="blackhole", **attributes)


def test_causal_attention_skips_the_key_chunks_past_the_diagonal():
    full = _ns(_sdpa(4096, 4096), "scaled_dot_product_attention")
    causal = _ns(_sdpa(4096, 4096, is_causal="true"), "scaled_dot_product_attention")
    # 16 query chunks of 256 read 1..16 key chunks: 8.5 of 16 on average
    assert causal / full == pytest.approx(8.5 / 16, rel=0.1)


def test_a_prompt_after_a_cache_reads_the_cache_whole_and_its_own_keys_causally():
    full = _ns(_sdpa(1024, 4096), "scaled_dot_product_attention")
    causal = _ns(_sdpa(1024, 4096, is_causal="true"), "scaled_dot_product_attention")
    # queries at 3072..4095: their chunks read 13..16 of 16 key chunks
    assert causal / full == pytest.approx(14.5 / 16, rel=0.1)


def test_causal_ring_attention_costs_the_ring_s_mean_device():
    full = _ns(_sdpa(2048, 4096, ring_size="2"), "scaled_dot_product_attention")
    causal = _ns(_sdpa(2048, 4096, ring_size="2", is_causal="true"), "scaled_dot_product_attention")
    # queries at 1024..3071 on average: chunks read 5..12 of 16, 8.5 on average
    assert causal / full == pytest.approx(8.5 / 16, rel=0.1)


def _group_norm(groups: int, channels: int = 64, rows: int = 30720, memory: str = "dram_interleaved", **kw) -> dict:
    x = t(1, 1, rows, channels, memory=memory)
    return op(
        "GroupNorm", [x], [t(1, 1, rows, channels, memory=memory)], arch="blackhole", num_groups=str(groups), **kw
    )


def test_a_group_norm_works_on_each_group_over_the_tiles_it_spans():
    # 64 channels: 16 groups put 8 groups in each tile column, 2 groups one; each group's tiles
    # are read three times, read back and written, one after the other
    many, few = (_ns(_group_norm(g, cores=16), "groupnorm") for g in (16, 2))
    assert many / few == pytest.approx(8, rel=0.2)


def test_a_sharded_group_norm_waits_on_every_core_s_partial_sums_twice_a_group():
    sharded = shard_config("height_sharded", (5, 4), (1536, 64))
    row = _group_norm(16, memory="l1_height_sharded", cores=20, output_mem_config=sharded)
    base = _ns(row, "groupnorm")
    slower = _ns(row, "groupnorm", replace(BLACKHOLE, noc_round_trip_cycles=2 * BLACKHOLE.noc_round_trip_cycles))
    exchanges = 2 * 16 * 20 * BLACKHOLE.noc_round_trip_cycles / BLACKHOLE.clock_hz * 1e9
    assert slower - base == pytest.approx(exchanges, rel=0.05)
