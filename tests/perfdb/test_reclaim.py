"""What an upgrade gives back: the space of the rows a migration moved, once this process has moved
them, and nothing when it moved none (a VACUUM of a shared team database is no small thing)."""

from __future__ import annotations

import threading

from alembic import command
from sqlalchemy import Engine, create_engine, event

from tilescope.perfdb.engine import open_db, session_factory
from tilescope.perfdb.migrate import _lock, config, head, upgrade
from tilescope.perfdb.records import ZoneColumns
from tilescope.perfdb.store import save_run

from .test_migrations import pre_alembic, revision
from .test_store import _new_run

RECLAIMS = ("VACUUM", "PRAGMA freelist_count")  # how a reclaim starts on PostgreSQL, on SQLite


def _reclaims_seen(engine: Engine) -> list[str]:
    """The statements of a reclaim that `engine` sends from now on (a list that fills as it does)."""
    seen = []

    @event.listens_for(engine, "before_cursor_execute")
    def sent(_connection, _cursor, statement, *_args) -> None:
        if statement.startswith(RECLAIMS):
            seen.append(statement)

    return seen


def _at(db_url: str, revision_id: str) -> None:
    """A database of one run, at `revision_id`."""
    with session_factory(open_db(db_url))() as s:
        save_run(s, _new_run())
    engine = create_engine(db_url)
    with engine.begin() as connection:
        command.downgrade(config(connection=connection), revision_id)
    engine.dispose()


def test_an_upgrade_that_moves_rows_gives_their_space_back(db_url):
    """Revision 0005 packs zone rows into blocks and drops their tables. SQLite kept their pages as
    free space in the file (a database of 562 MB, 93% of it free, where one made at the newest
    revision held 44 MB): the upgrade vacuums it. PostgreSQL frees dropped tables itself; there the
    upgrade analyzes what moved, so the planner knows the new tables at once."""
    many = [(f"core {i % 64},0", 0, f"op_{i}", float(i), i + 0.5, f"op_{i}") for i in range(40_000)]
    with session_factory(open_db(db_url))() as s:
        save_run(s, _new_run(zones=ZoneColumns.from_rows(many)))
    engine = create_engine(db_url)
    with engine.begin() as connection:
        command.downgrade(config(connection=connection), "0004")
    sqlite = engine.dialect.name == "sqlite"
    if sqlite:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.exec_driver_sql("VACUUM")  # a database made at 0004: no free pages
    engine.dispose()
    open_db(db_url).dispose()  # upgraded to the newest revision
    engine = create_engine(db_url)
    with engine.connect() as connection:
        if sqlite:
            pages = connection.exec_driver_sql("PRAGMA page_count").scalar()
            free = connection.exec_driver_sql("PRAGMA freelist_count").scalar()
            assert free <= pages // 4, f"{free} of {pages} pages free"
        else:  # never analyzed: -1 tuples
            analyzed = "SELECT reltuples FROM pg_class WHERE relname = 'timeline_blocks' AND pg_table_is_visible(oid)"
            assert connection.exec_driver_sql(analyzed).scalar() > 0
    engine.dispose()


def test_a_migration_that_moves_no_rows_reclaims_nothing(db_url):
    """A future migration adding a column made every database it upgraded vacuum (on PostgreSQL,
    VACUUM (ANALYZE) of every table). On SQLite, 0014's batch mode copies the timeline blocks: that
    upgrade looks for free pages, and only that one."""
    _at(db_url, "0007")
    engine = create_engine(db_url)
    seen = _reclaims_seen(engine)
    assert upgrade(engine) == ("0007", head())
    engine.dispose()
    # (whether it then vacuums depends on how much of the file the copy left free)
    assert seen[:1] == (["PRAGMA freelist_count"] if db_url.startswith("sqlite") else []) and (
        seen[1:] == [] or seen[1:] == ["VACUUM"]
    )


def test_a_process_that_finds_the_database_upgraded_by_another_reclaims_nothing(db_url):
    """Two processes opening a database of an older revision: the second waits for the first's
    migration, finds it done, and vacuumed all the same."""
    _at(db_url, "0004")
    engine = create_engine(db_url, connect_args={"timeout": 60} if db_url.startswith("sqlite") else {})
    seen, waiting, answers = _reclaims_seen(engine), threading.Event(), []

    @event.listens_for(engine, "before_cursor_execute")
    def locking(_connection, _cursor, statement, *_args) -> None:
        if "BEGIN IMMEDIATE" in statement or "pg_advisory_xact_lock" in statement:
            waiting.set()  # it read the old revision, and asks for the lock

    first = create_engine(db_url)
    with first.connect() as connection, connection.begin():
        _lock(connection)  # the first process, migrating
        second = threading.Thread(target=lambda: answers.append(upgrade(engine)))
        second.start()
        assert waiting.wait(60), "the second process never asked for the lock"
        command.upgrade(config(connection=connection), "head")
    second.join(120)
    first.dispose()
    engine.dispose()
    assert answers == [(head(), head())]  # it found it done
    assert seen == []


def test_an_adopted_database_gives_back_the_space_of_the_rows_moved(db_url):
    """A database made before Alembic is upgraded through the revision that packs zones into
    blocks: its moved rows' space is reclaimed as any other's."""
    old, _ = pre_alembic(db_url)
    old.dispose()
    engine = create_engine(db_url)
    seen = _reclaims_seen(engine)
    assert upgrade(engine) == (None, head())
    engine.dispose()
    assert seen and revision(db_url) == head()
