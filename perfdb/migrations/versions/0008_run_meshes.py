"""Runs keep the mesh their devices formed.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26

- runs get `mesh`, [[axis, size], ...] major to minor, so a diff of runs on different numbers of
  devices can name both meshes. Runs stored before get [], as a run on one device has: their
  device rows still give how many devices they ran on (perfdb.meshes).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as runs:
        runs.add_column(sa.Column("mesh", sa.JSON(), nullable=False, server_default="[]"))


def downgrade() -> None:
    with op.batch_alter_table("runs") as runs:
        runs.drop_column("mesh")
