"""Shared fixtures: the real MLIR corpus (skipped when absent), small self-contained models, targets, DBs."""

from __future__ import annotations

import importlib.util
import os
import shutil
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from sqlalchemy import create_engine
from sqlalchemy.engine import make_url

from tilescope.compiler.frontend.model_refs import load_model
from tilescope.compiler.ir.verifier import VERIFY_ENV
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.sim.simulator import simulate
from tilescope.compiler.targets.catalog import load_target
from tilescope.overrides import parse_item

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "ttmlir"
# ops perf reports measured on Tenstorrent hardware (see their NOTICE.md)
PERF_REPORTS = Path(__file__).resolve().parents[2] / "shared" / "profiles" / "tt-perf-report"
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
def perf_reports() -> Path:
    """The folder of the shipped ops perf reports (skipped when absent)."""
    if not PERF_REPORTS.is_dir():
        pytest.skip(f"ops perf reports not found at {PERF_REPORTS}")
    return PERF_REPORTS


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


# Services the suite uses where they answer. Each is found at its environment variable's URL, or,
# when the variable is unset, at its default local address; set the variable empty to leave it out.
# A URL given explicitly must answer: a typo should fail the run, not skip half of it.
PG_ENV = "TILESCOPE_TEST_PG"  # database tests run on it too, each in a schema of its own
LOCAL_PG = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
REDIS_ENV = "TILESCOPE_TEST_REDIS"  # Celery jobs over Redis, in the browser tests
LOCAL_REDIS = "redis://127.0.0.1:6379"


def _postgres_answers(url: str) -> bool:
    engine = create_engine(url, connect_args={"connect_timeout": 3})
    try:
        with engine.connect():
            return True
    except Exception:  # noqa: BLE001  # any failure to connect means the same here: not usable
        return False
    finally:
        engine.dispose()


def _redis_answers(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=3).ping())
    except redis.exceptions.RedisError:
        return False


# Google's Model Explorer, for the import comparison (app/cli/peer_bench.py): never a tilescope
# dependency, so it lives in a venv of its own whose Python this names (.ci/run makes one)
PEER_ENV = "TILESCOPE_TEST_PEER_PYTHON"


SERVICES = {  # name: (variable, default URL, probe, what runs on it)
    "PostgreSQL": (PG_ENV, LOCAL_PG, _postgres_answers, "the database tests run on SQLite only"),
    "Redis": (REDIS_ENV, LOCAL_REDIS, _redis_answers, "the Celery job tests are skipped"),
}


def _find_services() -> tuple[dict[str, str | None], list[str]]:
    """{service: its URL, or None}, and one line per service left out, saying how to bring it in."""
    found, notes = {}, []
    for name, (variable, default, answers, without) in SERVICES.items():
        given = os.environ.get(variable)
        url = default if given is None else given.strip() or None
        if url is None:
            notes.append(f"{name}: off (${variable} is empty); {without}")
        elif answers(url):
            found[name] = url
            continue
        elif given is not None:
            raise pytest.UsageError(f"${variable}={url} does not answer; set it to a reachable {name} URL, or empty")
        else:
            notes.append(f"{name}: nothing answers at {url}; {without} (set ${variable}=URL to use another)")
        found[name] = None
    return found, notes


def pytest_configure(config) -> None:
    # every compile in the suite, and in the processes it starts, verifies the IR after each pass
    os.environ.setdefault(VERIFY_ENV, "1")
    config.tilescope_services, notes = _find_services()
    if os.environ[VERIFY_ENV] in ("", "0"):
        notes.append(f"IR verifier: off (${VERIFY_ENV} is {os.environ[VERIFY_ENV]!r}); passes' IR goes unchecked")
    if not CORPUS.is_dir():
        notes.append(f"MLIR corpus: not found at {CORPUS}; its integration tests are skipped")
    if not (shutil.which("chromium") or shutil.which("chromium-browser")) or not shutil.which("chromedriver"):
        notes.append(
            "Chromium: chromium or chromedriver missing; the browser tests are skipped "
            "(./run test installs them on Debian)"
        )
    for package, name in (("torch", "PyTorch"), ("jax", "JAX")):
        if importlib.util.find_spec(package) is None:
            notes.append(f"{name}: not installed; the {name} import's tests are skipped (./run test installs it)")
    peer = os.environ.get(PEER_ENV, "").strip()
    if not peer:
        notes.append(
            f"Model Explorer: ${PEER_ENV} not set; the import comparison's tests are skipped "
            "(set it to the Python of a venv with ai-edge-model-explorer)"
        )
    elif not os.access(peer, os.X_OK):
        raise pytest.UsageError(f"${PEER_ENV}={peer} is not an executable; set it to a Python, or empty")
    config.tilescope_peer_python = peer or None
    config.tilescope_notes = notes


def pytest_sessionstart(session) -> None:
    """Say once, first, what this run leaves out: -q hides pytest's own header."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    for note in session.config.tilescope_notes:
        reporter.write_line(f"tilescope tests: {note}", yellow=True)


@pytest.fixture(scope="session")
def postgres_url(pytestconfig) -> str:
    return pytestconfig.tilescope_services["PostgreSQL"] or pytest.skip(
        "no PostgreSQL (see the note at the top of the run)"
    )


@pytest.fixture(scope="session")
def redis_url(pytestconfig) -> str:
    return pytestconfig.tilescope_services["Redis"] or pytest.skip("no Redis (see the note at the top of the run)")


@pytest.fixture(scope="session")
def peer_python(pytestconfig) -> str:
    return pytestconfig.tilescope_peer_python or pytest.skip(f"no Model Explorer (${PEER_ENV} not set)")


@pytest.fixture
def sqlite_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path}/t.db"


@pytest.fixture
def pg_schemas(postgres_url):
    """make() -> the URL of a fresh, empty schema on the suite's PostgreSQL; all are dropped after the test."""
    # a connection a failed test left in a transaction makes DROP SCHEMA fail, not hang
    admin = create_engine(postgres_url, isolation_level="AUTOCOMMIT", connect_args={"options": "-clock_timeout=30s"})
    schemas = []

    def make() -> str:
        schemas.append(f"t_{uuid.uuid4().hex[:16]}")
        with admin.connect() as connection:
            connection.exec_driver_sql(f"CREATE SCHEMA {schemas[-1]}")
        # a server time zone other than UTC, so timestamps must carry their zone to round-trip
        options = f"-csearch_path={schemas[-1]} -ctimezone=Asia/Kolkata"
        return make_url(postgres_url).update_query_dict({"options": options}).render_as_string(hide_password=False)

    yield make
    with admin.connect() as connection:
        for schema in schemas:
            connection.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
    admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def new_db(request, tmp_path, sqlite_url):
    """new_db() -> the URL of another empty database of this test's kind: SQLite files in tmp_path
    (the first is `sqlite_url`), or fresh schemas on the suite's PostgreSQL, dropped after the test."""
    if request.param == "sqlite":
        files = iter([sqlite_url] + [f"sqlite:///{tmp_path}/t{i}.db" for i in range(1, 100)])
        return lambda: next(files)
    return request.getfixturevalue("pg_schemas")


REDIS_CLAIMS = "tilescope-test:redis-db:"  # keys in database 0 saying which run owns which database


@pytest.fixture
def redis_broker(redis_url):
    """The URL of a Redis database this test has to itself, emptied before and after: suites running
    at once on one Redis each claim their own (SET NX in database 0), so none empties another's queue."""
    import redis

    def database_url(index: int) -> str:
        return urlsplit(redis_url)._replace(path=f"/{index}").geturl()

    claims = redis.Redis.from_url(database_url(0))
    owner = uuid.uuid4().hex
    for index in range(1, 16):  # Redis has 16 databases unless configured otherwise
        if claims.set(f"{REDIS_CLAIMS}{index}", owner, nx=True, ex=3600):  # expires should a run be killed
            break
    else:
        pytest.fail("every Redis database 1-15 is claimed by another test run")
    database = redis.Redis.from_url(database_url(index))
    database.flushdb()
    yield database_url(index)
    database.flushdb()
    if claims.get(f"{REDIS_CLAIMS}{index}") == owner.encode():
        claims.delete(f"{REDIS_CLAIMS}{index}")


@pytest.fixture
def db_url(new_db) -> str:
    """An empty database: a SQLite file, and a PostgreSQL schema when the suite has PostgreSQL."""
    return new_db()


@pytest.fixture(scope="session")
def build(wormhole):
    """build(ref, *override_items, dispatch="host") -> (Compilation, SimResult)."""

    def _build(ref: str, *items: str, dispatch: str = "host", target=None):
        target = target or wormhole
        compilation = compile_model(load_model(ref), target, CompileOptions([parse_item(i) for i in items]))
        return compilation, simulate(compilation.kernel, target, dispatch)

    return _build


@pytest.fixture(params=["tiny", "mnist"])
def model_file(request, tiny_path):
    """(path, op names from the graph level on) of a file model: the bundled tiny MLP, and MNIST
    from the corpus when present."""
    if request.param == "tiny":
        return tiny_path, TINY_GRAPH_OPS
    return request.getfixturevalue("mnist_path"), MNIST_GRAPH_OPS
