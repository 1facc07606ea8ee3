"""Level-of-detail timeline, measured imports, and per-op tensors.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22

- zones get `lod` (the level of detail from which they are drawn merged: see perfdb.lod) and an
  index that the timeline window query walks per level, track and time; `zone_markers` hold, per
  level, the zones too short to draw merged into one marker per track and bucket;
- runs get `kind` (simulated or measured) and `tracks` (their timeline tracks, for the window query);
  `measured_imports` record where a measured run came from and which rows were bad;
- op_records get the op's level, math fidelity, tensors (shapes, dtypes, layouts) and its ideal
  compute and memory times, for the ops perf CSV; op and zone names become unbounded text.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

ROW_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    with op.batch_alter_table("runs") as runs:
        runs.add_column(sa.Column("kind", sa.String(16), nullable=False, server_default="simulated"))
        runs.add_column(sa.Column("tracks", sa.JSON(), nullable=False, server_default="[]"))
    with op.batch_alter_table("op_records") as records:
        records.alter_column("name", type_=sa.Text(), existing_type=sa.String(512), existing_nullable=False)
        records.add_column(sa.Column("level", sa.String(16), nullable=False, server_default="kernel"))
        records.add_column(sa.Column("fidelity", sa.String(16), nullable=False, server_default=""))
        records.add_column(sa.Column("tensors", sa.JSON(), nullable=False, server_default="[]"))
        records.add_column(sa.Column("compute_ns", sa.Float(), nullable=False, server_default="0"))
        records.add_column(sa.Column("bandwidth_ns", sa.Float(), nullable=False, server_default="0"))
    with op.batch_alter_table("zones") as zones:
        zones.alter_column("name", type_=sa.Text(), existing_type=sa.String(512), existing_nullable=False)
        zones.alter_column("op", type_=sa.Text(), existing_type=sa.String(512), existing_nullable=False)
        # zones stored before: never merged, drawn one by one at every zoom (they have no markers)
        zones.add_column(sa.Column("lod", sa.SmallInteger(), nullable=False, server_default="16"))
        zones.drop_index("ix_zones_run_start")
        zones.create_index("ix_zones_run_lod_track_start", ["run_id", "lod", "track", "start_ns"])
    op.create_table(
        "zone_markers",
        sa.Column("id", ROW_ID, primary_key=True),
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("level", sa.SmallInteger(), nullable=False),
        sa.Column("track", sa.String(64), nullable=False),
        sa.Column("depth", sa.Integer(), nullable=False),
        sa.Column("start_ns", sa.Float(), nullable=False),
        sa.Column("end_ns", sa.Float(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("busy_ns", sa.Float(), nullable=False),
        sa.Index("ix_zone_markers_run_level_track_start", "run_id", "level", "track", "start_ns"),
    )
    op.create_table(
        "measured_imports",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False, index=True),
        sa.Column("source", sa.String(1024), nullable=False),
        sa.Column("imported_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("rows", sa.Integer(), nullable=False),
        sa.Column("matched", sa.Integer(), nullable=False),
        sa.Column("problems", sa.JSON(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("measured_imports")
    op.drop_table("zone_markers")
    with op.batch_alter_table("zones") as zones:
        zones.drop_index("ix_zones_run_lod_track_start")
        zones.create_index("ix_zones_run_start", ["run_id", "start_ns"])
        zones.drop_column("lod")
        zones.alter_column("op", type_=sa.String(512), existing_type=sa.Text(), existing_nullable=False)
        zones.alter_column("name", type_=sa.String(512), existing_type=sa.Text(), existing_nullable=False)
    with op.batch_alter_table("op_records") as records:
        for column in ("bandwidth_ns", "compute_ns", "tensors", "fidelity", "level"):
            records.drop_column(column)
        records.alter_column("name", type_=sa.String(512), existing_type=sa.Text(), existing_nullable=False)
    with op.batch_alter_table("runs") as runs:
        runs.drop_column("tracks")
        runs.drop_column("kind")
