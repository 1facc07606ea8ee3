"""Shared fixtures: the real MLIR corpus (skipped when absent), small self-contained models, targets, DBs."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from sqlalchemy import create_engine
from sqlalchemy.engine import make_url

from compiler.models import load_model
from compiler.pipeline import compile_model
from compiler.simulator import simulate
from compiler.target import load_target
from overrides import parse_item

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "ttmlir"
DATA = Path(__file__).resolve().parent / "data"

requires_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"MLIR corpus not found at {CORPUS}")

MNIST_OPS = ["matmul_0", "add_0", "relu_0", "matmul_1", "add_1", "relu_1", "matmul_2", "add_2"]
TINY_OPS = ["matmul_0", "add_0", "relu_0", "matmul_1"]
# after the graph level fuses bias adds and activations into their matmuls
MNIST_GRAPH_OPS = ["matmul_0", "matmul_1", "matmul_2"]
TINY_GRAPH_OPS = ["matmul_0", "matmul_1"]


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"MLIR corpus not found at {CORPUS}")
    return CORPUS


@pytest.fixture(scope="session")
def mnist_path(corpus) -> str:
    path = corpus / "mnist.mlir"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    return str(path)


@pytest.fixture(scope="session")
def tiny_path() -> str:
    """A 4-op MLP in TTIR generic form that ships with the tests: always available."""
    return str(DATA / "tiny_mlp.mlir")


@pytest.fixture(scope="session")
def wormhole():
    return load_target("wormhole_n150")


PG_ENV = "TILESCOPE_TEST_PG"  # a PostgreSQL URL: database tests run on it too (each in a schema of its own)


@pytest.fixture
def sqlite_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path}/t.db"


@pytest.fixture(params=["sqlite", "postgresql"])
def new_db(request, tmp_path, sqlite_url):
    """new_db() -> the URL of another empty database of this test's kind: SQLite files in tmp_path
    (the first is `sqlite_url`), or fresh schemas in $TILESCOPE_TEST_PG, dropped after the test."""
    if request.param == "sqlite":
        files = iter([sqlite_url] + [f"sqlite:///{tmp_path}/t{i}.db" for i in range(1, 100)])
        yield lambda: next(files)
        return
    base = os.environ.get(PG_ENV) or pytest.skip(f"{PG_ENV} is not set")
    # a connection a failed test left in a transaction makes DROP SCHEMA fail, not hang
    admin = create_engine(base, isolation_level="AUTOCOMMIT", connect_args={"options": "-clock_timeout=30s"})
    schemas = []

    def make() -> str:
        schemas.append(f"t_{uuid.uuid4().hex[:16]}")
        with admin.connect() as connection:
            connection.exec_driver_sql(f"CREATE SCHEMA {schemas[-1]}")
        # a server time zone other than UTC, so timestamps must carry their zone to round-trip
        options = f"-csearch_path={schemas[-1]} -ctimezone=Asia/Kolkata"
        return make_url(base).update_query_dict({"options": options}).render_as_string(hide_password=False)

    yield make
    with admin.connect() as connection:
        for schema in schemas:
            connection.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
    admin.dispose()


@pytest.fixture
def db_url(new_db) -> str:
    """An empty database: a SQLite file, and a PostgreSQL schema when $TILESCOPE_TEST_PG is set."""
    return new_db()


@pytest.fixture(scope="session")
def build(wormhole):
    """build(ref, *override_items, dispatch="host") -> (Compilation, SimResult)."""

    def _build(ref: str, *items: str, dispatch: str = "host", target=None):
        target = target or wormhole
        compilation = compile_model(load_model(ref), target, [parse_item(i) for i in items])
        return compilation, simulate(compilation.kernel, target, dispatch)

    return _build


@pytest.fixture(params=["tiny", "mnist"])
def model_file(request, tiny_path):
    """(path, op names from the graph level on) of a file model: the bundled tiny MLP, and MNIST
    from the corpus when present."""
    if request.param == "tiny":
        return tiny_path, TINY_GRAPH_OPS
    return request.getfixturevalue("mnist_path"), MNIST_GRAPH_OPS
