"""The initial schema: runs, their per-op records, timeline zones and counters.

Revision ID: 0001
Revises:
Create Date: 2026-11-20

The tables are declared here, not imported from perfdb.schema, so this revision keeps creating the
same schema whatever later revisions change. perfdb.migrate also uses `schema()` to adopt a database
that tilescope created before it used Alembic (tables present, no alembic_version).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

# constraint and index names, as perfdb.schema.NAMING had them at this revision
NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
# SQLite autoincrements only an INTEGER primary key
ROW_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def schema() -> sa.MetaData:
    metadata = sa.MetaData(naming_convention=NAMING)
    sa.Table(
        "runs",
        metadata,
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("model_ref", sa.String(1024), nullable=False),
        sa.Column("model_name", sa.String(256), nullable=False),
        sa.Column("source_hash", sa.String(64), nullable=False),
        sa.Column("source_text", sa.Text(), nullable=False),
        sa.Column("target", sa.String(256), nullable=False),
        sa.Column("target_ref", sa.String(1024), nullable=True),
        sa.Column("target_text", sa.Text(), nullable=True),
        sa.Column("dispatch", sa.String(16), nullable=False, default="host"),
        sa.Column("policy", sa.String(32), nullable=False, default="dram-interleaved"),
        sa.Column("l1_usage_cap", sa.Float(), nullable=False, default=0.8),
        sa.Column("overrides", sa.JSON(), nullable=False),
        sa.Column("override_outcomes", sa.JSON(), nullable=False),
        sa.Column("label", sa.String(512), nullable=False, default=""),
        sa.Column("parent_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="SET NULL"), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("status", sa.String(16), nullable=False, default="ok"),
        sa.Column("total_ns", sa.Float(), nullable=False),
        sa.Column("device_ns", sa.Float(), nullable=False),
    )
    sa.Table(
        "op_records",
        metadata,
        sa.Column("id", ROW_ID, primary_key=True),
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False, index=True),
        sa.Column("name", sa.String(512), nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("start_ns", sa.Float(), nullable=False),
        sa.Column("duration_ns", sa.Float(), nullable=False),
        sa.Column("flops", sa.BigInteger(), nullable=False),
        sa.Column("bytes", sa.JSON(), nullable=False),
        sa.Column("bound", sa.String(16), nullable=False),
        sa.Column("why", sa.Text(), nullable=False, default=""),
        sa.Column("memory", sa.String(32), nullable=False),
        sa.Column("grid", sa.String(16), nullable=False),
        sa.Column("cores", sa.Integer(), nullable=False),
        sa.Column("roofline_ns", sa.Float(), nullable=False),
        sa.Column("pct_peak", sa.Float(), nullable=False, default=0.0),
        sa.Column("dispatch_wait_ns", sa.Float(), nullable=False, default=0.0),
    )
    sa.Table(
        "zones",
        metadata,
        sa.Column("id", ROW_ID, primary_key=True),
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("track", sa.String(64), nullable=False),
        sa.Column("depth", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(512), nullable=False),
        sa.Column("start_ns", sa.Float(), nullable=False),
        sa.Column("end_ns", sa.Float(), nullable=False),
        sa.Column("op", sa.String(512), nullable=False),
        sa.Index("ix_zones_run_start", "run_id", "start_ns"),
    )
    sa.Table(
        "counters",
        metadata,
        sa.Column("id", ROW_ID, primary_key=True),
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("track", sa.String(64), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("t_ns", sa.Float(), nullable=False),
        sa.Column("value", sa.Float(), nullable=False),
        sa.Index("ix_counters_run_track_t", "run_id", "track", "t_ns"),
    )
    return metadata


def upgrade() -> None:
    schema().create_all(op.get_bind())  # tables, then their indexes


def downgrade() -> None:
    schema().drop_all(op.get_bind())
