"""Levels of detail for runs stored before revision 0002.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22

Revision 0002 gave zones a level of detail, but the runs already stored kept lod = 16 (never
merged) and no markers. This revision computed their levels and markers; revision 0005 now does
it for every run as it packs their zones into blocks, so there is nothing left to do here.
"""

from __future__ import annotations

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass  # revision 0005 computes every run's levels of detail


def downgrade() -> None:
    pass
