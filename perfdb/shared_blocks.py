"""A re-run's timeline blocks stored as its parent's: a run made from another by a change (an
override, say) holds most of its parent's zones, markers and counters, as they were before the
change and shifted in time after it. Its pages (perfdb.pages) are cut where the parent's were, so
such a block has a digest (perfdb.blocks.digest) one of the parent's has; it is stored as a row
with no data naming the block that has the rows (`source_id`) and the shift of their times.

A shared block always names a block with data of its own (the parent's, or the block the parent's
names in turn), so reading one is one join. A re-run lists its parent's names first, so the zones'
indexes into them mean the same in both runs."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
from sqlalchemy import ColumnElement, Select, func, select
from sqlalchemy.orm import Session

from tilescope.perfdb import blocks, pages
from tilescope.perfdb.schema import OpRecord, Run, TimelineBlock

_TABLE = TimelineBlock.__table__
_SOURCE = _TABLE.alias("source")


@dataclass(frozen=True)
class Parent:
    """What a re-run's blocks may be stored as: its parent's names, and by digest, the block holding
    those rows and where that block starts; its page size (perfdb.pages), or None."""

    names: list[str] = field(default_factory=list)
    by_digest: dict[bytes, tuple[int, float]] = field(default_factory=dict)
    page_ops: int | None = None

    def source(self, block: blocks.Block) -> tuple[int, float] | None:
        """(block id, shift) of the stored block holding `block`'s rows, or None."""
        found = self.by_digest.get(block.digest) if block.digest is not None else None
        return None if found is None else (found[0], block.start_ns - found[1])


def parent(session: Session, run_id: int) -> Parent:
    """The blocks of simulated run `run_id` a simulated re-run of it may be stored as (none for a
    measured run, which shares nothing with a simulation, or one stored before blocks kept digests)."""
    ops = session.scalar(
        select(func.count(OpRecord.id))
        .join(Run, Run.id == OpRecord.run_id)
        .where(OpRecord.run_id == run_id, Run.kind == "simulated")
    )
    if not ops:
        return Parent()
    b = _TABLE.c
    rows = session.execute(
        select(b.digest, func.coalesce(_SOURCE.c.id, b.id), func.coalesce(_SOURCE.c.start_ns, b.start_ns))
        .select_from(_TABLE.outerjoin(_SOURCE, _SOURCE.c.id == b.source_id))
        .where(b.run_id == run_id, b.digest.is_not(None))
    )
    by_digest = {digest: (source, start) for digest, source, start in rows}
    names = [blocks.unpack(data)[1] for _, _, data, _ in stored(session, run_id, blocks.NAMES)]
    return Parent(names[0] if names else [], by_digest, pages.page_ops(ops))


def stored(
    session: Session, run_id: int, kind: str, *where: ColumnElement[bool], order_by: Sequence[ColumnElement] = ()
) -> Iterator[tuple[str, str, bytes, float]]:
    """(track, kind, data, shift) of run `run_id`'s blocks of `kind` meeting `where` (conditions on
    TimelineBlock's columns): a shared block's data is the block's it names."""
    yield from session.execute(query(_TABLE.c.run_id == run_id, _TABLE.c.kind == kind, *where).order_by(*order_by))


def query(*where: ColumnElement[bool]) -> Select:
    b = _TABLE.c
    return (
        select(b.track, b.kind, func.coalesce(_SOURCE.c.data, b.data), b.shift_ns)
        .select_from(_TABLE.outerjoin(_SOURCE, _SOURCE.c.id == b.source_id))
        .where(*where)
    )


def columns_and_names(kind: str, data: bytes, shift_ns: float) -> tuple[dict[str, np.ndarray], list[str]]:
    """A stored block's columns, its times shifted as its row says, and its strings."""
    columns, strings = blocks.unpack(data)
    return blocks.shifted(kind, columns, shift_ns), strings


def own_bytes(session: Session, run_id: int) -> int:
    """The bytes of timeline data run `run_id` stores itself (none for the blocks it shares)."""
    return session.scalar(
        select(func.coalesce(func.sum(func.length(_TABLE.c.data)), 0)).where(_TABLE.c.run_id == run_id)
    )
