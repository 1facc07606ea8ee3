"""Shared fixtures: the real MLIR corpus (skipped when absent), small self-contained models, targets, DBs."""

from __future__ import annotations

from pathlib import Path

import pytest

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


@pytest.fixture
def db_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path}/t.db"


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
