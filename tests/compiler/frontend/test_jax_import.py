"""A JAX function imported: lowered to StableHLO with its debug locations, each op named by JAX's
name stack and located at its line of Python, compiled and simulated on every family of target."""

from __future__ import annotations

import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

from tilescope.compiler.errors import ModelLoadError  # noqa: E402
from tilescope.compiler.frontend.jax_models import import_jax  # noqa: E402
from tilescope.compiler.frontend.mlir_import import import_mlir  # noqa: E402
from tilescope.compiler.ir.meta import CODE_LINE  # noqa: E402
from tilescope.compiler.pipeline.options import CompileOptions  # noqa: E402
from tilescope.compiler.pipeline.stages import compile_model  # noqa: E402
from tilescope.compiler.sim.simulator import simulate  # noqa: E402
from tilescope.compiler.targets.catalog import load_target  # noqa: E402


def feed_forward(w1, w2, x):
    h = jax.nn.gelu(x @ w1)  # the line FIRST names
    return jax.nn.softmax(h @ w2, axis=-1)


FIRST = feed_forward.__code__.co_firstlineno + 1
ARGS = (
    jax.ShapeDtypeStruct((768, 3072), jnp.bfloat16),
    jax.ShapeDtypeStruct((3072, 768), jnp.bfloat16),
    jax.ShapeDtypeStruct((256, 768), jnp.bfloat16),
)


@pytest.fixture(scope="module")
def imported():
    return import_jax(feed_forward, ARGS)


@pytest.mark.parametrize("target", ["wormhole_n150", "blackhole_p150", "mtia_v1", "corsair"])
def test_a_jax_function_compiles_and_simulates_on_every_target(imported, target):
    compiled = compile_model(imported, load_target(target), CompileOptions())
    sim = simulate(compiled.kernel, compiled.target, "trace")
    assert sim.total_ns > 0 and any(op.kind == "matmul" for op in sim.ops)
    for level in compiled.levels:
        import_mlir(compiled.mlir(level), f"jax.{level}")


def test_its_ops_are_named_by_jax_s_name_stack_at_their_lines_of_python(imported):
    ops = {op.name: op for op in imported.graph.ops}
    first = ops["jit(feed_forward)/dot_general"]
    assert first.meta[CODE_LINE].file == __file__ and first.meta[CODE_LINE].line == FIRST
    second = ops["jit(feed_forward)/dot_general#1"]
    assert second.meta[CODE_LINE].line == FIRST + 1
    # none located where tilescope lowered it
    assert all("jax_models.py" not in op.meta[CODE_LINE].file for op in ops.values() if CODE_LINE in op.meta)


def test_a_function_jax_cannot_lower_is_one_line():
    with pytest.raises(ModelLoadError, match=r"^feed_forward: jax could not lower it: ") as err:
        import_jax(feed_forward, (jnp.zeros((4, 5)), jnp.zeros((7, 2)), jnp.zeros((3, 4))))
    assert "\n" not in str(err.value)
    with pytest.raises(ModelLoadError, match=r"^feed_forward: a JAX function needs example arguments"):
        import_jax(feed_forward)


def test_without_jax_a_function_is_one_line_saying_to_install_the_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "jax", None)  # import jax fails, as where it is not installed
    with pytest.raises(ModelLoadError, match=r"^a JAX function needs JAX: pip install 'tilescope\[jax\]'$"):
        import_jax(feed_forward, ARGS)
