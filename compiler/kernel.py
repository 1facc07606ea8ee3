"""Per-core work: what the `kernel` level attaches to each op and what the simulator executes.

Cores doing identical work form one `CoreWork` group, so an even split over 64 cores is one group
and a split that does not divide evenly shows up as two or more groups (load imbalance).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Transfer:
    tensor: str
    path: str  # a memory name (dram, l1 = the core's own memory) or noc (another core's L1)
    bytes: float


@dataclass(frozen=True)
class Compute:
    engine: str  # matrix | vector | data
    tiles: int
    cycles: float
    fidelity: str | None = None


@dataclass(frozen=True)
class CoreWork:
    cores: tuple[tuple[int, int], ...]
    reads: tuple[Transfer, ...]
    compute: Compute
    writes: tuple[Transfer, ...]
    blocks: int  # pipeline steps: reader, compute and writer overlap block by block

    @property
    def read_bytes(self) -> float:
        return sum(t.bytes for t in self.reads)

    @property
    def write_bytes(self) -> float:
        return sum(t.bytes for t in self.writes)


@dataclass(frozen=True)
class Kernel:
    grid: tuple[int, int]
    groups: tuple[CoreWork, ...]

    @property
    def cores_used(self) -> int:
        return sum(len(g.cores) for g in self.groups)
