"""Random override sets on real models: the compiler applies each override or says why not, never
crashes, and never produces a layout that overflows L1."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tilescope.compiler.ir.meta import DIAGNOSTICS, L1_BYTES
from tilescope.compiler.ir.graph import MEMORY_LAYOUTS, TENSOR_LAYOUTS
from tilescope.compiler.frontend.model_refs import load_model
from tilescope.compiler.pipeline.op_override import OpOverride
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.sim.simulator import simulate
from tilescope.compiler.targets.catalog import load_target

MODELS = {name: load_model(name) for name in ("zoo:mlp?layers=1", "zoo:bert-base?layers=1&seq=128&batch=1")}
TARGETS = {name: load_target(name) for name in ("wormhole_n150", "mtia_v1", "corsair")}


@st.composite
def override_sets(draw):
    model_name = draw(st.sampled_from(sorted(MODELS)))
    target_name = draw(st.sampled_from(sorted(TARGETS)))
    names = [op.name for op in MODELS[model_name].graph.ops] + ["no_such_op"]
    chosen = draw(st.lists(st.sampled_from(names), unique=True, max_size=8))
    items = [
        OpOverride(
            name,
            grid=draw(st.none() | st.tuples(st.integers(1, 14), st.integers(1, 14))),
            memory=draw(st.none() | st.sampled_from(["dram", "l1", "lls", "system"])),
            memory_layout=draw(st.none() | st.sampled_from(MEMORY_LAYOUTS)),
            layout=draw(st.none() | st.sampled_from(TENSOR_LAYOUTS)),
            dtype=draw(st.none() | st.sampled_from(["f32", "bf16", "bfp8", "bfp4", "mxint8"])),
            tile=draw(st.none() | st.sampled_from([(1, 32), (8, 32), (16, 16), (3, 32)])),
            spec=name,
        )
        for name in chosen
    ]
    # and a few operand layouts: weights or activations in L1, resharded, or another dtype
    for name in draw(st.lists(st.sampled_from(names), unique=True, max_size=3)):
        items.append(
            OpOverride(
                name,
                operand=draw(st.integers(0, 2)),
                grid=draw(st.none() | st.tuples(st.integers(1, 8), st.integers(1, 8))),
                memory=draw(st.sampled_from(["dram", "l1", "lls"])),
                memory_layout=draw(st.none() | st.sampled_from(MEMORY_LAYOUTS)),
                dtype=draw(st.none() | st.sampled_from(["bf16", "bfp8"])),
                spec=f"{name} operand",
            )
        )
    policy = draw(st.sampled_from(["dram-interleaved", "greedy-l1"]))
    return model_name, target_name, items, policy


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(override_sets())
def test_every_override_is_applied_or_explained_and_nothing_overflows(case):
    model_name, target_name, items, policy = case
    target = TARGETS[target_name]
    compilation = compile_model(MODELS[model_name], target, CompileOptions(items, policy))
    outcomes = compilation.override_outcomes
    assert [o.op for o in outcomes] == [o.op for o in items]  # none silently disappears
    for outcome in outcomes:
        assert outcome.status in ("applied", "adjusted", "rejected")
        assert outcome.reason or outcome.status == "applied"
    capacity = target.core_memory.capacity_bytes
    for op in compilation.kernel.ops:
        assert op.meta[L1_BYTES] <= capacity, (op.name, op.meta[L1_BYTES])
    assert not [d for d in compilation.levels["kernel"].meta.get(DIAGNOSTICS, []) if "overflow" in d]
    sim = simulate(compilation.kernel, target, "trace")
    assert all(o.duration_ns >= o.roofline_ns * (1 - 1e-9) for o in sim.ops)


@pytest.mark.parametrize("target_name", ["wormhole_n150", "blackhole_p150"])
def test_a_smaller_dtype_speeds_up_a_memory_bound_op(target_name):
    target = load_target(target_name)
    model = load_model("zoo:mlp?layers=1")

    def fc2(*items):
        c = compile_model(model, target, CompileOptions(items))
        return next(o for o in simulate(c.kernel, target, "trace").ops if o.name == "mlp.layer.0.fc2.matmul")

    base = fc2()
    smaller = fc2(OpOverride("mlp.layer.0.fc1.matmul", dtype="bfp8", spec="x"))  # fc2 reads it at 1.06 B/element
    assert smaller.bytes["dram"] < base.bytes["dram"]
    assert smaller.duration_ns < base.duration_ns


def test_a_block_format_the_engine_lacks_is_rejected():
    c = compile_model(
        load_model("zoo:mlp?layers=1"),
        load_target("wormhole_n150"),
        CompileOptions([OpOverride("mlp.layer.0.fc1.matmul", dtype="mxint8", spec="x")]),
    )
    (outcome,) = c.override_outcomes
    assert outcome.status == "rejected"
    assert (
        outcome.reason == "wormhole_n150 cannot compute in mxint8 (its matrix engine takes bf16, bfp4, bfp8, f16, f32)"
    )
