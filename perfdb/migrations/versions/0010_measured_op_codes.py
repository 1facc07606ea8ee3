"""Op records keep the op code a measured report names, so a measured run's time is summed by op code.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27

- op_records get `op_code` (MatmulDeviceOperation, BinaryNgDeviceOperation, ...: what tt-metal's
  report calls the op; "" for simulated runs and runs stored before). A server default, so the
  upgrade rewrites no rows.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("op_records") as records:
        records.add_column(sa.Column("op_code", sa.String(128), nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("op_records") as records:
        records.drop_column("op_code")
