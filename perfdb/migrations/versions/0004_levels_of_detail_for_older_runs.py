"""Levels of detail for runs stored before revision 0002.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22

Revision 0002 gave zones a level of detail, but the runs already stored kept lod = 16 (never
merged) and no markers, so their timelines were drawn zone by zone at every zoom. Compute their
levels and markers now, as storing a run does (perfdb.store.add_levels_of_detail). Runs stored
since list their tracks; the older ones are those with no track list.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from perfdb.store import add_levels_of_detail

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    for run_id in bind.execute(sa.text("SELECT id FROM runs WHERE CAST(tracks AS TEXT) = '[]' ORDER BY id")).scalars().all():
        add_levels_of_detail(bind, run_id)


def downgrade() -> None:
    pass  # the levels and markers are valid at 0003 too
