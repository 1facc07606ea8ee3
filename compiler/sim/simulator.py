"""Performance simulator: interprets the `kernel` level op by op, core group by core group.

    for each op, in program order:
        wait for the device (the previous op) and for the host to have issued it (dispatch)
        shared memories: busy for (bytes they serve) / bandwidth; each core gets a share in
            proportion to what it moves, so all finish together unless one core's NoC link is slower
        each core group: reader, compute engine and writer stream `blocks` steps through
            double-buffered circular buffers:
                time = (r + c + w) / n + (n - 1) * max(r, c, w) / n      (pipeline fill, then steady state)
            a multicast receiver cannot finish reading before its sender has fetched the data
        the op ends when its slowest core does; then timeline zones, counters and the `why` line

With uniform steps and two-slot buffers, stepping the pipeline block by block lands on the same
times as this closed form, so the closed form is what runs. Each op also gets its roofline bound
(FLOPs at the grid's peak, bytes at each level's full bandwidth); simulated time is never below it.
"""

from __future__ import annotations

import copy
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from tilescope.compiler.sim.collectives import LINK, is_collective, on_links
from tilescope.compiler.sim.flops import flops as count_flops
from tilescope.compiler.ir.graph import Graph, Op
from tilescope.compiler.ir.core_work import MCAST, NOC, Compute, CoreWork, Kernel, Transfer
from tilescope.compiler.targets.chip import Target
from tilescope.compiler.sim.zone_tables import CounterTable, ZoneTable
from tilescope.compiler.sim.tracks import ENGINES, core_track, device_track, engine_track, link_track

NS = 1e9
PHASES = ("read", "compute", "write")  # what each engine does for an op
# ttnn-visualizer's rule: an op close to two peaks at once (>= 65% of each) is bound by both
BALANCED_SHARE = 0.65


@dataclass
class OpTiming:
    name: str
    kind: str
    start_ns: float
    duration_ns: float
    flops: int
    bytes: dict[str, float]  # by path: dram, lls, l1, noc, mcast
    bound: str  # compute | dram | lls | l1 | noc | dispatch | balanced | none
    why: str
    memory: str  # where the op's output lives
    grid: str  # RxC the op runs on
    cores: int
    roofline_ns: float
    pct_peak: float = 0.0  # achieved FLOP/s over the engine's peak at the op's fidelity, in %
    dispatch_wait_ns: float = 0.0  # the device sat idle this long waiting for the host to issue it
    fidelity: str = ""  # math fidelity of matrix ops
    # inputs then outputs: role, name, shape, dtype, memory, memory_layout, layout, tile, grid
    tensors: list[dict] = field(default_factory=list)
    compute_ns: float = 0.0  # the FLOPs at the engine's peak: the compute side of the roofline
    bandwidth_ns: float = 0.0  # the slowest path's bytes at its peak bandwidth: the memory side

    @property
    def end_ns(self) -> float:
        return self.start_ns + self.duration_ns

    @property
    def achieved_flops(self) -> float:
        return self.flops / (self.duration_ns / NS) if self.duration_ns else 0.0

    def bandwidth(self, path: str) -> float:
        """Bytes/s the op moved on a path."""
        return self.bytes.get(path, 0.0) / (self.duration_ns / NS) if self.duration_ns else 0.0


def _tensors(graph: Graph, op: Op) -> list[dict]:
    """The op's operands and results as the ops perf report lists them."""
    described = []
    for role, names in (("in", op.inputs), ("out", op.outputs)):
        for i, name in enumerate(names):
            tensor = graph.tensors[name]
            layout = tensor.layout
            described.append(
                {
                    "role": f"{role}{i}",
                    "name": name,
                    "shape": list(tensor.shape),
                    "dtype": layout.dtype if layout else tensor.dtype,
                    "memory": layout.memory if layout else "",
                    "memory_layout": layout.memory_layout if layout else "",
                    "layout": layout.layout if layout else "",
                    # its tile shape and the cores holding its shards, which tile and operand overrides set
                    "tile": f"{layout.tile[0]}x{layout.tile[1]}" if layout and layout.layout == "tile" else "",
                    "grid": f"{layout.grid[0]}x{layout.grid[1]}" if layout else "",
                }
            )
    return described


@dataclass
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


@dataclass
class KernelCosts:
    """Each kernel's timing at start 0 on `target`, as run_op gave it, for a later simulation of
    the same kernels. The kernel is kept with it, so its id stays its own."""

    target: Target
    by_kernel: dict[int, tuple[Kernel, OpTiming, list[_CoreTime]]] = field(default_factory=dict)


@dataclass
class _CoreTime:
    read: float
    compute: float
    write: float
    total: float
    terms: dict[str, float]  # seconds per component (compute, each path), for the bound class


class Simulator:
    """`known`: an earlier simulation's costs; an op whose kernel (the same object: the compiler
    reuses an unchanged op's kernel) it timed on this target is not timed again, only placed."""

    def __init__(
        self, target: Target, dispatch: str = "host", known: KernelCosts | None = None, timeline: bool = True
    ) -> None:
        self.target = target
        self.dispatch = dispatch
        # without it, only the times: no zones or counters (half a search trial's simulation)
        self.timeline = timeline
        self.dispatch_ns = target.dispatch_ns[dispatch]
        self.known = known.by_kernel if known is not None and known.target is target else {}
        # cycles of each pipeline step's handshakes: circular-buffer waits and frees, and for a
        # multicast receiver a semaphore round trip to its sender before the data may come
        pipe_sync = target.pipeline.step_sync_cycles
        round_trip = 2 * (target.noc_interface_cycles + target.noc_hop_cycles * max(target.grid) / 2)
        self.step_sync_cycles = {False: pipe_sync, True: pipe_sync + round_trip if pipe_sync else 0.0}

    def run(self, kernel_graph: Graph) -> SimResult:
        result = SimResult(self.target.name, self.dispatch, 0.0, [], costs=KernelCosts(self.target))
        self._core_rows: dict[tuple, tuple[int, ...]] = {}  # core set -> its rows' track sets, this run's
        self._counter_rows: dict[tuple, tuple[array, np.ndarray]] = {}  # core set -> its tracks, rows, columns
        self._devices: int | None = None  # the track set of every device's row, once made
        self._link_rows: dict[str, int] = {}  # a link track -> its track set
        self._alike: dict[int, tuple] = {}  # a kernel's id -> it, its timing and core times, for its renamings
        device_free = 0.0
        host_issued = 0.0
        ready: dict[str, float] = {}  # when each tensor is written: an op waits for its operands
        link_free: dict[str, float] = {}  # per link track: collectives over the same axes queue
        mesh = kernel_graph.meta.get("mesh")
        # the devices the program runs on: the mesh's, which may be fewer than the system has
        self._mesh_devices = mesh.devices if mesh is not None else 1
        many = self._mesh_devices > 1
        for op in kernel_graph.ops:
            kernel: Kernel | None = op.meta.get("kernel")
            if kernel is None:  # constants and views: no launch, no time; a view is ready with its operand
                after = max((ready.get(t, 0.0) for t in op.inputs), default=0.0)
                ready.update(dict.fromkeys(op.outputs, after))
                continue
            if op.attrs.get("const_eval"):  # once, at load: on the load clock, not in the step
                timing, _ = self._cost(kernel_graph, op, kernel, result.costs.by_kernel)
                timing.start_ns = result.load_ns
                result.load_ops.append(timing)
                continue
            host_issued += self.dispatch_ns
            operands = max((ready.get(t, 0.0) for t in op.inputs), default=0.0)
            timing, core_times = self._cost(kernel_graph, op, kernel, result.costs.by_kernel)
            if many and is_collective(op):
                # on the links, beside the cores: compute that does not need its result goes on
                timing = on_links(self.target, kernel_graph, op, timing)
                track = link_track(op.attrs.get("axes", ()))
                timing.start_ns = max(link_free.get(track, 0.0), host_issued, operands)
                result.ops.append(timing)
                if self.timeline:
                    self._link_zone(result, op, track, timing)
                link_free[track] = ready[op.outputs[0]] = timing.end_ns
                continue
            start = max(device_free, host_issued, operands)
            timing.start_ns = start
            timing.dispatch_wait_ns = max(0.0, host_issued - device_free)
            if timing.dispatch_wait_ns > timing.duration_ns and timing.bound != "none":
                timing.why = f"dispatch-bound: waited {timing.dispatch_wait_ns / 1e3:.1f} us for the host; {timing.why}"
                timing.bound = "dispatch"
            result.ops.append(timing)
            if self.timeline:
                self._zones(result.zones, op, kernel, core_times, start)
                if many:  # every device runs the op at once (one program, each on its piece)
                    name = result.zones.name_id(op.name)
                    result.zones.add(self._device_rows(result.zones), 0, name, start, timing.end_ns, name)
                self._counters(result.counters, op, kernel, timing)
            device_free = timing.end_ns
            ready.update(dict.fromkeys(op.outputs, device_free))
        result.total_ns = max([device_free, *link_free.values()])
        return result

    # --- one op -----------------------------------------------------------------------------

    def _cost(self, graph: Graph, op: Op, kernel: Kernel, costs: dict) -> tuple[OpTiming, list[_CoreTime]]:
        """The op's timing at start 0 (a copy: the caller places it) and its core times."""
        known = self.known.get(id(kernel))
        if known is None or known[0] is not kernel or known[1].name != op.name:
            like = self._alike.get(id(kernel.like)) if kernel.like is not None else None
            if like is not None and like[0] is kernel.like:  # a renaming of a kernel timed this run
                timing = copy.copy(like[1])
                timing.name, timing.tensors = op.name, _tensors(graph, op)
                known = (kernel, timing, like[2])
            else:
                timing, core_times = self.run_op(graph, op, kernel, 0.0)
                known = (kernel, timing, core_times)
            template = kernel.like or kernel
            self._alike.setdefault(id(template), (template, *known[1:]))
        costs[id(kernel)] = known
        return copy.copy(known[1]), known[2]

    def run_op(self, graph: Graph, op: Op, kernel: Kernel, start: float) -> tuple[OpTiming, list[_CoreTime]]:
        users, shared_s = self._shared(kernel)
        core_times = self._group_times(kernel, shared_s)
        slowest = max(core_times, key=lambda t: t.total)
        duration = (slowest.total + self._latency(kernel)) * NS
        flops = count_flops(graph, op)
        moved = self._bytes_by_path(kernel)
        compute = kernel.groups[0].compute if kernel.groups else None
        peak = self._peak(compute) if compute else 0.0
        out = graph.tensors[op.outputs[0]].layout if op.outputs else None
        timing = OpTiming(
            name=op.name,
            kind=op.kind,
            start_ns=start,
            duration_ns=duration,
            flops=flops,
            bytes=moved,
            bound=self._bound(slowest),
            why="",
            memory=out.memory if out else "",
            grid=f"{kernel.grid[0]}x{kernel.grid[1]}",
            cores=kernel.cores_used,
            roofline_ns=0.0,
            fidelity=(compute.fidelity or "") if compute else "",
            tensors=_tensors(graph, op),
        )
        compute_s, bandwidth_s = self._roofline_s(flops, moved, peak)
        timing.compute_ns, timing.bandwidth_ns = compute_s * NS, bandwidth_s * NS
        timing.roofline_ns = max(timing.compute_ns, timing.bandwidth_ns)
        timing.pct_peak = timing.achieved_flops / peak * 100 if peak and flops else 0.0
        timing.why = self._why(timing, users)
        return timing, core_times

    def _group_times(self, kernel: Kernel, shared_s: dict[str, float]) -> list[_CoreTime]:
        """Every group's time; multicast receivers after their senders, whose reads they wait for."""
        receives = [any(t.path == MCAST for t in g.reads) for g in kernel.groups]
        multicast = frozenset(t.tensor for g in kernel.groups for t in g.reads if t.path == MCAST)
        times = [self._core_time(g, shared_s, multicast, r) for g, r in zip(kernel.groups, receives)]
        sender_read = max((t.read for t, r in zip(times, receives) if not r), default=0.0)
        for group, t, receiver in zip(kernel.groups, times, receives):
            if receiver and sender_read:
                # the last block arrives once the sender has fetched it; then compute and write it
                steps = max(1, group.blocks)
                tail = (t.compute + t.write) / steps
                t.total = max(t.total, sender_read + tail)
        return times

    def _shared(self, kernel: Kernel) -> tuple[dict[str, int], dict[str, float]]:
        """Per shared memory: how many of the op's cores use it, and how long it is busy. Its
        bandwidth goes to the cores in proportion to what they move, so all finish together: total
        bytes at the memory's bandwidth, unless one core's bytes through its NoC link take longer."""
        users: dict[str, int] = {}
        total: dict[str, float] = {}
        most: dict[str, float] = {}
        for group in kernel.groups:
            mine: dict[str, float] = {}
            for t in group.reads + group.writes:
                memory = self.target.memories.get(t.path)
                if memory is not None and memory.shared:
                    mine[t.path] = mine.get(t.path, 0.0) + t.bytes
            for path, nbytes in mine.items():
                users[path] = users.get(path, 0) + len(group.cores)
                total[path] = total.get(path, 0.0) + nbytes * len(group.cores)
                most[path] = max(most.get(path, 0.0), nbytes)
        busy = {
            path: max(nbytes / self.target.memories[path].bytes_per_s, most[path] / self._core_rate(path))
            + self.target.memories[path].latency_ns / NS
            for path, nbytes in total.items()
        }
        return users, busy

    def _core_rate(self, path: str) -> float:
        """The most one core moves to or from a shared memory per second: its NoC link, or fewer
        when its outstanding requests cannot cover the memory's latency."""
        limit = self.target.memories[path].core_bytes_per_s
        return min(self.target.noc_bytes_per_s, limit) if limit else self.target.noc_bytes_per_s

    def _bandwidth(self, path: str) -> float:
        """Bytes/s one core gets on a private path: one NoC link for L1-to-L1 and multicast
        traffic, its own L1's rate locally."""
        if path == MCAST:
            return self.target.multicast_bytes_per_s
        if path == NOC:
            return self.target.noc_bytes_per_s
        return self.target.memories[path].bytes_per_s

    def _core_time(
        self, group: CoreWork, shared_s: dict[str, float], multicast: frozenset[str], receiver: bool
    ) -> _CoreTime:
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

        # multicast data is pushed into the core's buffers by the sender, alongside what the
        # core's own reader fetches: the two overlap
        fetched = seconds(tuple(t for t in group.reads if t.path != MCAST))
        pushed = seconds(tuple(t for t in group.reads if t.path == MCAST))
        # a sender's reader fetches a block, then multicasts it, one after the other
        sent = sum(t.bytes for t in group.reads if t.path != MCAST and t.tensor in multicast)
        if sent:
            terms[MCAST] = terms.get(MCAST, 0.0) + sent / self.target.multicast_bytes_per_s
            fetched += sent / self.target.multicast_bytes_per_s
        read, write = max(fetched, pushed), seconds(group.writes)
        compute = self._engine_cycles(group.compute) / self.target.clock_hz
        terms["compute"] = compute
        phases = (read, compute, write)
        longest = max(phases)
        if group.double_buffered:  # engines overlap: fill, then the slowest phase sets the pace
            total = longest + (sum(phases) - longest) / max(1, group.blocks)
        else:  # one slot per buffer: each step is read, then computed, then written
            total = sum(phases)
        total += group.blocks * self.step_sync_cycles[receiver] / self.target.clock_hz
        # Reader and writer overlap, but a memory serves both, one after the other: a shared one
        # at its share of the bandwidth, the core's own at its banks' rate.
        local: dict[str, float] = {}
        for t in group.reads + group.writes:
            if t.path in self.target.memories and t.path not in shared_s:
                local[t.path] = local.get(t.path, 0.0) + t.bytes / self._bandwidth(t.path)
        total = max([total, *(shared_s[p] for p in on_shared), *local.values()])
        return _CoreTime(read, compute, write, total, terms)

    def _engine_cycles(self, compute: Compute) -> float:
        """The compute phase: the unpacker feeds the engine and the packer drains it, each on its
        own thread, so the slowest of the three sets the pace; the others show only through the
        handoffs between them (the target's overlap loss)."""
        pipe = self.target.pipeline
        if compute.engine == "data":
            return compute.cycles
        stages = (
            compute.cycles,
            compute.unpack_bytes / pipe.unpack_bytes_per_cycle if pipe.unpack_bytes_per_cycle else 0.0,
            compute.pack_bytes / pipe.pack_bytes_per_cycle if pipe.pack_bytes_per_cycle else 0.0,
        )
        longest = max(stages)
        return longest + pipe.overlap_loss * (sum(stages) - longest)

    def _latency(self, kernel: Kernel) -> float:
        """Starting the op: its kernels launched on every core, then one NoC traversal to start
        the pipeline (interface plus average hops across the grid)."""
        target = self.target
        hops = (kernel.grid[0] + kernel.grid[1]) / 2
        traversal = (target.noc_interface_cycles + hops * target.noc_hop_cycles) / target.clock_hz
        return target.pipeline.launch_ns / NS + traversal

    def _bytes_by_path(self, kernel: Kernel) -> dict[str, float]:
        moved: dict[str, float] = {}
        for group in kernel.groups:
            for t in group.reads + group.writes:
                moved[t.path] = moved.get(t.path, 0.0) + t.bytes * len(group.cores)
        return moved

    def _peak(self, compute) -> float:
        """FLOP/s (or element ops/s) of the whole grid on the op's engine; 0 for data movement."""
        if compute.engine == "matrix":
            return self.target.peak_flops(compute.dtype or self.target.matrix.fallback_dtype, compute.fidelity)
        if compute.engine == "vector":
            return self.target.vector_ops_per_s
        return 0.0

    def _roofline_s(self, flops: int, moved: dict[str, float], peak: float) -> tuple[float, float]:
        """(compute, memory) lower bounds: the FLOPs at peak, the busiest path at its bandwidth."""
        target = self.target
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

    def _bound(self, slowest: _CoreTime) -> str:
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

    def _why(self, t: OpTiming, users: dict[str, int]) -> str:
        if t.bound == "none":
            return "no work"
        cores = f"{t.cores} core{'s' if t.cores != 1 else ''}"
        if t.bound == "compute":
            head = f"compute-bound on {cores}"
        elif t.bound == "balanced":
            head = f"balanced: compute and memory each above {BALANCED_SHARE:.0%} of the time on {cores}"
        elif t.bound == "noc":
            noc = t.bytes.get(NOC, 0.0) + t.bytes.get(MCAST, 0.0)
            head = f"NoC-bound: {_mb(noc)} over one {self.target.noc_link_bytes_per_cycle} B/cycle link per core"
        else:
            memory = self.target.memories[t.bound]
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

    # --- timeline zones and counters -----------------------------------------------------------

    def _device_rows(self, zones: ZoneTable) -> int:
        if self._devices is None:
            rows = [zones.track_id(device_track(d)) for d in range(self._mesh_devices)]
            self._devices = zones.track_set(rows)
        return self._devices

    def _link_zone(self, result: SimResult, op: Op, track: str, timing: OpTiming) -> None:
        """A collective's zone on its links' row, and the bandwidth each device sends at meanwhile."""
        name = result.zones.name_id(op.name)
        if track not in self._link_rows:
            self._link_rows[track] = result.zones.track_set([result.zones.track_id(track)])
        row = self._link_rows[track]
        result.zones.add(row, 0, name, timing.start_ns, timing.end_ns, name)
        counter, sent = [result.counters.track_id(track)], result.counters.name_id("link_bytes_per_s")
        result.counters.add(counter, sent, timing.start_ns, [timing.bandwidth(LINK)])
        result.counters.add(counter, sent, timing.end_ns, [0.0])

    def _zones(self, zones: ZoneTable, op: Op, kernel: Kernel, core_times: list[_CoreTime], start: float) -> None:
        """Each core's op zone and its reader, compute and writer phases; a group's cores share them."""
        name = zones.name_id(op.name)
        for group, ct in zip(kernel.groups, core_times):
            blocks = max(1, group.blocks)
            end = start + ct.total * NS
            rows = self._rows(zones, group.cores)
            zones.add(rows[0], 0, name, start, end, name)
            phases = (
                (start, start + ct.read * NS),
                (start + ct.read / blocks * NS, start + (ct.read / blocks + ct.compute) * NS),
                (end - ct.write * NS, end),
            )
            for engine, (phase, (p0, p1)) in enumerate(zip(PHASES, phases), start=1):
                if p1 > p0:
                    zones.add(rows[engine], 1, zones.name_id(phase), p0, p1, name)

    def _rows(self, zones: ZoneTable, cores: Sequence[tuple[int, int]]) -> tuple[int, ...]:
        """The track sets of a set of cores' rows, then of each engine's rows (kept: most ops run
        on one of a few core sets)."""
        key = tuple(cores)
        if key not in self._core_rows:
            self._core_rows[key] = tuple(
                zones.track_set(column) for column in zip(*(self._core_tracks(zones, c) for c in cores))
            )
        return self._core_rows[key]

    @staticmethod
    def _core_tracks(zones: ZoneTable, core: tuple[int, int]) -> tuple[int, int, int, int]:
        """A core's row and its engines' rows, numbered together so the timeline lists them so."""
        track = core_track(core)
        if track not in zones.tracks:
            for row in (track, *(engine_track(track, engine) for engine in ENGINES)):
                zones.track_id(row)
        first = zones.tracks[track]
        return first, first + 1, first + 2, first + 3

    def _counters(self, counters: CounterTable, op: Op, kernel: Kernel, timing: OpTiming) -> None:
        """L1 bytes in use on each core while the op runs (tensors live in L1 plus the op's
        circular buffers), and each shared memory's bandwidth in use."""
        live = op.meta.get("l1_live_per_core")
        l1 = counters.name_id("l1_bytes")
        for group in kernel.groups:
            key = tuple(group.cores)
            if key not in self._counter_rows:
                self._counter_rows[key] = (
                    array("q", (counters.track_id(core_track(core)) for core in group.cores)),
                    np.array(key).reshape(-1, 2).T,
                )
            tracks, (rows, cols) = self._counter_rows[key]
            values = np.full(len(rows), float(group.cb_bytes))
            if live is not None:  # cores outside the planned grid hold no tensors
                inside = (rows < live.shape[0]) & (cols < live.shape[1])
                values[inside] += live[rows[inside], cols[inside]]
            counters.add(tracks, l1, timing.start_ns, values)
        for path in timing.bytes:
            memory = self.target.memories.get(path)
            if memory is not None and memory.shared:
                track, name = [counters.track_id(path)], counters.name_id(f"{path}_bytes_per_s")
                counters.add(track, name, timing.start_ns, [timing.bandwidth(path)])
                counters.add(track, name, timing.end_ns, [0.0])


def _mb(nbytes: float) -> str:
    if nbytes >= 1e6:
        return f"{nbytes / 1e6:.1f} MB"
    return f"{nbytes / 1e3:.1f} KB"


def simulate(
    kernel_graph: Graph,
    target: Target,
    dispatch: str = "host",
    known: KernelCosts | None = None,
    timeline: bool = True,
) -> SimResult:
    """`kernel_graph` run on `target`: each op's timing, and with `timeline` its zones and counters."""
    return Simulator(target, dispatch, known, timeline).run(kernel_graph)
