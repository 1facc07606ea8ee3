"""lower-collectives: each collective's algorithm on the system's links, its steps and the bytes
each device and the busiest link move, which the simulator times."""

from tilescope.compiler.ir.meta import LINKS
from tilescope.compiler.targets.catalog import load_target

from .golden import printed, through
from .test_partition import UNANNOTATED_MLP


def _attributes(graph) -> str:
    """The all_reduce's attributes and types: the line that closes its printed op."""
    return printed(graph, "down.all_reduce").splitlines()[-1]


GOLDEN_LINE_OF_TWO = r"""    }) {algorithm = "line", axes = ["model"], bytes_per_device = 4096 : i64, grid = array<i64: 8, 8>, group = 2 : i64, link_bytes = 4096 : i64, program = "data_movement", reduce = "sum", steps = 2 : i64, ts.sharding = ["[{}, {}]"], ts.from = ["down"]} : (tensor<32x64xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>>) -> tensor<32x64xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>> loc("down.all_reduce")"""


def test_a_line_of_two_devices_all_reduces_in_two_steps():
    """A reduce-scatter and an all-gather of one step each: 2 x 1/2 of the 4 KiB of partial sums
    per device, all of it across the one link, each way."""
    given, graph = through(UNANNOTATED_MLP, load_target("wormhole_n300"), "lower-collectives")
    assert "algorithm" not in given.op("down.all_reduce").attrs
    assert _attributes(graph) == GOLDEN_LINE_OF_TWO
    assert graph.op("down.all_reduce").meta[LINKS]  # what the simulator times


GOLDEN_RING_OF_EIGHT = r"""    }) {algorithm = "ring", axes = ["model"], bytes_per_device = 7168 : i64, grid = array<i64: 8, 8>, group = 8 : i64, link_bytes = 3584 : i64, program = "data_movement", reduce = "sum", steps = 14 : i64, ts.sharding = ["[{}, {}]"], ts.from = ["down"]} : (tensor<32x64xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>>) -> tensor<32x64xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>> loc("down.all_reduce")"""


def test_a_ring_of_eight_all_reduces_in_fourteen_steps():
    """A reduce-scatter and an all-gather of 7 steps each, on two counter-rotating rings with half
    the data each: 2 x 7/8 of 4 KiB per device, half of that across a link in one direction."""
    _, graph = through(UNANNOTATED_MLP, load_target("t3k"), "lower-collectives")
    assert _attributes(graph) == GOLDEN_RING_OF_EIGHT
