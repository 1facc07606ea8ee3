"""Runs keep whether they were compiled with data-tiling, so a run can be made again as it was and a
diff names the setting.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-28

- runs get `data_tiling` (IREE's flag: matmul operands packed into the target's inner tiles); false
  for runs stored before. A server default, so the upgrade rewrites no rows.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as runs:
        runs.add_column(sa.Column("data_tiling", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("runs") as runs:
        runs.drop_column("data_tiling")
