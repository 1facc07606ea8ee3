"""The op record: what the simulator gives per op and perfdb stores as it is."""

from __future__ import annotations

import dataclasses

import pytest

from tilescope.compiler.sim.records import OpTiming, TensorUse, tensor_uses
from tilescope.compiler.sim.simulator import simulate


def _timing(**extra) -> OpTiming:
    return OpTiming(
        name="mm",
        kind="matmul",
        start_ns=0.0,
        duration_ns=10.0,
        flops=20,
        bytes={"dram": 64.0},
        bound="dram",
        memory="l1",
        grid="2x2",
        cores=4,
        roofline_ns=5.0,
        **extra,
    )


def test_a_record_is_frozen_and_replace_makes_what_dataclasses_replace_makes():
    timing = _timing(tensors=(TensorUse("in0", "a", (32, 32), "bf16", "dram", "interleaved", "tile", "32x32", "1x1"),))
    with pytest.raises(dataclasses.FrozenInstanceError):
        timing.start_ns = 1.0
    changes = {"start_ns": 7.0, "why": "placed", "dispatch_wait_ns": 2.0}
    assert timing.replace(**changes) == dataclasses.replace(timing, **changes)
    assert timing.start_ns == 0.0 and timing.replace(**changes).end_ns == 17.0
    with pytest.raises(TypeError, match="no field 'start'"):
        timing.replace(start=1.0)


def test_a_tensor_use_is_stored_as_a_dict_and_read_back():
    use = TensorUse("out0", "y", (1, 64), "bf16", "l1", "height_sharded", "row_major", "", "8x1")
    stored = use.as_dict()
    assert list(stored) == ["role", "name", "shape", "dtype", "memory", "memory_layout", "layout", "tile", "grid"]
    assert TensorUse.from_dict({**stored, "shape": list(use.shape)}) == use
    # runs stored before tiles and grids were kept have neither
    older = {k: v for k, v in stored.items() if k not in ("tile", "grid")}
    assert TensorUse.from_dict(older) == use._replace(tile="", grid="")


def test_each_op_lists_its_operands_then_its_results_as_the_kernel_level_places_them(tiny_path, build):
    compilation, sim = build(tiny_path)
    kernel = compilation.kernel
    for timing in sim.ops:
        op = kernel.op(timing.name)
        assert timing.tensors == tensor_uses(kernel, op)
        roles = [t.role for t in timing.tensors]
        assert roles == [f"in{i}" for i in range(len(op.inputs))] + [f"out{i}" for i in range(len(op.outputs))]
        for use in timing.tensors:
            layout = kernel.tensors[use.name].layout
            assert (use.memory, use.grid) == (layout.memory, f"{layout.grid[0]}x{layout.grid[1]}")
    assert simulate(kernel, compilation.target).ops == sim.ops  # the same records again
