"""What a simulation gives: each op's record, the timeline, and the costs it worked out, which a
later simulation of the same kernels takes instead of working them out again."""

from __future__ import annotations

from dataclasses import dataclass, field

from tilescope.compiler.ir.core_work import Kernel
from tilescope.compiler.sim.records import OpTiming
from tilescope.compiler.sim.zone_tables import CounterTable, ZoneTable
from tilescope.compiler.targets.chip import Target


@dataclass(frozen=True, slots=True)
class CoreTime:
    """A core group's phases of one op, in seconds from the op's start."""

    read: float
    compute: float
    write: float
    total: float
    terms: dict[str, float]  # seconds per component (compute, each path), for the bound's class


@dataclass(frozen=True, slots=True)
class KnownCost:
    """A kernel's timing at start 0 and its core groups' times. The kernel is kept with it, so its
    id stays its own."""

    kernel: Kernel
    timing: OpTiming
    core_times: tuple[CoreTime, ...]


@dataclass
class KernelCosts:
    """Each kernel's cost on `target`, by the kernel's id, as a simulation worked it out."""

    target: Target
    by_kernel: dict[int, KnownCost] = field(default_factory=dict)


@dataclass(frozen=True)
class SimResult:
    target: str
    dispatch: str
    total_ns: float
    ops: list[OpTiming]
    zones: ZoneTable = field(default_factory=ZoneTable)
    counters: CounterTable = field(default_factory=CounterTable)
    costs: KernelCosts | None = field(default=None, repr=False, compare=False)
    # ops the compiler hoisted into load-time evaluation (const-eval): run once when the model is
    # loaded, before the first step, on a clock of their own; neither in `ops` nor in `total_ns`
    load_ops: list[OpTiming] = field(default_factory=list)

    @property
    def device_ns(self) -> float:
        return sum(o.duration_ns for o in self.ops)

    @property
    def load_ns(self) -> float:
        return self.load_ops[-1].end_ns if self.load_ops else 0.0
