"""Op records keep the line of the model's source that made them, so a run's time is summed by
line of Python.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-28

- op_records get `code_line` ("model.py:57": the file and line a PyTorch model's op came from)
  and `code` (that line's code); "" for models without source lines and runs stored before. A
  server default, so the upgrade rewrites no rows.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("op_records") as records:
        records.add_column(sa.Column("code_line", sa.Text(), nullable=False, server_default=""))
        records.add_column(sa.Column("code", sa.Text(), nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("op_records") as records:
        records.drop_column("code")
        records.drop_column("code_line")
