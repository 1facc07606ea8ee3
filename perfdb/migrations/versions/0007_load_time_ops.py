"""Runs gain their load-time work.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24

- runs get `load_ops`, the ops the compiler evaluates once when the model is loaded (const-eval),
  [{name, kind, duration_ns, bytes, bound, memory}] in the order they ran, and `load_ns`, their
  total. Runs stored before had no load-time work: they get none, and 0 ns.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as runs:
        runs.add_column(sa.Column("load_ops", sa.JSON(), nullable=False, server_default="[]"))
        runs.add_column(sa.Column("load_ns", sa.Float(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("runs") as runs:
        runs.drop_column("load_ns")
        runs.drop_column("load_ops")
