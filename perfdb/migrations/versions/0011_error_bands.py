"""Op records keep the error band of their prediction, so a diff can say whether a change is larger
than the model's error.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-27

- op_records get `error_band` (the share of an op's predicted time about two measurements in three
  fall within, from its target's [error_bands]); NULL for measured ops and runs stored before. No
  default, so the upgrade rewrites no rows.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("op_records") as records:
        records.add_column(sa.Column("error_band", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("op_records") as records:
        records.drop_column("error_band")
