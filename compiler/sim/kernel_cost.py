"""The cost of a kernel on its cores: how long each core group takes, and the op's record at start 0.

    shared memories: busy for (bytes they serve) / bandwidth; each core gets a share in
        proportion to what it moves, so all finish together unless one core's NoC link is slower
    each core group: reader, compute engine and writer stream `blocks` steps through
        double-buffered circular buffers:
            time = (r + c + w) / n + (n - 1) * max(r, c, w) / n      (pipeline fill, then steady state)
        a multicast receiver cannot finish reading before its sender has fetched the data
    the op ends when its slowest core does

With uniform steps and two-slot buffers, stepping the pipeline block by block lands on the same
times as this closed form, so the closed form is what runs. What bounds the op (its roofline, its
class and the sentence saying why) is compiler/sim/bounds.py's.
"""

from __future__ import annotations

from dataclasses import replace

from tilescope.compiler.ir.core_work import MCAST, NOC, Compute, CoreWork, Kernel, Transfer
from tilescope.compiler.ir.graph import Graph, Op
from tilescope.compiler.sim import bounds
from tilescope.compiler.sim.bounds import LATENCY
from tilescope.compiler.sim.flops import flops
from tilescope.compiler.sim.records import NS, OpTiming, tensor_uses
from tilescope.compiler.sim.result import CoreTime
from tilescope.compiler.targets.chip import Target


STREAMED_PAGE = 2048  # bytes of the reads a core's DRAM rate was measured with


class KernelCost:
    """Kernels timed on `target`'s cores."""

    def __init__(self, target: Target) -> None:
        self.target = target
        # cycles of each pipeline step's handshakes: circular-buffer waits and frees, and for a
        # multicast receiver a semaphore round trip to its sender before the data may come
        pipe_sync = target.pipeline.step_sync_cycles
        round_trip = 2 * (target.noc_interface_cycles + target.noc_hop_cycles * max(target.grid) / 2)
        self.step_sync_cycles = {False: pipe_sync, True: pipe_sync + round_trip if pipe_sync else 0.0}
        # a transaction kept in flight with others takes the share of a round trip a 2 KB read
        # takes at a core's measured DRAM rate: its outstanding requests cover the round trip
        # whatever their size (tt-metal data_movement ideal_performance.md, packet sizes)
        dram = next((m for m in target.memories.values() if m.scope == "device"), None)
        rate = dram.core_bytes_per_s / target.clock_hz if dram is not None and dram.core_bytes_per_s else 0.0
        trip = target.noc_round_trip_cycles
        slot = min(trip, STREAMED_PAGE / rate) if rate else trip
        # or, where longer, the RISC-V's own work for each
        self.streamed_cycles = max(slot, target.noc_page_cycles)

    def op(self, graph: Graph, op: Op, kernel: Kernel) -> tuple[OpTiming, tuple[CoreTime, ...]]:
        """The op's record at start 0, and its core groups' times."""
        users, shared_s = self._shared(kernel)
        core_times = self._group_times(kernel, shared_s)
        slowest = max(core_times, key=lambda t: t.total)
        duration = (slowest.total + self._latency(kernel)) * NS
        count = flops(graph, op)
        moved = _bytes_by_path(kernel)
        compute = kernel.groups[0].compute if kernel.groups else None
        peak = bounds.peak(self.target, compute) if compute else 0.0
        out = graph.tensors[op.outputs[0]].layout if op.outputs else None
        compute_s, bandwidth_s = bounds.roofline_s(self.target, count, moved, peak)
        compute_ns, bandwidth_ns = compute_s * NS, bandwidth_s * NS
        achieved = count / (duration / NS) if duration else 0.0
        timing = OpTiming(
            name=op.name,
            kind=op.kind,
            start_ns=0.0,
            duration_ns=duration,
            flops=count,
            bytes=moved,
            bound=bounds.bound_class(slowest),
            memory=out.memory if out else "",
            grid=f"{kernel.grid[0]}x{kernel.grid[1]}",
            cores=kernel.cores_used,
            roofline_ns=max(compute_ns, bandwidth_ns),
            pct_peak=achieved / peak * 100 if peak and count else 0.0,
            fidelity=(compute.fidelity or "") if compute else "",
            tensors=tensor_uses(graph, op),
            compute_ns=compute_ns,
            bandwidth_ns=bandwidth_ns,
            error_band=self.target.error_band(op.kind),
        )
        return timing.replace(why=bounds.why(self.target, timing, users)), core_times

    def _group_times(self, kernel: Kernel, shared_s: dict[str, float]) -> tuple[CoreTime, ...]:
        """Every group's time; multicast receivers after their senders, whose reads they wait for,
        and a chain's cores after the blocks have passed the cores before them."""
        receives = [any(t.path == MCAST or t.hops for t in g.reads) for g in kernel.groups]
        multicast = frozenset(t.tensor for g in kernel.groups for t in g.reads if t.path == MCAST)
        times = [self._core_time(g, shared_s, multicast, r) for g, r in zip(kernel.groups, receives)]
        sender_read = max((t.read for t, r in zip(times, receives) if not r), default=0.0)
        # a chain's first core passes each block on after its step's handshake with the next
        sync = self.step_sync_cycles[False] / self.target.clock_hz
        groups = zip(kernel.groups, times, receives)
        sender_passed = max((t.read + g.blocks * sync for g, t, r in groups if not r), default=0.0)
        for i, (group, t, receiver) in enumerate(zip(kernel.groups, times, receives)):
            if receiver and sender_read:
                # the last block arrives once the sender has fetched it (and passed it down the
                # chain, where there is one); then compute and write it
                steps = max(1, group.blocks)
                tail = (t.compute + t.write) / steps
                chained = any(t.hops for t in group.reads)
                arrived = sender_passed + self._passing(group) if chained else sender_read
                times[i] = replace(t, total=max(t.total, arrived + tail))
        return tuple(times)

    def _passing(self, group: CoreWork) -> float:
        """Seconds the last block takes down a chain from the core after the first to this one:
        a hop each, its step's bytes over one NoC link and the handshake (a semaphore round trip
        to the next core, one hop away)."""
        steps = max(1, group.blocks)
        target = self.target
        neighbour = 2 * (target.noc_interface_cycles + target.noc_hop_cycles)
        hop = (target.pipeline.step_sync_cycles + neighbour) / target.clock_hz
        return max(
            (max(0, t.hops - 1) * (t.bytes / steps / target.noc_bytes_per_s + hop) for t in group.reads),
            default=0.0,
        )

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
    ) -> CoreTime:
        on_shared: dict[str, float] = {}
        for t in group.reads + group.writes:
            if t.path in shared_s:
                on_shared[t.path] = on_shared.get(t.path, 0.0) + t.bytes
        terms: dict[str, float] = {}

        def seconds(transfers: tuple[Transfer, ...]) -> float:
            spent = 0.0
            for t in transfers:
                if t.path in shared_s:  # (a transfer of commands only moves no bytes)
                    s = shared_s[t.path] * t.bytes / on_shared[t.path] if t.bytes else 0.0
                else:
                    s = t.bytes / self._bandwidth(t.path)
                # a kernel that waits on each of its transactions: their round trips, when longer
                # than the bytes take, are what the time goes to (the bound "latency")
                waited = (
                    t.pages * self.target.noc_round_trip_cycles + t.streamed * self.streamed_cycles
                ) / self.target.clock_hz
                # commands issued one by one, then waited on: the RISC-V's time, then the trip
                issue = self.target.noc_issue_cycles
                if t.stateful and self.target.noc_stateful_issue_cycles:
                    issue = self.target.noc_stateful_issue_cycles
                waited += t.commands * issue / self.target.clock_hz
                # stores into what landed, after it lands
                waited += t.store_cycles / self.target.clock_hz
                on = LATENCY if waited > s else t.path
                s = max(s, waited)
                terms[on] = terms.get(on, 0.0) + s
                spent += s
            return spent

        # multicast data is pushed into the core's buffers by the sender, alongside what the
        # core's own reader fetches: the two overlap
        fetched = seconds(tuple(t for t in group.reads if t.path != MCAST and not t.by_writer))
        pushed = seconds(tuple(t for t in group.reads if t.path == MCAST))
        # a sender's reader fetches a block, then multicasts it, one after the other
        sent = sum(t.bytes for t in group.reads if t.path != MCAST and t.tensor in multicast)
        if sent:
            terms[MCAST] = terms.get(MCAST, 0.0) + sent / self.target.multicast_bytes_per_s
            fetched += sent / self.target.multicast_bytes_per_s
        # the writer's own reads come before the results it writes, on the same RISC-V, and what
        # it does before its first step (a tile filled with a scalar) beside the reader's fetches
        read = max(fetched, pushed)
        setup = group.setup_cycles / self.target.clock_hz
        fetched_by_writer = seconds(tuple(t for t in group.reads if t.by_writer)) + setup
        written = seconds(group.writes)
        write = fetched_by_writer + written
        compute = self._engine_cycles(group.compute) / self.target.clock_hz
        terms["compute"] = compute
        if group.compute.waits:
            waited = group.compute.waits * self.target.noc_round_trip_cycles / self.target.clock_hz
            terms[LATENCY] = terms.get(LATENCY, 0.0) + waited
            compute += waited
        longest = max(read, compute, write)
        # a step's path: its operands fetched (by reader and writer at once), computed, written
        path = max(read, fetched_by_writer) + compute + written
        if group.double_buffered:  # engines overlap: fill, then the slowest phase sets the pace
            total = longest + max(0.0, path - longest) / max(1, group.blocks)
        else:  # one slot per buffer: each step is read, then computed, then written
            total = path
        if group.handshakes:
            total += group.blocks * self.step_sync_cycles[receiver] / self.target.clock_hz
        # Reader and writer overlap, but a memory serves both, one after the other: a shared one
        # at its share of the bandwidth, the core's own at its banks' rate.
        local: dict[str, float] = {}
        for t in group.reads + group.writes:
            if t.path in self.target.memories and t.path not in shared_s:
                local[t.path] = local.get(t.path, 0.0) + t.bytes / self._bandwidth(t.path)
        total = max([total, *(shared_s[p] for p in on_shared), *local.values()])
        return CoreTime(read, compute, write, total, terms)

    def _engine_cycles(self, compute: Compute) -> float:
        """The compute phase: the unpacker feeds the engine and the packer drains it, each on its
        own thread, so the slowest of the three sets the pace; the others show only through the
        handoffs between them (the target's overlap loss)."""
        pipe = self.target.pipeline
        if compute.engine == "data":
            return compute.cycles + compute.pieces * pipe.segment_copy_cycles
        stages = (
            compute.cycles,
            compute.unpack_bytes / pipe.unpack_bytes_per_cycle if pipe.unpack_bytes_per_cycle else 0.0,
            compute.pack_bytes / pipe.pack_bytes_per_cycle if pipe.pack_bytes_per_cycle else 0.0,
        )
        longest = max(stages)
        return longest + pipe.overlap_loss * (sum(stages) - longest) + compute.tilize_cycles

    def _latency(self, kernel: Kernel) -> float:
        """Starting the op: its kernels launched on a core, the last of its cores starting later
        by the chip's skew, then one NoC traversal to start the pipeline (interface plus average
        hops across the grid)."""
        target = self.target
        hops = (kernel.grid[0] + kernel.grid[1]) / 2
        traversal = (target.noc_interface_cycles + hops * target.noc_hop_cycles) / target.clock_hz
        return target.pipeline.launch_ns / NS + self._skew(kernel) + traversal

    def _skew(self, kernel: Kernel) -> float:
        """Seconds from the first of the op's cores starting to the last."""
        return self.target.pipeline.start_skew_ns / NS if kernel.cores_used > 1 else 0.0


def _bytes_by_path(kernel: Kernel) -> dict[str, float]:
    moved: dict[str, float] = {}
    for group in kernel.groups:
        for t in group.reads + group.writes:
            moved[t.path] = moved.get(t.path, 0.0) + t.bytes * len(group.cores)
    return moved
