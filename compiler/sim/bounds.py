"""What bounds an op on its cores: its roofline (FLOPs at the grid's peak, bytes at each level's full
bandwidth: simulated time is never below it), the class of what limits its slowest core, and the
sentence that says so with the figures behind it."""

from __future__ import annotations

from tilescope.compiler.ir.core_work import MCAST, NOC, Compute
from tilescope.compiler.sim.records import OpTiming
from tilescope.compiler.sim.result import CoreTime
from tilescope.compiler.targets.chip import Target

# ttnn-visualizer's rule: an op close to two peaks at once (>= 65% of each) is bound by both
BALANCED_SHARE = 0.65
LATENCY = "latency"  # waiting on NoC round trips, one transaction at a time (target noc.round_trip_cycles)


def peak(target: Target, compute: Compute) -> float:
    """FLOP/s (or element ops/s) of the whole grid on the op's engine; 0 for data movement."""
    if compute.engine == "matrix":
        return target.peak_flops(compute.dtype or target.matrix.fallback_dtype, compute.fidelity)
    if compute.engine == "vector":
        return target.vector_ops_per_s
    return 0.0


def roofline_s(target: Target, flops: int, moved: dict[str, float], peak: float) -> tuple[float, float]:
    """(compute, memory) lower bounds: the FLOPs at peak, the busiest path at its bandwidth."""
    bounds = [0.0]
    for path, nbytes in moved.items():
        if path in (NOC, MCAST):
            # every core's links carry data in and out at once: reads and writes overlap
            bandwidth = target.noc_bytes_per_s * target.cores * target.noc_count * 2
        else:
            memory = target.memories[path]
            bandwidth = memory.bytes_per_s * (1 if memory.shared else target.cores)
        bounds.append(nbytes / bandwidth)
    return (flops / peak if peak else 0.0), max(bounds)


def bound_class(slowest: CoreTime) -> str:
    """The class of what limits the slowest core: compute, a memory, the NoC, or two at once."""
    if slowest.total <= 0:
        return "none"
    terms: dict[str, float] = {}
    for path, seconds in slowest.terms.items():
        key = "noc" if path in (NOC, MCAST) else path
        terms[key] = terms.get(key, 0.0) + seconds
    memory = max((s for k, s in terms.items() if k != "compute"), default=0.0)
    if terms["compute"] >= BALANCED_SHARE * slowest.total and memory >= BALANCED_SHARE * slowest.total:
        return "balanced"
    return max(terms, key=terms.get)


def why(target: Target, t: OpTiming, users: dict[str, int]) -> str:
    """The op's bound in a sentence; `users`: how many of its cores share each shared memory."""
    if t.bound == "none":
        return "no work"
    cores = f"{t.cores} core{'s' if t.cores != 1 else ''}"
    if t.bound == "compute":
        head = f"compute-bound on {cores}"
    elif t.bound == "balanced":
        head = f"balanced: compute and memory each above {BALANCED_SHARE:.0%} of the time on {cores}"
    elif t.bound == LATENCY:
        head = (
            f"latency-bound: its cores wait on one NoC round trip ({target.noc_round_trip_cycles:.0f} cycles) per "
            f"row-major stick or tile, more than its {_mb(sum(t.bytes.values()))} take to move"
        )
    elif t.bound == "noc":
        noc = t.bytes.get(NOC, 0.0) + t.bytes.get(MCAST, 0.0)
        head = f"NoC-bound: {_mb(noc)} over one {target.noc_link_bytes_per_cycle} B/cycle link per core"
    else:
        memory = target.memories[t.bound]
        if not memory.shared:
            head = f"{t.bound.upper()}-bound: {_mb(t.bytes.get(t.bound, 0))} from local {t.bound}"
        else:
            sharing = users.get(t.bound, t.cores)
            head = (
                f"{t.bound.upper()}-bound: {_mb(t.bytes.get(t.bound, 0))} at "
                f"{memory.bytes_per_s / 1e9:.0f} GB/s shared by {sharing} core{'s' if sharing != 1 else ''}"
            )
            if memory.channels > 1:
                head += f" over {memory.channels} channels"
    return f"{head}; compute {t.pct_peak:.0f}% of peak; {t.duration_ns / max(t.roofline_ns, 1e-9):.1f}x roofline"


def _mb(nbytes: float) -> str:
    if nbytes >= 1e6:
        return f"{nbytes / 1e6:.1f} MB"
    return f"{nbytes / 1e3:.1f} KB"
