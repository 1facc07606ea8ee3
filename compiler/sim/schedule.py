"""When each op runs: the clocks of the device, the host and the links.

    the host issues ops one after another, dispatch_ns each (a captured trace: none)
    an op starts once the host has issued it and its operands are written, and
        on the cores: once the device is free (one op at a time, every device at once; in a
            program placing each op on a device, once its device is free, the others going on)
        a collective, or a transfer between devices: once its links are free; the cores go on
        load-time (const-eval): once the previous load-time op is done, on a clock of its own

An op that waited longer for the host than it ran is dispatch-bound.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tilescope.compiler.ir.graph import Op
from tilescope.compiler.sim.records import OpTiming, ticks


@dataclass
class Clocks:
    dispatch_ns: float  # the host's time to issue one op
    device_free: float = 0.0
    host_issued: float = 0.0  # when the host has issued the latest op
    load_free: float = 0.0  # the end of the load-time ops so far
    ready: dict[str, float] = field(default_factory=dict)  # when each tensor is written
    link_free: dict[str, float] = field(default_factory=dict)  # per link track (tracks.link_track)
    # a program placing each op on a device of its own: each device's cores, free from when
    placed_free: dict[int, float] = field(default_factory=dict)

    @property
    def total_ns(self) -> float:
        """When the step's last op ends, on the cores or on the links."""
        return max([self.device_free, *self.placed_free.values(), *self.link_free.values()])

    def view(self, op: Op) -> None:
        """An op with no launch (a constant, a view): its results are ready with its operands."""
        after = max((self.ready.get(t, 0.0) for t in op.inputs), default=0.0)
        self.ready.update(dict.fromkeys(op.outputs, after))

    def __post_init__(self) -> None:
        self.dispatch_ns = ticks(self.dispatch_ns)

    def at_load(self, timing: OpTiming) -> OpTiming:
        placed = timing.replace(start_ns=self.load_free, duration_ns=ticks(timing.duration_ns))
        self.load_free = placed.end_ns
        return placed

    def issue(self, op: Op) -> float:
        """The host issues `op`: when it may start, by the host and its operands."""
        self.host_issued += self.dispatch_ns
        return max(self.host_issued, max((self.ready.get(t, 0.0) for t in op.inputs), default=0.0))

    def on_device(self, op: Op, timing: OpTiming, issued: float, device: int | None = None) -> OpTiming:
        """`timing` placed on the device once it is free, `issued` (by issue) and after; with
        `device`, on that device of a program placing its ops (the others go on meanwhile)."""
        free = self.device_free if device is None else self.placed_free.get(device, 0.0)
        start, duration = max(free, issued), ticks(timing.duration_ns)
        waited = max(0.0, self.host_issued - free)
        if waited > duration and timing.bound != "none":
            why = f"dispatch-bound: waited {waited / 1e3:.1f} us for the host; {timing.why}"
            placed = timing.replace(
                start_ns=start, duration_ns=duration, dispatch_wait_ns=waited, bound="dispatch", why=why
            )
        else:
            placed = timing.replace(start_ns=start, duration_ns=duration, dispatch_wait_ns=waited)
        if device is None:
            self.device_free = placed.end_ns
        else:
            self.placed_free[device] = placed.end_ns
        self.ready.update(dict.fromkeys(op.outputs, placed.end_ns))
        return placed

    def on_links(self, op: Op, track: str, timing: OpTiming, issued: float) -> OpTiming:
        """`timing` placed on the link track `track` once it is free, `issued` and after."""
        placed = timing.replace(
            start_ns=max(self.link_free.get(track, 0.0), issued), duration_ns=ticks(timing.duration_ns)
        )
        self.link_free[track] = self.ready[op.outputs[0]] = placed.end_ns
        return placed
