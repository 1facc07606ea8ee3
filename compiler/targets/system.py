"""Systems of several devices and the cost of collectives over their links.

A system is a grid of identical devices (`mesh`, rows x cols, numbered row-major as Shardy numbers
a mesh's devices) joined either by point-to-point links between grid neighbours (`fabric = "mesh"`,
e.g. Wormhole's ethernet) or by one port per device into a switch (`fabric = "switch"`, e.g. PCIe).
A lone chip is a system of one device, with no links.

The cost of a collective is the alpha-beta model of Thakur, Rabenseifner and Gropp, "Optimization
of Collective Communication Operations in MPICH" (IJHPCA 2005): `steps` latencies plus the bytes
that cross the busiest link in one direction over its bandwidth. Which algorithm runs depends on how
the group's devices sit on the grid (see `System.route`); docs/simulator.md, "Systems", gives the
formulas.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tilescope.compiler.errors import TargetError

FABRICS = ("mesh", "switch")
KINDS = ("all_gather", "reduce_scatter", "all_reduce", "all_to_all", "collective_permute", "all_slice")


@dataclass(frozen=True)
class Route:
    """How a group of devices talks: the algorithm, the link hops between consecutive members,
    and how many groups of the same axis share each of those links (their interleaved members)."""

    algorithm: str  # ring, line, switch (halving_doubling or ring through the switch), none
    hops: int = 1
    shared_by: int = 1


@dataclass(frozen=True)
class CollectiveCost:
    algorithm: str
    steps: int  # latency-bound rounds, each one hop-path's latency
    bytes_per_device: float  # what each device sends, over all its links
    link_bytes: float  # what crosses the busiest link in one direction
    seconds: float


@dataclass(frozen=True)
class System:
    name: str = "single"
    description: str = "one device"
    device: str = ""  # the device target's name
    mesh: tuple[int, int] = (1, 1)  # rows x cols of devices
    link_bytes_per_s: float = 0.0  # one direction of one link (mesh) or of a device's port (switch)
    link_latency_ns: float = 0.0  # per hop (mesh) or per pass through the switch
    links_per_neighbour: int = 1  # parallel links between two neighbours (or port lanes into the switch)
    wraps: tuple[bool, bool] = (False, False)  # rows, cols: does that dimension close into a ring
    fabric: str = "mesh"
    assumed: tuple[str, ...] = ()  # keys no public document gives

    @property
    def devices(self) -> int:
        return self.mesh[0] * self.mesh[1]

    @property
    def bytes_per_s(self) -> float:
        """What one neighbour pair (or one switch port) carries per direction over all its links."""
        return self.link_bytes_per_s * self.links_per_neighbour

    def members(self, group: int, stride: int) -> list[tuple[int, int]]:
        """(row, col) of the group holding device 0: devices 0, stride, 2*stride, ..."""
        last = (group - 1) * stride
        if group < 1 or stride < 1 or last >= self.devices:
            raise TargetError(
                f"{self.name}: a group of {group} devices {stride} apart does not fit its {self.devices} devices"
            )
        return [divmod(k * stride, self.mesh[1]) for k in range(group)]

    def route(self, group: int, stride: int = 1) -> Route:
        """How a mesh axis of `group` devices, `stride` apart in device numbers, maps onto links."""
        places = self.members(group, stride)
        if group == 1:
            return Route("none")
        if self.fabric == "switch":
            return Route("switch")  # every pair is one pass through the switch
        rows, cols = {r for r, _ in places}, {c for _, c in places}
        if len(rows) == 1 or len(cols) == 1:  # along one dimension of the grid
            dim = 1 if len(rows) == 1 else 0
            spacing = places[1][dim] - places[0][dim]
            # a wrapped dimension the group spans evenly closes into a ring; a ring of two is a line
            ring = self.wraps[dim] and group * spacing == self.mesh[dim] and group > 2
            return Route("ring" if ring else "line", spacing, spacing)
        if _is_block(places):
            # a snake through a block of at least 2x2 closes into a cycle when the count is even
            # (a grid graph is bipartite: an odd one has no Hamiltonian cycle)
            return Route("ring" if group % 2 == 0 else "line")
        hops = max(abs(a[0] - b[0]) + abs(a[1] - b[1]) for a, b in zip(places, places[1:]))
        return Route("line", hops, hops)

    def collective(self, kind: str, group: int, nbytes: float, stride: int = 1) -> CollectiveCost:
        """Cost of one collective over a group of `group` devices `stride` apart. `nbytes` is the
        full tensor: the gathered result (all_gather), each device's input (reduce_scatter,
        all_reduce, all_to_all) or what each device sends (collective_permute)."""
        if kind not in KINDS:
            raise TargetError(f"unknown collective {kind!r}; one of {', '.join(KINDS)}")
        route = self.route(group, stride)
        if kind == "all_slice" or route.algorithm == "none" or nbytes <= 0:
            return CollectiveCost(route.algorithm, 0, 0.0, 0.0, 0.0)
        algorithm, steps, per_device, link = _counts(kind, route.algorithm, group, float(nbytes))
        seconds = steps * route.hops * self.link_latency_ns * 1e-9 + link * route.shared_by / self.bytes_per_s
        return CollectiveCost(algorithm, steps, per_device, link, seconds)

    def transfer(self, source: int, target: int, nbytes: float) -> CollectiveCost:
        """A tensor of `nbytes` sent from device `source` to device `target` (a multi-device
        program's transfer): one pass through the switch, or the grid hops between them, each a
        latency, and the bytes over one neighbour pair's links."""
        for device in (source, target):
            if not 0 <= device < self.devices:
                raise TargetError(f"{self.name}: no device {device} (it has {self.devices})")
        (r0, c0), (r1, c1) = divmod(source, self.mesh[1]), divmod(target, self.mesh[1])
        hops = 1 if self.fabric == "switch" else abs(r0 - r1) + abs(c0 - c1)
        if hops == 0 or nbytes <= 0:
            return CollectiveCost("none", 0, 0.0, 0.0, 0.0)
        seconds = hops * self.link_latency_ns * 1e-9 + nbytes / self.bytes_per_s
        return CollectiveCost("point_to_point", hops, float(nbytes), float(nbytes), seconds)


SINGLE_DEVICE = System()


def _is_block(places: list[tuple[int, int]]) -> bool:
    """Do the places fill a rectangle of at least 2x2 devices?"""
    rows, cols = {r for r, _ in places}, {c for _, c in places}
    full = len(places) == len(rows) * len(cols) and max(rows) - min(rows) + 1 == len(rows)
    return full and max(cols) - min(cols) + 1 == len(cols) and min(len(rows), len(cols)) >= 2


def _counts(kind: str, algorithm: str, n: int, size: float) -> tuple[str, int, float, float]:
    """(algorithm, steps, bytes each device sends, bytes over the busiest link direction)."""
    share = (n - 1) / n * size  # what each device sends in an all-gather or a reduce-scatter
    if algorithm == "switch":
        return _switch_counts(kind, n, size, share)
    # A ring runs two counter-rotating rings, each on half the data: every link direction carries
    # half of a one-way ring's bytes. A line sends both ways from each device; its end links carry
    # every other device's piece in one direction (tt-metal tech_reports/EthernetMultichip,
    # CclDeveloperGuide.md: "bidirectional" and "line" all-gather).
    ways = 2 if algorithm == "ring" else 1
    if kind in ("all_gather", "reduce_scatter"):
        return algorithm, n - 1, share, share / ways
    if kind == "all_reduce":  # reduce-scatter, then all-gather (Rabenseifner's ring)
        return algorithm, 2 * (n - 1), 2 * share, 2 * share / ways
    if kind == "all_to_all":
        # each piece takes the shortest path: on a ring the load spreads over all 2n link
        # directions; on a line the middle link carries every piece that crosses it
        if algorithm == "ring":
            distance = sum(min(k, n - k) for k in range(1, n))
            return algorithm, n - 1, share, size * distance / (2 * n)
        return algorithm, n - 1, share, (n // 2) * ((n + 1) // 2) * size / n
    return algorithm, 1, size, size  # collective_permute: a shift to the next device


def _switch_counts(kind: str, n: int, size: float, share: float) -> tuple[str, int, float, float]:
    """Through a non-blocking switch every pair is one pass, so MPICH's recursive halving and
    doubling take log2(n) steps at the bandwidth-optimal byte count when n is a power of two;
    otherwise the ring runs through the switch. A device's port carries all it sends."""
    power_of_two = n & (n - 1) == 0
    name, steps = ("halving_doubling", int(math.log2(n))) if power_of_two else ("ring", n - 1)
    if kind in ("all_gather", "reduce_scatter"):
        return name, steps, share, share
    if kind == "all_reduce":
        return name, 2 * steps, 2 * share, 2 * share
    if kind == "all_to_all":  # pairwise exchange: n - 1 rounds, one piece each
        return "pairwise", n - 1, share, share
    return "direct", 1, size, size
