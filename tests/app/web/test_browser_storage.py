"""The page on a PostgreSQL that ends the server's connections (a restart, a failover): the next
Apply stores its run, once, and the page shows it."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from tilescope.perfdb.engine import open_db, session_factory
from tilescope.perfdb.runs import list_runs

from . import serving
from .test_browser import CLICK_NODE, MODEL, _op_nodes, _pick, _text, _wait, browser  # noqa: F401  # browser: a fixture

pytestmark = pytest.mark.browser

FC1 = "mlp.layer.0.fc1.matmul"


def test_an_apply_after_the_database_ended_the_servers_connections_stores_one_run(
    tmp_path,
    pg_schemas,
    postgres_url,
    browser,  # noqa: F811
):
    name = f"tilescope-test-{uuid.uuid4().hex[:12]}"  # the server's connections, and no one else's
    db_url = make_url(pg_schemas()).update_query_dict({"application_name": name}).render_as_string(hide_password=False)
    url, proc = serving.start(MODEL, db_url, logs=tmp_path)
    admin = create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    try:
        d = browser
        d.get(url)
        _wait(d, lambda d: "run #1" in _text(d, "run-summary"), timeout=60)
        _wait(d, lambda d: len(_op_nodes(d)) == 2)
        d.execute_script(CLICK_NODE % FC1)
        _wait(d, lambda d: FC1 in _text(d, "op-inspector"))
        _pick(d, "override-memory", "l1")
        with admin.connect() as connection:
            ended = connection.execute(
                text("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = :n"),
                {"n": name},
            ).scalar()
        assert ended > 0
        d.execute_script("document.getElementById('apply-overrides').click()")
        _wait(d, lambda d: "applied" in _text(d, "override-status") or "failed" in _text(d, "page-message"), 90)
        assert "applied" in _text(d, "override-status"), _text(d, "page-message")
        _wait(d, lambda d: f"{FC1}=" in _text(d, "run-summary"), timeout=30)
    finally:
        output = proc.stop()
        admin.dispose()
    assert "Traceback" not in output
    engine = open_db(db_url)
    with session_factory(engine)() as session:
        assert len(list_runs(session, MODEL)) == 2
    engine.dispose()
