"""Apply and re-run on a PostgreSQL that drops the app's connections: the run is stored once, and
the page says what happened."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import pytest
from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import make_url

from tilescope.app.web.server import create_app
from tilescope.perfdb.runs import list_runs
from tilescope.perfdb.schema import Run

from .conftest import MODEL, TARGET, apply, shown_run

L1 = dict(memory="l1", memory_layout="width_sharded", rows=8, cols=8)  # fc1's output sharded in L1


@dataclass
class Served:
    """The app on a schema of its own, and a connection beside it to do to the schema what a
    database's operator (or failure) does."""

    app: object
    schema: str
    name: str  # the app's connections' application name: this test's, and no one else's
    admin: object

    def terminate(self) -> int:
        """End every connection of this test's app, as a database restart would."""
        with self.admin.connect() as connection:
            return connection.execute(
                text("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = :n"),
                {"n": self.name},
            ).scalar()


@pytest.fixture
def pg_app(pg_schemas, postgres_url, tmp_path):
    url = make_url(pg_schemas())
    schema = url.query["options"].split()[0].removeprefix("-csearch_path=")
    name = f"tilescope-test-{uuid.uuid4().hex[:12]}"
    url = url.update_query_dict({"application_name": name}).render_as_string(hide_password=False)
    app = create_app(url, MODEL, TARGET, job_dir=str(tmp_path / "jobs"))
    admin = create_engine(postgres_url, isolation_level="AUTOCOMMIT", connect_args={"options": "-clock_timeout=30s"})
    yield Served(app, schema, name, admin)
    app.explorer.sessions.kw["bind"].dispose()
    admin.dispose()


def _runs(app) -> list[int]:
    with app.explorer.sessions() as session:
        return sorted(r.id for r in list_runs(session, MODEL))


def test_the_first_apply_after_the_database_dropped_its_connections_stores_its_run(pg_app):
    app = pg_app.app
    cb = app.tilescope_callbacks
    base = shown_run(cb)
    assert pg_app.terminate() > 0
    answer = apply(cb, base, **L1)
    assert isinstance(answer["run_id"], int), answer["status"]
    assert _runs(app) == [base, answer["run_id"]]


def test_a_run_stored_before_reading_it_back_fails_is_said_stored_once(pg_app):
    """The store commits, then the database fails the reads that show the run: the page says the
    run is stored and empties the pending list, so Apply is not pressed again for a run it has."""
    app = pg_app.app
    cb = app.tilescope_callbacks
    base = shown_run(cb)
    lost = []

    def mark_the_store(session, _flush) -> None:
        if any(isinstance(row, Run) for row in session.new):
            session.info["stores_a_run"] = True

    def fail_reads_after_the_store(session) -> None:
        if session.info.get("stores_a_run") and not lost:
            lost.append(True)
            with pg_app.admin.connect() as connection:  # what shows a run is gone the moment it is stored
                connection.exec_driver_sql(f"ALTER TABLE {pg_app.schema}.op_records RENAME TO op_records_away")

    event.listen(app.explorer.sessions, "after_flush", mark_the_store)
    event.listen(app.explorer.sessions, "after_commit", fail_reads_after_the_store)
    answer = apply(cb, base, **L1)
    stored = [i for i in _runs(app) if i != base]
    assert lost and len(stored) == 1
    said = str(answer["status"])
    assert f"run #{stored[0]} was stored" in said and "op_records" in said
    assert answer["pending"] == []
