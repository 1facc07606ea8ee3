"""A program that places its ops on devices of their own (IREE's affinities), on a system of two:
each device runs its ops on its own clock, a transfer goes over the link between them, and the
timeline has a row per device and per link direction. IREE's two-device example, compiled by the
wheel's iree-compile."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pytest
from iree.compiler import tools

from tilescope.compiler.frontend.mlir_import import import_mlir
from tilescope.compiler.ir.meta import DEVICES
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.sim.simulator import simulate
from tilescope.compiler.targets.catalog import load_target

EXAMPLE = Path(__file__).parents[1] / "frontend" / "iree_inputs" / "two_devices.mlir"
TWO_SOCKETS = load_target("x86_avx512_2p")


@lru_cache(maxsize=None)
def program(*stage: str):
    text = EXAMPLE.read_text()
    return import_mlir(tools.compile_str(text, extra_args=list(stage)).decode() if stage else text, "two.mlir")


def test_each_op_is_placed_where_its_operands_are_and_a_transfer_moves_them():
    graph = program().graph
    assert graph.meta[DEVICES] == ("device_a", "device_b")
    placed = {op.name: (op.attrs["device"], op.attrs.get("from_device")) for op in graph.ops}
    assert placed["matmul_0"] == ("device_a", None) and placed["matmul_1"] == ("device_b", None)
    assert placed["addf_0"] == ("device_b", None)
    assert placed["tensor.transfer_0"] == ("device_b", "device_a")
    assert placed["tensor.transfer_3"] == ("device_a", "device_b")
    # the second matmul's accumulator (a fill of nothing placed) goes where it is read
    assert placed["fill_1"] == ("device_b", None)


def test_on_two_sockets_each_device_runs_its_ops_and_the_transfers_take_the_link():
    compilation = compile_model(program("--compile-to=global-optimization"), TWO_SOCKETS)
    sim = simulate(compilation.kernel, TWO_SOCKETS)
    ops = {op.name: op for op in sim.ops}
    transfer = ops["tensor.transfer_0"]  # the first matmul's 256x256 f32 result, to the second device
    link = TWO_SOCKETS.system
    assert transfer.bound == "link" and transfer.bytes == {"link": 256 * 256 * 4}
    assert transfer.duration_ns == pytest.approx(link.link_latency_ns + 256 * 256 * 4 / link.bytes_per_s * 1e9)
    assert transfer.start_ns >= ops["matmul_0"].end_ns  # it sends what the first device made
    assert ops["matmul_1"].start_ns >= transfer.end_ns
    # each op's record says its device (a transfer's, the one it sends from)
    assert (ops["matmul_0"].device, ops["matmul_1"].device, transfer.device) == (0, 1, 0)
    tracks = set(sim.zones.track_names())
    assert {"device 0", "device 1", "link device 0,device 1", "link device 1,device 0"} <= tracks
    # each matmul's zone on its own device's row
    rows: dict[str, set[str]] = {"matmul_0": set(), "matmul_1": set()}
    for zone in sim.zones:
        if zone.name in rows:
            rows[zone.name].add(zone.track)
    assert rows == {"matmul_0": {"device 0"}, "matmul_1": {"device 1"}}


def test_each_device_materializes_its_own_matmul_into_its_tiles():
    compilation = compile_model(program("--iree-opt-data-tiling", "--compile-to=dispatch-creation"), TWO_SOCKETS)
    layout = compilation.levels["layout"]
    mmt4ds = {op.name: (op.attrs["device"], op.attrs["inner_tiles"]) for op in layout.ops if op.kind == "mmt4d"}
    assert mmt4ds == {
        "dispatch_0.matmul_0": ("device_a", "array<i64: 16, 16, 1>"),
        "dispatch_1.matmul_0": ("device_b", "array<i64: 16, 16, 1>"),
    }


def test_on_one_device_the_program_runs_there_and_says_so():
    one = load_target("x86_avx512")
    compilation = compile_model(program("--compile-to=global-optimization"), one)
    assert "the program places its ops on 2 devices: they run on x86_avx512's one" in compilation.warnings
    sim = simulate(compilation.kernel, one)
    assert not any(op.bound == "link" for op in sim.ops)
