"""The memory panel's data for a measured run: L1 over the run as its counters recorded it, and what
fills one core at the op that holds the most, as the report it was read from says (its tensors in
L1, their shards where the shard specs say; a report names no circular buffers)."""

from __future__ import annotations

from collections.abc import Sequence

from tilescope.compiler.analysis.l1_usage import L1Tensor
from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.profiles.naming import op_names
from tilescope.compiler.profiles.op_work import l1_tensors
from tilescope.compiler.profiles.profile_file import read_profile
from tilescope.compiler.targets.chip import Target

from tilescope.app.workbench.memory_view import MemoryView, PeakL1


def measured_memory_view(
    report_text: str, source: str, target: Target, envelope: Sequence[tuple[float, float]]
) -> MemoryView:
    """L1 over a measured run (`envelope`: the fullest device's bytes per core at each op) on
    `target`, and its fullest op's tensors, from the report the run was read from."""
    capacity = target.core_memory.capacity_bytes
    try:
        report = read_profile(report_text, source)
    except TilescopeError:  # stored by an older reader that took it: the chart alone
        return MemoryView(list(envelope), capacity, None)
    held = [(name, l1_tensors(op, target)) for name, op in zip(op_names(report), report.ops)]
    name, tensors = max(held, key=lambda found: sum(b for _, _, b in found[1]), default=("", []))
    if not tensors:
        return MemoryView(list(envelope), capacity, None)
    shown = tuple(
        L1Tensor(f"{role}: {'x'.join(map(str, t.shape))} {t.dtype} {t.memory_layout}", b, None)
        for role, t, b in tensors
    )
    return MemoryView(list(envelope), capacity, PeakL1(name, None, round(sum(b for _, _, b in tensors)), shown, []))
