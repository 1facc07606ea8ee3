"""Runs lose `status`.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24

Every run was stored with status "ok", and nothing read it. Downgrading gives every run "ok" again.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as runs:
        runs.drop_column("status")


def downgrade() -> None:
    with op.batch_alter_table("runs") as runs:
        runs.add_column(sa.Column("status", sa.String(16), nullable=False, server_default="ok"))
