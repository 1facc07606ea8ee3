"""Models and targets as tables of their own.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22

Runs carried their model's whole source text and their target's description inline, a copy per
run. Now `models` (name, source hash, text) and `targets` (name, description hash, description)
hold each once, keyed by name and hash, and runs point at them. Runs keep how the model and target
were asked for (model_ref, target_ref).
"""

from __future__ import annotations

import hashlib

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def _new_tables() -> None:
    op.create_table(
        "models",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(256), nullable=False),
        sa.Column("source_hash", sa.String(64), nullable=False),
        sa.Column("source_text", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("name", "source_hash", name="uq_models_name"),
    )
    op.create_table(
        "targets",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(256), nullable=False),
        sa.Column("description_hash", sa.String(64), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("name", "description_hash", name="uq_targets_name"),
    )


def upgrade() -> None:
    _new_tables()
    with op.batch_alter_table("runs") as runs:
        runs.add_column(sa.Column("model_id", sa.Integer(), nullable=True))
        runs.add_column(sa.Column("target_id", sa.Integer(), nullable=True))
    bind = op.get_bind()
    # one model per (name, hash) and one target per (name, description), with the runs pointed at them
    bind.execute(
        sa.text(
            "INSERT INTO models (name, source_hash, source_text, created_at) "
            "SELECT model_name, source_hash, MIN(source_text), MIN(created_at) FROM runs "
            "GROUP BY model_name, source_hash"
        )
    )
    bind.execute(
        sa.text(
            "UPDATE runs SET model_id = (SELECT models.id FROM models "
            "WHERE models.name = runs.model_name AND models.source_hash = runs.source_hash)"
        )
    )
    targets = bind.execute(
        sa.text(
            "SELECT target, COALESCE(target_text, ''), MIN(created_at) FROM runs "
            "GROUP BY target, COALESCE(target_text, '')"
        )
    ).all()
    for name, description, created_at in targets:  # the hash is computed here: SQL has no portable sha256
        digest = hashlib.sha256(description.encode()).hexdigest()
        bind.execute(
            sa.text(
                "INSERT INTO targets (name, description_hash, description, created_at) "
                "VALUES (:name, :hash, :description, :created_at)"
            ),
            {"name": name, "hash": digest, "description": description, "created_at": created_at},
        )
        target_id = bind.execute(
            sa.text("SELECT id FROM targets WHERE name = :name AND description_hash = :hash"),
            {"name": name, "hash": digest},
        ).scalar_one()
        bind.execute(
            sa.text(
                "UPDATE runs SET target_id = :id WHERE target = :name AND COALESCE(target_text, '') = :description"
            ),
            {"id": target_id, "name": name, "description": description},
        )
    with op.batch_alter_table("runs") as runs:
        runs.alter_column("model_id", existing_type=sa.Integer(), nullable=False)
        runs.alter_column("target_id", existing_type=sa.Integer(), nullable=False)
        runs.create_foreign_key("fk_runs_model_id_models", "models", ["model_id"], ["id"])
        runs.create_foreign_key("fk_runs_target_id_targets", "targets", ["target_id"], ["id"])
        runs.create_index("ix_runs_model_id", ["model_id"])
        runs.create_index("ix_runs_target_id", ["target_id"])
        for column in ("model_name", "source_hash", "source_text", "target", "target_text"):
            runs.drop_column(column)


def downgrade() -> None:
    with op.batch_alter_table("runs") as runs:
        runs.add_column(sa.Column("model_name", sa.String(256), nullable=True))
        runs.add_column(sa.Column("source_hash", sa.String(64), nullable=True))
        runs.add_column(sa.Column("source_text", sa.Text(), nullable=True))
        runs.add_column(sa.Column("target", sa.String(256), nullable=True))
        runs.add_column(sa.Column("target_text", sa.Text(), nullable=True))
    bind = op.get_bind()
    for column, source in (("model_name", "name"), ("source_hash", "source_hash"), ("source_text", "source_text")):
        bind.execute(
            sa.text(f"UPDATE runs SET {column} = (SELECT models.{source} FROM models WHERE models.id = runs.model_id)")
        )
    for column, source in (("target", "name"), ("target_text", "description")):
        bind.execute(
            sa.text(
                f"UPDATE runs SET {column} = (SELECT targets.{source} FROM targets WHERE targets.id = runs.target_id)"
            )
        )
    with op.batch_alter_table("runs") as runs:
        for column in ("model_name", "source_hash", "source_text", "target"):
            runs.alter_column(
                column, existing_type=sa.Text() if column == "source_text" else sa.String(256), nullable=False
            )
        runs.drop_index("ix_runs_target_id")
        runs.drop_index("ix_runs_model_id")
        runs.drop_constraint("fk_runs_target_id_targets", type_="foreignkey")
        runs.drop_constraint("fk_runs_model_id_models", type_="foreignkey")
        runs.drop_column("target_id")
        runs.drop_column("model_id")
    op.drop_table("targets")
    op.drop_table("models")
