"""Physics the simulator must obey on every built-in target."""

from __future__ import annotations

import pytest

from tilescope.compiler.ir.meta import KERNEL
from tilescope.compiler.frontend.mlir_import import import_mlir
from tilescope.compiler.frontend.model_refs import load_model
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.sim.records import TICKS_PER_NS
from tilescope.compiler.sim.simulator import simulate
from tilescope.compiler.targets.catalog import builtin_names, load_target
from tilescope.overrides import parse_item

TARGETS = builtin_names()
# Large enough to be compute-bound on the whole grid of every target: 2*N^3 FLOPs over ~6*N^2
# bytes is N/6 FLOP/B, above every ridge point (Corsair's is 0.6 PFLOPS / 400 GB/s = 1500).
BIG = "zoo:matmul:16384x16384x16384"


def _op(ref_or_text: str, target_name: str, *items: str):
    target = load_target(target_name)
    model = import_mlir(ref_or_text, "t.mlir") if ref_or_text.lstrip().startswith("func") else load_model(ref_or_text)
    compilation = compile_model(model, target, CompileOptions([parse_item(i) for i in items]))
    assert all(o.status != "rejected" for o in compilation.override_outcomes), compilation.override_outcomes
    return simulate(compilation.kernel, target, "trace")


@pytest.mark.parametrize("target", TARGETS)
def test_full_grid_is_nearly_cores_times_faster_than_one_core(target):
    cores = load_target(target).cores
    full = _op(BIG, target).ops[0]
    one = _op(BIG, target, "matmul=1x1").ops[0]
    # compute-bound; without multicast (Corsair) DRAM is busy most of the time too: balanced
    assert full.bound in ("compute", "balanced") and one.bound == "compute"
    speedup = one.duration_ns / full.duration_ns
    assert 0.7 * cores <= speedup <= 1.01 * cores, speedup


MEMORY_BOUND = """
func.func @forward(%x: tensor<1024x1024xbf16> {ttir.name = "x"}) -> tensor<1024x1024xbf16> {
  %0 = "ttir.relu"(%x) : (tensor<1024x1024xbf16>) -> tensor<1024x1024xbf16> loc("first")
  %1 = "ttir.relu"(%0) : (tensor<1024x1024xbf16>) -> tensor<1024x1024xbf16> loc("second")
  return %1 : tensor<1024x1024xbf16>
}
"""


# on a system of several devices the element-wise pair is split by its batch: each device's piece
# takes other grids, so the law is checked on the devices themselves
@pytest.mark.parametrize("target", [t for t in TARGETS if load_target(t).system.devices == 1])
def test_a_memory_bound_op_gets_faster_when_its_tensors_move_from_dram_to_l1(target):
    # both ops on the largest grid whose blocks divide the 1024x1024 tensor; only the memory changes
    rows, cols = load_target(target).grid
    tiles = 1024 // load_target(target).tile[0]
    grid = "x".join(str(max(d for d in range(1, n + 1) if tiles % d == 0)) for n in (rows, cols))
    base = {o.name: o for o in _op(MEMORY_BOUND, target, f"first={grid}", f"second={grid}").ops}
    tuned = {o.name: o for o in _op(MEMORY_BOUND, target, f"first={grid}:l1:block_sharded", f"second={grid}").ops}
    assert base["second"].bound == "dram"
    assert tuned["first"].duration_ns < base["first"].duration_ns  # writes to its own L1
    assert tuned["second"].duration_ns < base["second"].duration_ns  # reads from it


def _matmul(result):
    """The matmul's timing (operand conversions run before it)."""
    return next(op for op in result.ops if op.name == "matmul")


def _in(dtype: str, fidelity: str) -> tuple[str, ...]:
    """The matmul at `fidelity` with its operands and result in `dtype` (none: the model's own)."""
    if not dtype:
        return (f"matmul=fidelity#{fidelity}",)
    return (f"matmul=fidelity#{fidelity}:{dtype}", f"matmul=operand#0:{dtype}", f"matmul=operand#1:{dtype}")


# MTIA and Corsair have no math fidelity setting: an override of it is refused (test_layout)
@pytest.mark.parametrize("target", [t for t in TARGETS if load_target(t).fidelities])
def test_hifi4_costs_its_passes_where_the_unpacker_keeps_up(target):
    # bfp4 tiles are small enough for the unpacker to feed even LoFi; a target without block
    # formats computes in its own dtype, and without an unpacker cost the passes alone count
    dtype = "bfp4" if "bfp4" in load_target(target).matrix.flops_per_cycle else ""
    lofi = _matmul(_op(BIG, target, *_in(dtype, "lofi")))
    hifi4 = _matmul(_op(BIG, target, *_in(dtype, "hifi4")))
    passes = load_target(target).matrix.fidelity_passes
    expected = passes["hifi4"] / passes["lofi"]
    assert hifi4.duration_ns / lofi.duration_ns == pytest.approx(expected, rel=0.15)


@pytest.mark.parametrize("target", ["wormhole_n150", "blackhole_p150"])
def test_at_lofi_bf16_waits_for_the_unpacker_and_block_formats_do_not(target):
    # the chip's pattern: bf16 at LoFi gains far less than 4x over HiFi4, bfp4 at LoFi nearly 4x
    bf16 = {f: _matmul(_op(BIG, target, *_in("bf16", f))).duration_ns for f in ("lofi", "hifi4")}
    bfp4 = _matmul(_op(BIG, target, *_in("bfp4", "lofi"))).duration_ns
    assert 1.2 < bf16["hifi4"] / bf16["lofi"] < 2.5
    assert bfp4 < 0.7 * bf16["lofi"]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    "ref", ["zoo:bert-base?layers=1&seq=128", "zoo:resnet50?batch=1", "zoo:llama-3.2-1b?mode=decode&layers=1"]
)
def test_no_op_beats_its_roofline(target, ref):
    sim = _op(ref, target)
    assert sim.ops
    for o in sim.ops:
        assert o.duration_ns >= o.roofline_ns * (1 - 1e-9), (o.name, o.duration_ns, o.roofline_ns)


def test_without_multicast_every_core_fetches_its_own_operands():
    target = load_target("corsair")
    assert target.noc_multicast is False
    kernel = compile_model(load_model("zoo:matmul:2048x2048x2048"), target).kernel.op("matmul").meta[KERNEL]
    assert kernel.program == "matmul_2d"
    assert all(t.path != "mcast" for g in kernel.groups for t in g.reads)
    # so DRAM serves each A row block once per grid column and each B block once per grid row
    dram = sum(t.bytes * len(g.cores) for g in kernel.groups for t in g.reads if t.path == "dram")
    a_bytes = b_bytes = 2048 * 2048 * 2  # stored as bf16; the engine computes it as mxint16
    assert dram == pytest.approx(a_bytes * target.grid[1] + b_bytes * target.grid[0], rel=0.01)


@pytest.mark.parametrize("dispatch", ["host", "trace"])
def test_every_time_is_whole_ticks_so_ops_after_a_change_shift_exactly(dispatch):
    """Each time is a whole number of the clock's ticks, so sums are exact: a change in the middle
    of a model moves every op after it by one shift, to the last bit (what perfdb's pages share)."""
    target = load_target("wormhole_n150")
    model = load_model("zoo:bert-base?layers=2")
    base = compile_model(model, target, CompileOptions())
    item = parse_item("encoder.layer.0.output.dense.matmul=l1:interleaved")
    changed = compile_model(model, target, CompileOptions((item,)), since=base)
    runs = [simulate(c.kernel, target, dispatch) for c in (base, changed)]
    for sim in runs:
        times = [t for o in sim.ops for t in (o.start_ns, o.duration_ns)]
        times += [t for zone in sim.zones for t in (zone.start_ns, zone.end_ns)]
        assert all((t * TICKS_PER_NS).is_integer() for t in times)
    before = {o.name: o for o in runs[0].ops}
    changed_at = next(i for i, o in enumerate(runs[1].ops) if o.name == item.op)
    later = [o for o in runs[1].ops[changed_at + 1 :] if o.name in before]
    shifts = {o.start_ns - before[o.name].start_ns for o in later}
    assert len(later) > 10 and len(shifts) == 1 and shifts != {0.0}
