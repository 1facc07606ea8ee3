"""A re-run's timeline blocks may be its parent's: a block keeps a digest of its rows, and a block
stored as another's names it with the shift of its times.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-28

- timeline_blocks get `digest` (null for blocks stored before: never shared), `source_id` (the
  block whose rows it holds, RESTRICT on delete) and `shift_ns` (0 for blocks stored before).
  SQLite's batch mode copies the table to add the reference.
"""

from __future__ import annotations

import json

import numpy as np
import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

FK = "fk_timeline_blocks_source_id_timeline_blocks"
INDEX = "ix_timeline_blocks_source_id"


def upgrade() -> None:
    # SQLite alters no constraint in place: batch mode copies the table (perfdb.migrate reclaims
    # the space after)
    with op.batch_alter_table("timeline_blocks") as table:
        table.add_column(sa.Column("digest", sa.LargeBinary(), nullable=True))
        table.add_column(sa.Column("source_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True))
        table.add_column(sa.Column("shift_ns", sa.Float(), nullable=False, server_default="0"))
        table.create_foreign_key(FK, "timeline_blocks", ["source_id"], ["id"], ondelete="RESTRICT")
        table.create_index(INDEX, ["source_id"])


def downgrade() -> None:
    # a block stored as another's gets that block's rows, shifted, before the columns go
    blocks = sa.table(
        "timeline_blocks",
        sa.column("id"),
        sa.column("data", sa.LargeBinary),
        sa.column("kind"),
        sa.column("source_id"),
        sa.column("shift_ns"),
    )
    connection = op.get_bind()
    shared = connection.execute(
        sa.select(blocks.c.id, blocks.c.kind, blocks.c.source_id, blocks.c.shift_ns).where(
            blocks.c.source_id.is_not(None)
        )
    ).all()
    for block_id, kind, source_id, shift in shared:
        data = connection.scalar(sa.select(blocks.c.data).where(blocks.c.id == source_id))
        connection.execute(
            blocks.update().where(blocks.c.id == block_id).values(data=_shifted(kind, data, shift), source_id=None)
        )
    with op.batch_alter_table("timeline_blocks") as table:
        table.drop_index(INDEX)
        table.drop_constraint(FK, type_="foreignkey")
        table.drop_column("source_id")
        table.drop_column("shift_ns")
        table.drop_column("digest")


def _shifted(kind: str, data: bytes, shift: float) -> bytes:
    """A packed block (perfdb.blocks as of this revision) with `shift` added to its times."""
    size = int.from_bytes(data[:4], "little")
    header = json.loads(data[4 : 4 + size])
    times = {"zones": ("start", "end"), "markers": ("start", "end"), "counters": ("t",)}.get(kind, ())
    parts, at, rows = [data[: 4 + size]], 4 + size, header["rows"]
    for name, dtype in header["columns"]:
        dtype = np.dtype(dtype)
        column = np.frombuffer(data, dtype, rows, at)
        at += rows * dtype.itemsize
        parts.append((column + shift if name in times else column).astype(dtype).tobytes())
    return b"".join(parts)
