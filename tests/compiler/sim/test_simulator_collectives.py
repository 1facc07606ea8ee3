"""Collectives on the links, beside the cores, on one clock with the devices' ops."""

from __future__ import annotations

import pytest

from tilescope.compiler.ir.meta import LINKS
from tilescope.compiler.frontend.mlir_import import import_mlir
from tilescope.compiler.frontend.model_refs import load_model
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.sim.simulator import simulate
from tilescope.compiler.targets.catalog import load_target

# a row-parallel matmul (its K split over 8 devices: partial sums) beside two element-wise ops
# that do not need it, then an add that needs both
BRANCHES = """module {
  sdy.mesh @mesh = <["model"=8]>
  func.func @main(%x: tensor<256x4096xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>},
                  %w: tensor<4096x1024xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{"model"}, {}]>},
                  %y: tensor<256x1024xbf16>) -> tensor<256x1024xbf16> {
    %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<256x4096xbf16>, tensor<4096x1024xbf16>) -> tensor<256x1024xbf16>
    %1 = stablehlo.exponential %y : tensor<256x1024xbf16>
    %2 = stablehlo.tanh %1 : tensor<256x1024xbf16>
    %3 = stablehlo.add %0, %2 : tensor<256x1024xbf16>
    return %3 : tensor<256x1024xbf16>
  }
}
"""


@pytest.fixture(scope="module")
def t3k():
    return load_target("t3k")


def _by_kind(sim):
    return {o.kind: o for o in sim.ops}


def test_a_collective_overlaps_compute_that_does_not_need_it(t3k):
    compilation = compile_model(import_mlir(BRANCHES, "branches.mlir"), t3k)
    sim = simulate(compilation.kernel, t3k, "trace")
    ops = _by_kind(sim)
    reduce, matmul, exp, tanh, add = (ops[k] for k in ("all_reduce", "matmul", "exp", "tanh", "add"))
    assert reduce.start_ns == pytest.approx(matmul.end_ns)  # as soon as its operand is written
    assert exp.start_ns < reduce.end_ns and reduce.start_ns < tanh.end_ns  # the two run at once
    assert add.start_ns >= max(reduce.end_ns, tanh.end_ns)  # the add waits for both
    assert sim.total_ns == pytest.approx(add.end_ns)
    # the devices' rows hold the compute, the links' row the collective
    rows = {z.track for z in sim.zones if z.op == reduce.name}
    assert rows == {"link model"}
    assert {z.track for z in sim.zones if z.op == add.name} >= {f"device {d}" for d in range(8)}
    # a search's trial takes the times alone: the same, without the rows
    times = simulate(compilation.kernel, t3k, "trace", timeline=False)
    assert times.ops == sim.ops and times.total_ns == sim.total_ns
    assert not list(times.zones)


def test_a_collective_waits_for_its_operand_through_a_view(t3k):
    compilation = compile_model(load_model("zoo:llama-3.2-1b?layers=1&devices=8"), t3k)
    sim = simulate(compilation.kernel, t3k, "host")
    ops = {o.name: o for o in sim.ops}
    gather = next(o for o in sim.ops if o.kind == "all_gather")  # of the logits, after a reshape (a view)
    assert gather.start_ns == pytest.approx(ops["lm_head.matmul"].end_ns)
    assert gather.bound == "link" and "all_gather" in gather.why and "ring" in gather.why


def test_one_device_runs_as_before(wormhole):
    compilation = compile_model(load_model("zoo:llama-3.2-1b?layers=1"), wormhole)
    sim = simulate(compilation.kernel, wormhole, "host")
    assert not any(z.track.startswith(("device ", "link ")) for z in sim.zones)
    # one op at a time, each after the previous one and the host
    for before, after in zip(sim.ops, sim.ops[1:]):
        assert after.start_ns >= before.end_ns


def test_the_kernel_level_shows_each_collective_on_the_links(t3k):
    compilation = compile_model(load_model("zoo:llama-3.2-1b?layers=1&devices=8"), t3k)
    reduce = next(op for op in compilation.kernel.ops if op.kind == "all_reduce")
    size = 128 * 2048 * 2  # the bf16 activation each device holds a partial sum of
    cost = t3k.system.collective("all_reduce", 8, size)
    assert (reduce.attrs["algorithm"], reduce.attrs["steps"]) == ("ring", 14)
    assert reduce.attrs["bytes_per_device"] == round(2 * 7 / 8 * size) == round(cost.bytes_per_device)
    plan = reduce.meta[LINKS]  # what the simulator times: the link model's plan, by name
    assert (plan.group, plan.tensor_bytes, plan.cost) == (8, size, cost) and len(plan.axes) == 1
    printed = compilation.mlir("kernel").splitlines()
    closing = next(line for line in printed if f'loc("{reduce.name}")' in line)  # the op's last line
    assert 'algorithm = "ring"' in closing and "steps = 14" in closing
