"""Zones, level-of-detail markers and counter samples packed in blocks.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22

A row per zone made storing a run cost about 5 us per zone and the database grow by ~200 bytes a
zone: a large model's run holds millions. `timeline_blocks` holds up to 2048 zones (or markers, or
counter samples) of one track per row, as columns (perfdb.blocks), with the levels of detail and
the time range they cover, and each run's names once. Each run's zones are read, given their
levels and markers again (perfdb.lod) and packed with its counters; then `zones`, `zone_markers`
and `counters` are dropped. Downgrading unpacks them into rows again.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from perfdb import blocks
from perfdb.store import run_blocks, write_blocks, zone_columns

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "timeline_blocks",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True),
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("level", sa.SmallInteger(), nullable=False),
        sa.Column("top_level", sa.SmallInteger(), nullable=False),
        sa.Column("track", sa.String(64), nullable=False),
        sa.Column("start_ns", sa.Float(), nullable=False),
        sa.Column("end_ns", sa.Float(), nullable=False),
        sa.Column("rows", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
    )
    op.create_index(
        "ix_timeline_blocks_run_kind_track_start", "timeline_blocks", ["run_id", "kind", "track", "start_ns"]
    )
    bind = op.get_bind()
    runs = sa.table("runs", sa.column("id", sa.Integer()), sa.column("tracks", sa.JSON()))
    for run_id, tracks in bind.execute(sa.select(runs.c.id, runs.c.tracks).order_by(runs.c.id)).all():
        zones = bind.execute(
            sa.text("SELECT track, depth, name, start_ns, end_ns, op FROM zones WHERE run_id = :run ORDER BY id"),
            {"run": run_id},
        ).all()
        counters = bind.execute(
            sa.text("SELECT track, name, t_ns, value FROM counters WHERE run_id = :run ORDER BY id"), {"run": run_id}
        ).all()
        tracks = list(tracks or [])
        listed, columns = zone_columns(zones, tracks)
        if listed != tracks:  # runs before 0002 listed none
            bind.execute(runs.update().where(runs.c.id == run_id).values(tracks=listed))
        write_blocks(bind, run_id, run_blocks(listed, columns, counters))
    op.drop_table("zone_markers")
    op.drop_table("zones")
    op.drop_table("counters")


def downgrade() -> None:
    zones = op.create_table(
        "zones",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True),
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("track", sa.String(64), nullable=False),
        sa.Column("depth", sa.Integer(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("start_ns", sa.Float(), nullable=False),
        sa.Column("end_ns", sa.Float(), nullable=False),
        sa.Column("op", sa.Text(), nullable=False),
        sa.Column("lod", sa.SmallInteger(), nullable=False, server_default="16"),
    )
    op.create_index("ix_zones_run_lod_track_start", "zones", ["run_id", "lod", "track", "start_ns"])
    markers = op.create_table(
        "zone_markers",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True),
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("level", sa.SmallInteger(), nullable=False),
        sa.Column("track", sa.String(64), nullable=False),
        sa.Column("depth", sa.Integer(), nullable=False),
        sa.Column("start_ns", sa.Float(), nullable=False),
        sa.Column("end_ns", sa.Float(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("busy_ns", sa.Float(), nullable=False),
    )
    op.create_index("ix_zone_markers_run_level_track_start", "zone_markers", ["run_id", "level", "track", "start_ns"])
    counters = op.create_table(
        "counters",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True),
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("track", sa.String(64), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("t_ns", sa.Float(), nullable=False),
        sa.Column("value", sa.Float(), nullable=False),
    )
    op.create_index("ix_counters_run_track_t", "counters", ["run_id", "track", "t_ns"])
    bind = op.get_bind()
    names, shown = {}, {}  # per run: its names; stored track -> the tracks that share its zones
    for run_id, data in bind.execute(sa.text("SELECT run_id, data FROM timeline_blocks WHERE kind = 'names'")):
        names[run_id], same_as = blocks.unpack_names(data)
        shown[run_id] = {}
        for alias, track in same_as.items():
            shown[run_id].setdefault(track, []).append(alias)
    for block in bind.execute(
        sa.text("SELECT run_id, kind, track, data FROM timeline_blocks WHERE kind != 'names' ORDER BY id")
    ):
        shared = shown[block.run_id].get(block.track, []) if block.kind != blocks.COUNTERS else []
        for track in [block.track, *shared]:
            _unpack(bind, (zones, markers, counters), names[block.run_id], block, track)
    op.drop_table("timeline_blocks")


def _unpack(bind, tables, strings, block, track) -> None:
    """Insert one block's rows into the per-row tables, on `track`."""
    zones, markers, counters = tables
    rows = blocks.unpack(block.data)[0]
    common = {"run_id": block.run_id, "track": track}
    if block.kind == blocks.COUNTERS:
        bind.execute(
            counters.insert(),
            [
                {**common, "name": strings[n], "t_ns": t, "value": v}
                for n, t, v in zip(*(rows[c].tolist() for c in ("name", "t", "value")))
            ],
        )
    elif block.kind == blocks.ZONES:
        bind.execute(
            zones.insert(),
            [
                {**common, "depth": d, "name": strings[n], "start_ns": s, "end_ns": e, "op": strings[o], "lod": lod}
                for d, s, e, n, o, lod in zip(
                    *(rows[c].tolist() for c in ("depth", "start", "end", "name", "op", "lod"))
                )
            ],
        )
    else:
        bind.execute(
            markers.insert(),
            [
                {**common, "level": lv, "depth": d, "start_ns": s, "end_ns": e, "count": n, "busy_ns": b}
                for lv, d, s, e, n, b in zip(
                    *(rows[c].tolist() for c in ("level", "depth", "start", "end", "count", "busy"))
                )
            ],
        )
