from tilescope.compiler.pipeline.op_override import APPLIED, REJECTED, OverrideOutcome
from tilescope.overrides.illegal import Illegal, family, reason_shape


def test_reasons_said_of_other_ops_and_figures_are_one_shape():
    one = "width_sharded over 8x8 cores needs a shard on each core, more than the result has (96x24 tiles of 32x32)"
    two = "width_sharded over 4x8 cores needs a shard on each core, more than the result has (12x3 tiles of 32x32)"
    assert reason_shape(one) == reason_shape(two)
    assert reason_shape("L1 over-full on core 3,4 by 120 KB at layer.0.fc1.matmul") == reason_shape(
        "L1 over-full on core 0,1 by 2 KB at layer.7.fc2.matmul"
    )
    assert family(one) == "shard does not divide"
    assert family("L1 over-full on core 3,4 by 120 KB") == "L1 overflow"
    assert family("grid 9x8 outside wormhole_n150's 8x8 grid") == "grid limits"
    assert family("something else entirely") == "other"


def test_a_trial_counts_once_by_its_first_rejection():
    illegal = Illegal()
    rejected = OverrideOutcome("mm", "mm=l1:width_sharded", REJECTED, "width_sharded over 8x8 cores needs a shard")
    illegal.add([OverrideOutcome("a", "a=dram", APPLIED), rejected, rejected])
    illegal.add([OverrideOutcome("a", "a=dram", APPLIED)])  # an accepted trial: not counted
    illegal.add([rejected])
    assert illegal.total == 2
    [(name, count, reasons)] = illegal.families()
    assert (name, count, reasons[0].example) == (
        "shard does not divide",
        2,
        "mm=l1:width_sharded: width_sharded over 8x8 cores needs a shard",
    )
    assert illegal.as_dict()[0]["reasons"][0]["trials"] == 2
