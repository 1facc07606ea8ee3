"""The record of one op in a run: when it ran, what it moved, what bounds it and why. The simulator
makes one per op; perfdb stores it as it is (a row of op_records, perfdb/schema.py), and an imported
measurement is the same record at level "measured".

An op's bytes are counted by path: a memory the target declares, by its name (dram, l1, lls, ...),
or a path between memories: NOC (core to core), MCAST (one core to many) or LINK (between devices).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, NamedTuple

from tilescope.compiler.ir.core_work import MCAST, NOC

if TYPE_CHECKING:
    from tilescope.compiler.ir.graph import Graph, Op

NS = 1e9
# the clock's tick, 2**-10 ns (about a picosecond): every time the simulator adds to a clock is a
# whole number of ticks, so sums and differences of times are exact in float64 below 2**43 ns
# (2.4 hours). Shifted by a change before it, a stretch of a run then holds exactly its parent's
# times plus the shift, which is what lets perfdb store it as the parent's (perfdb.blocks)
TICKS_PER_NS = 1024.0
LINK = "link"
PATHS = (NOC, MCAST, LINK)  # the paths that are no memory of the target


def ticks(ns: float) -> float:
    """`ns` rounded to the clock's tick."""
    return round(ns * TICKS_PER_NS) / TICKS_PER_NS


class TensorUse(NamedTuple):
    """An operand or result of an op, as the ops perf report lists it. A tensor with no layout yet
    has "" for where and how it is stored. (A named tuple: every operand of every op makes one, and
    it builds several times faster than a frozen dataclass.)"""

    role: str  # in0, in1, ... for operands, out0, ... for results
    name: str
    shape: tuple[int, ...]
    dtype: str
    memory: str  # the memory it lives in, by the name the target declares (dram, l1, lls, ...)
    memory_layout: str  # one of compiler.ir.graph.MEMORY_LAYOUTS
    layout: str  # one of compiler.ir.graph.TENSOR_LAYOUTS
    tile: str  # "RxC" of its tiles; "" when row-major
    grid: str  # "RxC": the cores holding its shards (interleaved: the producing op's)

    def as_dict(self) -> dict:
        """As perfdb keeps it (JSON)."""
        return self._asdict()

    @classmethod
    def from_dict(cls, stored: Mapping) -> TensorUse:
        """As perfdb kept it; runs stored before tiles and grids were kept have neither."""
        return cls(
            stored["role"],
            stored["name"],
            tuple(stored["shape"]),
            stored["dtype"],
            stored["memory"],
            stored["memory_layout"],
            stored["layout"],
            stored.get("tile", ""),
            stored.get("grid", ""),
        )


def tensor_uses(graph: Graph, op: Op) -> tuple[TensorUse, ...]:
    """The op's operands, then its results."""
    uses = []
    for role, names in (("in", op.inputs), ("out", op.outputs)):
        for i, name in enumerate(names):
            tensor = graph.tensors[name]
            layout = tensor.layout
            if layout is None:
                uses.append(TensorUse(f"{role}{i}", name, tuple(tensor.shape), tensor.dtype, "", "", "", "", ""))
                continue
            tile = f"{layout.tile[0]}x{layout.tile[1]}" if layout.layout == "tile" else ""
            grid = f"{layout.grid[0]}x{layout.grid[1]}"
            uses.append(
                TensorUse(
                    f"{role}{i}",
                    name,
                    tuple(tensor.shape),
                    layout.dtype,
                    layout.memory,
                    layout.memory_layout,
                    layout.layout,
                    tile,
                    grid,
                )
            )
    return tuple(uses)


@dataclass(frozen=True, kw_only=True, slots=True)
class OpTiming:
    """One op of a run."""

    name: str  # the stable op name: the key of overrides and diffs
    kind: str  # its kind in compiler.ir.opset's vocabulary
    start_ns: float  # on the run's clock; a load-time op's on the load clock
    duration_ns: float
    flops: int  # useful FLOPs (compiler.sim.flops)
    bytes: dict[str, float]  # moved, by path (see the module's docstring)
    # what limits it: compute, balanced (compute and a memory at once), a path (noc for NOC and
    # MCAST), dispatch (the host), none (no work) or measured
    bound: str
    why: str = ""  # the bound in a sentence, with the figures behind it
    memory: str  # where its output lives
    grid: str  # "RxC" the op runs on
    cores: int
    roofline_ns: float  # the larger of compute_ns and bandwidth_ns: no schedule runs faster
    pct_peak: float = 0.0  # achieved FLOP/s over the engine's peak at the op's fidelity, in %
    dispatch_wait_ns: float = 0.0  # the device sat idle this long waiting for the host to issue it
    level: str = "kernel"  # or measured: an imported ops perf report's
    fidelity: str = ""  # math fidelity of matrix ops
    tensors: tuple[TensorUse, ...] = ()  # operands, then results
    compute_ns: float = 0.0  # the FLOPs at the engine's peak: the compute side of the roofline
    bandwidth_ns: float = 0.0  # the busiest path's bytes at its peak bandwidth: the memory side
    # the device it ran on: a measured run's, or a simulated program's that places each op on a
    # device (a transfer's: the one it sends from); else 0 (a simulated run's ops are one device's)
    device: int = 0
    config: str = ""  # the program config it ran with, as a measured report names it
    op_code: str = ""  # the op code a measured report names (MatmulDeviceOperation); "" for a simulated op
    # the share of duration_ns about two measurements in three fall within: the held-out error of
    # its kind on its target (Target.error_bands); None when measured, or the target knows none
    error_band: float | None = None
    # the line of the model's own source that made it (a PyTorch model's Python: "model.py:57"),
    # and that line's code; "" where the import knew none
    code_line: str = ""
    code: str = ""

    @property
    def end_ns(self) -> float:
        return self.start_ns + self.duration_ns

    @property
    def source(self) -> str:
        """Where the model made it: the file's name and the line (`model.py:57`); "" where unknown."""
        return self.code_line.rsplit("/", 1)[-1]

    @property
    def achieved_flops(self) -> float:
        return self.flops / (self.duration_ns / NS) if self.duration_ns else 0.0

    @property
    def error_ns(self) -> float | None:
        """The band around duration_ns, in ns; None when none is known."""
        return None if self.error_band is None else self.error_band * self.duration_ns

    def bandwidth(self, path: str) -> float:
        """Bytes/s the op moved on a path."""
        return self.bytes.get(path, 0.0) / (self.duration_ns / NS) if self.duration_ns else 0.0

    def replace(self, **changes) -> OpTiming:
        """dataclasses.replace(self, **changes) at a third of its cost: the simulator places every
        op by one."""
        if not changes.keys() <= _FIELD_SET:
            raise TypeError(f"OpTiming has no field {sorted(changes.keys() - _FIELD_SET)[0]!r}")
        new = object.__new__(OpTiming)
        for name in _OP_FIELDS:
            _set(new, name, changes[name] if name in changes else getattr(self, name))
        return new


_OP_FIELDS = tuple(f.name for f in fields(OpTiming))
_FIELD_SET = frozenset(_OP_FIELDS)
_set = object.__setattr__  # as a frozen dataclass's own __init__ sets its fields
