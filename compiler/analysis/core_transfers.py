"""A core's reads and writes of a tensor, by the path each byte takes: its own shard in the core's
memory, DRAM, the NoC from other cores, or a multicast from the core that fetched it for all.
Where the tensor lives and the grid the op runs on decide which."""

from __future__ import annotations

from dataclasses import dataclass, replace

from tilescope.compiler.ir.core_work import MCAST, NOC, Transfer
from tilescope.compiler.ir.graph import Layout, Tensor
from tilescope.compiler.ir.tiles import shard_bytes
from tilescope.compiler.targets.chip import Target


@dataclass(frozen=True)
class CoreTransfers:
    target: Target

    def path(self, layout: Layout, grid: tuple[int, int]) -> str:
        """How a core on `grid` reaches a tensor laid out as `layout`: its own memory for a shard
        on the same grid, the NoC for another core's memory, else the memory it lives in."""
        memory = self.target.memories[layout.memory]
        if memory.scope == "core":
            return memory.name if layout.sharded and layout.grid == grid else NOC
        return memory.name

    def is_local(self, tensor: Tensor, grid: tuple[int, int]) -> bool:
        path = self.path(tensor.layout, grid)
        return path in self.target.memories and self.target.memories[path].scope == "core"

    def moves(
        self, tensor: Tensor, nbytes: float, grid: tuple[int, int], rest: str = NOC, pages: int = 0
    ) -> tuple[Transfer, ...]:
        """A core's reads (or writes) of `nbytes` of `tensor`, in `pages` row-major transactions
        when it waits on each. From a shard on the op's own grid, a core reaches at most its own
        shard locally (no transaction); the rest comes from other cores via `rest`."""
        if not self.is_local(tensor, grid):
            return (Transfer(tensor.name, self.path(tensor.layout, grid), nbytes, pages),)
        local = min(nbytes, shard_bytes(tensor, tensor.layout))
        moves = [Transfer(tensor.name, tensor.layout.memory, local)]
        if nbytes > local:
            remote = pages and max(1, round(pages * (nbytes - local) / nbytes))
            moves.append(Transfer(tensor.name, rest, nbytes - local, remote))
        return tuple(moves)

    def operand(self, tensor: Tensor, nbytes: float, grid: tuple[int, int], sender: bool) -> tuple[Transfer, ...]:
        """A multicast operand: the sender fetches it from where it lives, receivers get it by
        multicast; from shards on the grid, every core has its piece and receives the rest. Without
        multicast on the target, every core fetches its own copy."""
        if not self.target.noc_multicast:
            return self.moves(tensor, nbytes, grid)
        if sender or self.is_local(tensor, grid):
            return self.moves(tensor, nbytes, grid, rest=MCAST)
        return (Transfer(tensor.name, MCAST, nbytes),)

    def chained(
        self, tensor: Tensor, nbytes: float, grid: tuple[int, int], hops: int, passes_on: bool, by_writer: bool
    ) -> tuple[Transfer, ...]:
        """An operand passed core to core (ttnn's minimal matmul): the chain's first core fetches
        it where it lives, the others get it from the core before them (`hops` up the chain), and
        each but the last writes it on to the next, on the same RISC-V, after it has it."""
        got = self.moves(tensor, nbytes, grid) if hops == 0 else (Transfer(tensor.name, NOC, nbytes, hops=hops),)
        passed = (Transfer(tensor.name, NOC, nbytes),) if passes_on else ()
        return tuple(replace(t, by_writer=by_writer) for t in (*got, *passed))
