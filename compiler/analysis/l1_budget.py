"""The L1 a kernel sizes its circular buffers in: what the tensors live beside its op leave of a
core's memory. A kernel depends on it only through whether each set of buffers it tries fits, so
the budget keeps the range of budgets over which every answer it gave would be the same: a kernel
made for one budget is the kernel for any budget in that range (split-kernels reuses it for an op
whose L1 live changed within it, as a search's trial changes many ops' by moving one tensor)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from tilescope.compiler.ir.graph import Op
from tilescope.compiler.ir.meta import L1_LIVE
from tilescope.compiler.targets.chip import Target


@dataclass
class L1Budget:
    bytes: float
    low: float = -math.inf  # every answer given holds for budgets in [low, high)
    high: float = math.inf

    @classmethod
    def of(cls, op: Op, target: Target) -> L1Budget:
        return cls(target.core_memory.capacity_bytes - op.meta.get(L1_LIVE, 0.0))

    def fits(self, need: float) -> bool:
        """Whether `need` bytes fit, kept: a yes holds for any budget of `need` or more, a no for
        any budget under `need`."""
        if need <= self.bytes:
            self.low = max(self.low, need)
            return True
        self.high = min(self.high, need)
        return False

    def holds(self, other: float) -> bool:
        """Whether a budget of `other` bytes gives every answer this one gave."""
        return self.low <= other < self.high
