"""The memory panel's data: L1 over a run, and what fills the fullest core at the fullest op."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilescope.compiler.ir.meta import KERNEL, L1_BYTES, L1_LIVE_PER_CORE
from tilescope.compiler.analysis.l1_usage import L1Tensor, l1_live_at
from tilescope.compiler.pipeline.compilation import Compilation


@dataclass(frozen=True)
class PeakL1:
    op: str
    core: tuple[int, int] | None  # None: a measured op's, on each core of its grid alike
    bytes: int
    tensors: tuple[L1Tensor, ...]  # by address
    cbs: list[tuple[str, int, int]]  # the op's circular buffers: name, bytes, pages


@dataclass(frozen=True)
class MemoryView:
    envelope: list[tuple[float, float]]  # (t_ns, L1 bytes in use on the fullest core)
    capacity: int  # bytes of one core's L1
    peak: PeakL1 | None  # None when nothing is placed in L1


def memory_view(compilation: Compilation, envelope: list[tuple[float, float]]) -> MemoryView:
    """L1 over the run (the fullest core at each op, `envelope`), its capacity, and what fills
    the fullest core at the fullest op: the tensors placed there and the op's circular buffers."""
    target, kernel = compilation.target, compilation.kernel
    capacity = target.core_memory.capacity_bytes
    placed = [op for op in kernel.ops if op.meta.get(L1_BYTES)]
    if not placed:
        return MemoryView(envelope, capacity, None)
    op = max(placed, key=lambda o: o.meta[L1_BYTES])
    per_core = op.meta.get(L1_LIVE_PER_CORE)
    core = (
        tuple(int(i) for i in np.unravel_index(int(per_core.argmax()), per_core.shape))
        if per_core is not None
        else (0, 0)
    )
    work = op.meta.get(KERNEL)
    group = next((g for g in work.groups if core in g.cores), work.groups[0]) if work and work.groups else None
    cbs = [(f"{cb.name} ({cb.tensor})", cb.bytes, cb.pages) for cb in group.cbs] if group else []
    peak = PeakL1(op.name, core, op.meta[L1_BYTES], l1_live_at(kernel, target, op.name, core), cbs)
    return MemoryView(envelope, capacity, peak)
