"""Alembic migrations: an empty database, a current one, and one made before Alembic, on SQLite and
(when the suite has it) PostgreSQL."""

from __future__ import annotations

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, inspect, text

from tilescope.perfdb.engine import DatabaseError, open_db, session_factory
from tilescope.perfdb.migrate import config, current, head, upgrade
from tilescope.perfdb.timeline import counters, timeline_window, zones
from tilescope.perfdb.runs import get_run, list_runs, op_records
from tilescope.perfdb.records import ZoneColumns
from tilescope.perfdb.schema import Base
from tilescope.perfdb.store import save_run

from .test_store import ZONES, _new_run

COUNTERS = [("core 0,0", "l1_bytes", 0.0, 1024.0), ("dram", "dram_bw", 5.0, 2.5e11)]


def shape(url: str) -> dict:
    """Every table's columns, primary key, foreign keys and indexes, as the database reports them."""
    engine = create_engine(url)
    inspector = inspect(engine)
    tables = {}
    for table in sorted(set(inspector.get_table_names()) - {"alembic_version"}):
        tables[table] = {
            "columns": [(c["name"], str(c["type"]), c["nullable"], c["default"]) for c in inspector.get_columns(table)],
            "pk": inspector.get_pk_constraint(table),
            "fks": sorted(
                (fk["name"], tuple(fk["constrained_columns"]), fk["referred_table"], fk["options"].get("ondelete"))
                for fk in inspector.get_foreign_keys(table)
            ),
            "indexes": sorted(
                (i["name"], tuple(i["column_names"]), bool(i["unique"])) for i in inspector.get_indexes(table)
            ),
        }
    engine.dispose()
    return tables


def revision(url: str) -> str | None:
    engine = create_engine(url)
    with engine.connect() as connection:
        found = current(connection)
    engine.dispose()
    return found


def initial_schema():
    """The tables as revision 0001 declares them."""
    from tilescope.perfdb.migrate import _scripts

    return _scripts().get_revision("0001").module.schema()


def pre_alembic(url: str):
    """A database as tilescope made it before Alembic (create_all of that day's tables, no
    alembic_version), with one run."""
    from datetime import datetime, timezone

    engine = create_engine(url)
    tables = initial_schema()
    tables.create_all(engine)
    new = _new_run()
    with engine.begin() as connection:
        run_id = connection.execute(
            tables.tables["runs"]
            .insert()
            .values(
                model_ref=new.model_ref,
                model_name=new.model_name,
                source_hash=new.source_hash,
                source_text=new.source_text,
                target=new.target,
                target_ref=new.target,
                target_text="",
                dispatch=new.dispatch,
                policy=new.policy,
                l1_usage_cap=new.l1_usage_cap,
                overrides=new.overrides,
                override_outcomes=new.override_outcomes,
                label=new.label,
                created_at=datetime.now(timezone.utc),
                status="ok",
                total_ns=new.total_ns,
                device_ns=new.device_ns,
            )
        ).inserted_primary_key[0]
        records = tables.tables["op_records"]
        columns = [c.name for c in records.columns if c.name not in ("id", "run_id")]
        connection.execute(
            records.insert(), [{"run_id": run_id, **{c: getattr(op, c) for c in columns}} for op in new.ops]
        )
        connection.execute(
            tables.tables["zones"].insert(),
            [
                {"run_id": run_id, "track": t, "depth": d, "name": n, "start_ns": s, "end_ns": e, "op": o}
                for t, d, n, s, e, o in ZONES
            ],
        )
        connection.execute(
            tables.tables["counters"].insert(),
            [{"run_id": run_id, "track": t, "name": n, "t_ns": at, "value": v} for t, n, at, v in COUNTERS],
        )
    return engine, run_id


def test_upgrade_from_empty_creates_the_tables_of_schema_py(new_db):
    migrated, created = new_db(), new_db()
    assert upgrade(migrated) == (None, head())
    engine = create_engine(created)
    Base.metadata.create_all(engine)
    engine.dispose()
    assert (
        set(shape(migrated))
        == set(Base.metadata.tables)
        == {
            "models",
            "targets",
            "runs",
            "op_records",
            "timeline_blocks",
            "measured_imports",
        }
    )
    assert shape(migrated) == shape(created)  # same columns, types, keys, index names
    assert revision(migrated) == head()


def test_the_migrated_schema_matches_the_models(db_url):
    """Alembic's own comparison: nothing for autogenerate to add, drop or alter."""
    upgrade(db_url)
    engine = create_engine(db_url)
    with engine.connect() as connection:
        assert compare_metadata(MigrationContext.configure(connection), Base.metadata) == []
    engine.dispose()


def test_upgrading_twice_is_a_no_op(db_url):
    upgrade(db_url)
    before = shape(db_url)
    with session_factory(open_db(db_url))() as s:
        run_id = save_run(s, _new_run())
    assert upgrade(db_url) == (head(), head())
    open_db(db_url)
    assert shape(db_url) == before
    with session_factory(open_db(db_url))() as s:
        assert [r.id for r in list_runs(s)] == [run_id] and len(op_records(s, run_id)) == 3


def test_a_pre_alembic_database_keeps_its_rows(db_url):
    old, run_id = pre_alembic(db_url)
    assert "alembic_version" not in inspect(old).get_table_names()
    sessions = session_factory(open_db(db_url))
    with sessions() as s:
        assert get_run(s, run_id).label == "first try"
        assert [o.name for o in op_records(s, run_id)] == ["op_a", "op_b", "op_c"]
        assert len(zones(s, run_id)) == len(ZONES)
        assert [(c.track, c.value) for c in counters(s, run_id)] == [("core 0,0", 1024.0), ("dram", 2.5e11)]
        # revision 0004 gave it levels of detail: zoomed out, core 0,0's three ops are one marker
        assert get_run(s, run_id).tracks == ["core 0,0", "core 0,0/reader", "core 0,1"]
        window = timeline_window(s, run_id, 0.0, 40.0, 1000.0, ["core 0,0"])
        assert [(i.name, i.count, i.busy_ns) for i in window] == [("3 zones", 3, 30.0)]
        assert [i.name for i in timeline_window(s, run_id, 0.0, 40.0, 0.1, ["core 0,0"])] == ["op_a", "op_b", "op_c"]
    with sessions() as s:
        new_id = save_run(s, _new_run(label="after"))
    with sessions() as s:
        assert [r.label for r in list_runs(s)] == ["after", "first try"] and new_id > run_id
    assert revision(db_url) == head()


def test_a_pre_alembic_database_missing_columns_and_tables_gains_them(db_url):
    old, run_id = pre_alembic(db_url)
    with old.begin() as connection:
        connection.execute(text("DROP TABLE counters"))
        connection.execute(text("DROP INDEX ix_zones_run_start"))
        for column in ("policy", "l1_usage_cap", "target_ref"):
            connection.execute(text(f"ALTER TABLE runs DROP COLUMN {column}"))
    old.dispose()
    fresh = shape(db_url)
    assert "counters" not in fresh and "policy" not in [c[0] for c in fresh["runs"]["columns"]]
    with session_factory(open_db(db_url))() as s:
        run = get_run(s, run_id)
        assert (run.label, run.policy, run.l1_usage_cap, run.target_ref) == ("first try", "dram-interleaved", 0.8, None)
        assert len(op_records(s, run_id)) == 3 and counters(s, run_id) == []
    adopted = shape(db_url)
    assert set(adopted) == {
        "models",
        "targets",
        "runs",
        "op_records",
        "timeline_blocks",
        "measured_imports",
    }
    assert ("ix_timeline_blocks_run_kind_track_start", ("run_id", "kind", "track", "start_ns"), False) in (
        adopted["timeline_blocks"]["indexes"]
    )
    assert {"policy", "l1_usage_cap", "target_ref"} <= {c[0] for c in adopted["runs"]["columns"]}


def test_downgrade_to_base_drops_every_table(db_url):
    upgrade(db_url)
    engine = create_engine(db_url)
    with engine.begin() as connection:
        command.downgrade(config(connection=connection), "base")
    assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    with engine.connect() as connection:
        assert current(connection) is None
    engine.dispose()
    upgrade(db_url)  # and back
    assert revision(db_url) == head()


def test_a_database_of_an_unknown_revision_is_one_line(db_url):
    upgrade(db_url)
    engine = create_engine(db_url)
    with engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    engine.dispose()
    with pytest.raises(DatabaseError) as err:
        open_db(db_url)
    message = str(err.value)
    assert "\n" not in message and "'9999'" in message and "newer tilescope" in message


def test_runs_inline_models_and_targets_move_to_their_tables_and_back(db_url):
    """Revision 0003: two runs of one model on two target descriptions become one model row and two
    target rows; downgrading puts the text back inline in each run."""
    old, first = pre_alembic(db_url)
    runs = initial_schema().tables["runs"]
    with old.begin() as connection:
        row = dict(connection.execute(runs.select().where(runs.c.id == first)).mappings().one())
        row.pop("id")
        second = connection.execute(
            runs.insert().values(**{**row, "label": "edited target", "target_text": 'name = "x"\n'})
        ).inserted_primary_key[0]
    old.dispose()
    with session_factory(open_db(db_url))() as s:
        a, b = get_run(s, first), get_run(s, second)
        assert a.model_id == b.model_id and a.model.source_text == row["source_text"]
        assert (a.target.name, a.target.description, b.target.description) == (row["target"], "", 'name = "x"\n')
        assert len(op_records(s, first)) == 3 and len(zones(s, first)) == len(ZONES)  # nothing cascaded away
    engine = create_engine(db_url)
    with engine.begin() as connection:
        command.downgrade(config(connection=connection), "0002")
    with engine.connect() as connection:
        back = connection.execute(
            text("SELECT id, model_name, source_text, target, target_text FROM runs ORDER BY id")
        ).all()
        assert [tuple(r) for r in back] == [
            (first, row["model_name"], row["source_text"], row["target"], ""),
            (second, row["model_name"], row["source_text"], row["target"], 'name = "x"\n'),
        ]
        assert connection.execute(text("SELECT COUNT(*) FROM op_records")).scalar_one() == 3
    engine.dispose()


def test_rows_already_pointing_at_missing_rows_do_not_stop_an_upgrade(sqlite_url):
    """A run deleted with foreign keys off (as the sqlite3 shell does) leaves its ops behind; the
    migration's own check only fails on violations it made."""
    old, run_id = pre_alembic(sqlite_url)
    with old.begin() as connection:
        connection.execute(text("DELETE FROM runs WHERE id = :id"), {"id": run_id})
    old.dispose()
    with session_factory(open_db(sqlite_url))() as s:
        assert list_runs(s) == []
    assert revision(sqlite_url) == head()


def test_zones_packed_in_blocks_unpack_to_rows_and_back(db_url):
    """Revision 0005: a run's zone and counter rows become blocks (with markers); downgrading gives
    the rows back."""
    old, run_id = pre_alembic(db_url)
    old.dispose()
    sessions = session_factory(open_db(db_url))
    with sessions() as s:
        packed = sorted((z.track, z.depth, z.name, z.start_ns, z.end_ns, z.op) for z in zones(s, run_id))
    assert packed == sorted(ZONES)
    engine = create_engine(db_url)
    with engine.begin() as connection:
        command.downgrade(config(connection=connection), "0004")
    with engine.connect() as connection:
        rows = connection.execute(text("SELECT track, depth, name, start_ns, end_ns, op FROM zones ORDER BY id")).all()
        merged = connection.execute(text("SELECT track, count, busy_ns FROM zone_markers WHERE level = 2")).all()
        samples = connection.execute(text("SELECT track, name, t_ns, value FROM counters ORDER BY track")).all()
    assert sorted(tuple(r) for r in rows) == sorted(ZONES)
    assert [tuple(c) for c in samples] == COUNTERS
    assert [tuple(m) for m in merged] == [("core 0,0", 3, 30.0)]  # core 0,0's three 10 ns ops, zoomed out
    engine.dispose()
    with session_factory(open_db(db_url))() as s:
        assert sorted((z.track, z.depth, z.name, z.start_ns, z.end_ns, z.op) for z in zones(s, run_id)) == packed
        assert [tuple(c) for c in counters(s, run_id)] == COUNTERS


def test_downgrading_packed_zones_gives_every_core_that_shared_its_zones_its_own_rows(db_url):
    from .test_blocks import TWINS

    sessions = session_factory(open_db(db_url))
    with sessions() as s:
        save_run(s, _new_run(zones=ZoneColumns.from_rows(TWINS)))
    engine = create_engine(db_url)
    with engine.begin() as connection:
        command.downgrade(config(connection=connection), "0004")
    with engine.connect() as connection:
        rows = connection.execute(text("SELECT track, depth, name, start_ns, end_ns, op FROM zones")).all()
    engine.dispose()
    assert sorted(tuple(r) for r in rows) == sorted(TWINS)


def test_runs_of_the_previous_revision_keep_their_rows_and_lose_their_status(db_url):
    """Revision 0006: a database at 0005 keeps its runs, ops and zones, without `status`; downgrading
    gives them "ok" again."""
    old, run_id = pre_alembic(db_url)
    with old.begin() as connection:
        command.stamp(config(connection=connection), "0001")
        command.upgrade(config(connection=connection), "0005")
    with old.connect() as connection:
        assert connection.execute(text("SELECT id, status FROM runs")).all() == [(run_id, "ok")]
    old.dispose()
    with session_factory(open_db(db_url))() as s:
        run = get_run(s, run_id)
        assert (run.label, len(op_records(s, run_id)), len(zones(s, run_id))) == ("first try", 3, len(ZONES))
    assert revision(db_url) == head()
    assert "status" not in [c[0] for c in shape(db_url)["runs"]["columns"]]
    engine = create_engine(db_url)
    with engine.begin() as connection:
        command.downgrade(config(connection=connection), "0005")
    with engine.connect() as connection:
        assert connection.execute(text("SELECT id, label, status FROM runs")).all() == [(run_id, "first try", "ok")]
    engine.dispose()


def test_runs_of_the_previous_revision_get_no_load_work_and_keep_their_rows(db_url):
    """Revision 0007: a database at 0006 keeps its runs, which did no work at load time (0 ns, no
    ops); a new run's load ops are stored beside them; downgrading drops them, keeping the runs."""
    from tilescope.perfdb.runs import load_ops

    from .test_store import BIAS_BROADCAST

    old, run_id = pre_alembic(db_url)
    with old.begin() as connection:
        command.stamp(config(connection=connection), "0001")
        command.upgrade(config(connection=connection), "0006")
    old.dispose()
    assert "load_ns" not in [c[0] for c in shape(db_url)["runs"]["columns"]]
    sessions = session_factory(open_db(db_url))
    with sessions() as s:
        run = get_run(s, run_id)
        assert (run.label, run.total_ns, run.load_ns, load_ops(run)) == ("first try", 40.0, 0.0, [])
        assert (len(op_records(s, run_id)), len(zones(s, run_id))) == (3, len(ZONES))
    with sessions() as s:
        new_id = save_run(s, _new_run(label="loads", load_ops=[BIAS_BROADCAST], load_ns=420.5))
    with sessions() as s:
        assert (load_ops(get_run(s, new_id)), get_run(s, new_id).load_ns) == ([BIAS_BROADCAST], 420.5)
    assert revision(db_url) == head()
    engine = create_engine(db_url)
    with engine.begin() as connection:
        command.downgrade(config(connection=connection), "0006")
    with engine.connect() as connection:
        assert connection.execute(text("SELECT id, label FROM runs ORDER BY id")).all() == [
            (run_id, "first try"),
            (new_id, "loads"),
        ]
    engine.dispose()
    assert not {"load_ns", "load_ops"} & {c[0] for c in shape(db_url)["runs"]["columns"]}
