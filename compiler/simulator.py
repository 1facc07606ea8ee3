"""Performance simulator: interprets the `kernel` level, one op at a time, core group by core group.

Per core, a reader, the compute engine and a writer work through the op's blocks with double-buffered
circular buffers, so their times overlap: with n blocks and phase times r, c, w the core takes
max(r, c, w) + (r + c + w - max) / n (the pipeline fills and drains once). A read's bandwidth depends
on its path: the core's own L1, another core's L1 over one NoC link, or a shared device memory whose
bandwidth is split evenly among the op's active cores (capped by the core's NoC link). The op takes
as long as its slowest core. Ops run one after another; with host dispatch, an op cannot start before
the host has issued it, and the host issues ops one per `dispatch_ns`.

Every op also gets its roofline bound (FLOPs at the grid's peak, bytes at each level's full
bandwidth); the simulated time is never below it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import opset
from .ir import Graph, Op
from .kernel import MCAST, NOC, CoreWork, Kernel, Transfer
from .target import Target

NS = 1e9


@dataclass
class OpTiming:
    name: str
    kind: str
    start_ns: float
    duration_ns: float
    flops: int
    bytes: dict[str, float]  # by path: dram, l1, noc, ...
    bound: str  # compute | dram | l1 | noc | dispatch | none
    why: str
    memory: str  # where the op's output lives
    grid: str  # RxC the op runs on
    cores: int
    roofline_ns: float
    dispatch_wait_ns: float = 0.0

    @property
    def end_ns(self) -> float:
        return self.start_ns + self.duration_ns


@dataclass
class Zone:
    track: str  # "core r,c" for ops; "core r,c/reader|compute|writer" for phases
    depth: int
    name: str
    start_ns: float
    end_ns: float
    op: str


@dataclass
class SimResult:
    target: str
    dispatch: str
    total_ns: float
    ops: list[OpTiming]
    zones: list[Zone] = field(default_factory=list)

    @property
    def device_ns(self) -> float:
        return sum(o.duration_ns for o in self.ops)


@dataclass
class _CoreTime:
    read: float
    compute: float
    write: float
    total: float
    terms: dict[str, float]  # seconds per component, for the bound class


class Simulator:
    def __init__(self, target: Target, dispatch: str = "host") -> None:
        self.target = target
        self.dispatch = dispatch
        self.dispatch_ns = target.dispatch_ns[dispatch]
        self._sharing: dict[str, int] = {}

    def run(self, kernel_graph: Graph) -> SimResult:
        ops: list[OpTiming] = []
        zones: list[Zone] = []
        device_free = 0.0
        host_issued = 0.0
        for op in kernel_graph.ops:
            kernel: Kernel | None = op.meta.get("kernel")
            if kernel is None:  # constants: no launch, no time
                continue
            host_issued += self.dispatch_ns
            start = max(device_free, host_issued)
            timing, core_times = self.run_op(kernel_graph, op, kernel, start)
            timing.dispatch_wait_ns = max(0.0, host_issued - device_free)
            ops.append(timing)
            zones.extend(self._zones(op, kernel, core_times, start))
            device_free = timing.end_ns
        return SimResult(self.target.name, self.dispatch, device_free, ops, zones)

    # --- one op -----------------------------------------------------------------------------

    def run_op(self, graph: Graph, op: Op, kernel: Kernel, start: float) -> tuple[OpTiming, list[_CoreTime]]:
        active = kernel.cores_used
        users = self._shared_users(kernel)
        shared_s = self._shared_seconds(kernel)
        core_times = [self._core_time(group, shared_s) for group in kernel.groups]
        slowest = max(core_times, key=lambda t: t.total)
        latency = self._latency(kernel)
        duration = (slowest.total + latency) * NS
        flops = opset.flops(graph, op)
        moved = self._bytes_by_path(kernel)
        roofline = self._roofline_s(op, kernel, flops, moved) * NS
        bound = max(slowest.terms, key=slowest.terms.get) if slowest.total > 0 else "none"
        out = graph.tensors[op.outputs[0]].layout if op.outputs else None
        timing = OpTiming(
            name=op.name,
            kind=op.kind,
            start_ns=start,
            duration_ns=duration,
            flops=flops,
            bytes=moved,
            bound=bound,
            why="",
            memory=out.memory if out else "",
            grid=f"{kernel.grid[0]}x{kernel.grid[1]}",
            cores=active,
            roofline_ns=roofline,
        )
        self._sharing = users
        timing.why = self._why(timing, slowest, active)
        return timing, core_times

    def _shared_users(self, kernel: Kernel) -> dict[str, int]:
        """How many of the op's cores use each shared (device-scope) memory."""
        users: dict[str, int] = {}
        for group in kernel.groups:
            for path in {t.path for t in group.reads + group.writes}:
                memory = self.target.memories.get(path)
                if memory is not None and memory.shared:
                    users[path] = users.get(path, 0) + len(group.cores)
        return users

    def _shared_seconds(self, kernel: Kernel) -> dict[str, float]:
        """Time each shared memory is busy during the op. Its bandwidth goes to the cores in
        proportion to what they move, so all finish together: total bytes at the memory's
        bandwidth, unless one core's bytes through its NoC link take longer."""
        total: dict[str, float] = {}
        most: dict[str, float] = {}
        for group in kernel.groups:
            mine: dict[str, float] = {}
            for t in group.reads + group.writes:
                memory = self.target.memories.get(t.path)
                if memory is not None and memory.shared:
                    mine[t.path] = mine.get(t.path, 0.0) + t.bytes
            for path, nbytes in mine.items():
                total[path] = total.get(path, 0.0) + nbytes * len(group.cores)
                most[path] = max(most.get(path, 0.0), nbytes)
        return {
            path: max(nbytes / self.target.memories[path].bytes_per_s, most[path] / self.target.noc_bytes_per_s)
            for path, nbytes in total.items()
        }

    def _bandwidth(self, path: str) -> float:
        """Bytes/s one core gets on a private path: one NoC link for L1-to-L1 and multicast
        traffic, its own L1's rate locally."""
        if path in (NOC, MCAST):
            return self.target.noc_bytes_per_s
        return self.target.memories[path].bytes_per_s

    def _core_time(self, group: CoreWork, shared_s: dict[str, float]) -> _CoreTime:
        on_shared: dict[str, float] = {}
        for t in group.reads + group.writes:
            if t.path in shared_s:
                on_shared[t.path] = on_shared.get(t.path, 0.0) + t.bytes
        terms: dict[str, float] = {}

        def seconds(transfers: tuple[Transfer, ...]) -> float:
            spent = 0.0
            for t in transfers:
                if t.path in shared_s:
                    s = shared_s[t.path] * t.bytes / on_shared[t.path]
                else:
                    s = t.bytes / self._bandwidth(t.path)
                terms[t.path] = terms.get(t.path, 0.0) + s
                spent += s
            return spent

        read, write = seconds(group.reads), seconds(group.writes)
        compute = group.compute.cycles / self.target.clock_hz
        terms["compute"] = compute
        phases = (read, compute, write)
        longest = max(phases)
        total = longest + (sum(phases) - longest) / max(1, group.blocks)
        # Reader and writer overlap, but a shared memory serves both, one after the other.
        total = max([total, *(shared_s[p] for p in on_shared)])
        return _CoreTime(read, compute, write, total, terms)

    def _latency(self, kernel: Kernel) -> float:
        """One NoC traversal to start the pipeline: interface plus average hops across the grid."""
        target = self.target
        hops = (kernel.grid[0] + kernel.grid[1]) / 2
        return (target.noc_interface_cycles + hops * target.noc_hop_cycles) / target.clock_hz

    def _bytes_by_path(self, kernel: Kernel) -> dict[str, float]:
        moved: dict[str, float] = {}
        for group in kernel.groups:
            for t in group.reads + group.writes:
                moved[t.path] = moved.get(t.path, 0.0) + t.bytes * len(group.cores)
        return moved

    def _peak(self, engine: str, fidelity: str | None, dtype: str | None = None) -> float:
        """FLOP/s (or element ops/s) of the whole grid on one engine."""
        if engine == "matrix":
            return self.target.peak_flops(dtype or self.target.matrix.fallback_dtype, fidelity)
        return self.target.vector_ops_per_s

    def _roofline_s(self, op: Op, kernel: Kernel, flops: int, moved: dict[str, float]) -> float:
        target = self.target
        compute = kernel.groups[0].compute if kernel.groups else None
        engine = compute.engine if compute else "data"
        bounds = [flops / self._peak(engine, compute.fidelity, compute.dtype) if compute and engine != "data" else 0.0]
        for path, nbytes in moved.items():
            if path in (NOC, MCAST):
                bandwidth = target.noc_bytes_per_s * target.cores * target.noc_count
            else:
                memory = target.memories[path]
                bandwidth = memory.bytes_per_s * (1 if memory.shared else target.cores)
            bounds.append(nbytes / bandwidth)
        return max(bounds)

    def _why(self, t: OpTiming, slowest: _CoreTime, active: int) -> str:
        if t.bound == "none":
            return "no work"
        seconds = t.duration_ns / NS
        achieved = t.flops / seconds if seconds else 0.0
        kernel_engine = "matrix" if opset.op_class(t.kind).kind_class in opset.MATRIX_CLASSES else "vector"
        peak_share = achieved / self._peak(kernel_engine, None) * 100 if t.flops else 0.0
        if t.bound == "compute":
            head = f"compute-bound on {active} core{'s' if active != 1 else ''}"
        elif t.bound in (NOC, MCAST):
            what = "multicast" if t.bound == MCAST else "L1-to-L1"
            head = (
                f"NoC-bound: {_mb(t.bytes.get(t.bound, 0))} {what} over one "
                f"{self.target.noc_link_bytes_per_cycle} B/cycle link per core"
            )
        else:
            memory = self.target.memories[t.bound]
            if not memory.shared:
                head = f"{t.bound.upper()}-bound: {_mb(t.bytes.get(t.bound, 0))} from local {t.bound}"
            else:
                sharing = self._sharing.get(t.bound, active)
                head = (
                    f"{t.bound.upper()}-bound: {_mb(t.bytes.get(t.bound, 0))} at "
                    f"{memory.bytes_per_s / 1e9:.0f} GB/s shared by {sharing} core{'s' if sharing != 1 else ''}"
                )
        return f"{head}; compute {peak_share:.0f}% of peak; {t.duration_ns / max(t.roofline_ns, 1e-9):.1f}x roofline"

    # --- timeline zones ------------------------------------------------------------------------

    def _zones(self, op: Op, kernel: Kernel, core_times: list[_CoreTime], start: float) -> list[Zone]:
        zones = []
        for group, ct in zip(kernel.groups, core_times):
            blocks = max(1, group.blocks)
            end = start + ct.total * NS
            phases = (
                ("reader", "read", start, start + ct.read * NS),
                ("compute", "compute", start + ct.read / blocks * NS, start + (ct.read / blocks + ct.compute) * NS),
                ("writer", "write", end - ct.write * NS, end),
            )
            for r, c in group.cores:
                track = f"core {r},{c}"
                zones.append(Zone(track, 0, op.name, start, end, op.name))
                for engine, phase, p0, p1 in phases:
                    if p1 > p0:
                        zones.append(Zone(f"{track}/{engine}", 1, phase, p0, p1, op.name))
        return zones


def _mb(nbytes: float) -> str:
    if nbytes >= 1e6:
        return f"{nbytes / 1e6:.1f} MB"
    return f"{nbytes / 1e3:.1f} KB"


def simulate(kernel_graph: Graph, target: Target, dispatch: str = "host") -> SimResult:
    return Simulator(target, dispatch).run(kernel_graph)
