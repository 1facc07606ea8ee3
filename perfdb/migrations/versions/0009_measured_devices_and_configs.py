"""Op records keep the device a measured op ran on and the program config it ran with.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27

- op_records get `device` (a measured report's DEVICE ID; 0 for a simulated run, whose ops are one
  device's) and `config` (the program config a measured report names; "" before, and for simulated
  runs). Both have server defaults, so the upgrade rewrites no rows.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("op_records") as records:
        records.add_column(sa.Column("device", sa.SmallInteger(), nullable=False, server_default="0"))
        records.add_column(sa.Column("config", sa.Text(), nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("op_records") as records:
        records.drop_column("config")
        records.drop_column("device")
