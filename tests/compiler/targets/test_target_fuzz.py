"""Fuzzing target files: mutations of the shipped wormhole_n150.toml (values replaced by random
numbers, NaN, infinities, huge and negative numbers, strings, arrays and tables; lines dropped,
repeated or cut; values nested deeply). Each loads as a Target or gives one TargetError line; a
Target that loads compiles and simulates a model in bounded work, to finite times."""

from __future__ import annotations

import json
import math
import tomllib

from hypothesis import given
from hypothesis import strategies as st

from tilescope.compiler.errors import TargetError, TilescopeError
from tilescope.compiler.frontend.model_refs import load_model
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.sim.simulator import simulate
from tilescope.compiler.targets.catalog import BUILTIN_DIR, load_target
from tilescope.compiler.targets.chip import Target
from tilescope.compiler.targets.chip_file import LIMITS
from tests.conftest import DATA
from tests.fuzzing import case, fuzz_settings, one_line

SOURCE = (BUILTIN_DIR / "wormhole_n150.toml").read_text()
LINES = SOURCE.splitlines()
ASSIGNMENTS = [i for i, line in enumerate(LINES) if "=" in line and not line.lstrip().startswith("#")]
KEYS = sorted(
    {LINES[i].split("=")[0].strip() for i in ASSIGNMENTS} | {"latency_ns", "bytes_per_s", "bytes_per_cycle", "channels"}
)
MODEL = load_model(str(DATA / "tiny_mlp.mlir"))


def _nested(depth: int, inner: str, table: bool) -> str:
    return ("{a=" * depth + inner + "}" * depth) if table else ("[" * depth + inner + "]" * depth)


VALUES = (
    st.sampled_from(
        [
            "nan",
            "+nan",
            "-nan",
            "inf",
            "+inf",
            "-inf",
            "0",
            "-0",
            "-1",
            "0.0",
            "-0.0",
            "1e-400",
            "1e400",
            "1e308",
            "5e-324",
            "9223372036854775807",
            "-9223372036854775808",
            "0x7fffffffffffffff",
            "0b1",
            "0o7",
            "1_000_000_000_000",
            "true",
            "false",
            '""',
            '"x"',
            "'lofi'",
            "[]",
            "[1, 2]",
            "{}",
            "{ a = 1 }",
            "1979-05-27",
            "07:32:00",
            "1.",
            "--1",
        ]
    )
    | st.integers().map(str)
    | st.integers(20, 5000).map("9".__mul__)
    | st.floats().map(repr)  # Python spells nan, inf, 1e+300 as TOML does
    | st.integers(-10, 400).map(lambda n: f"{n}")  # around the grid's bound
    | st.text(max_size=12).map(lambda s: '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"')
    | st.builds(
        _nested,
        st.integers(1, 3000) | st.sampled_from([100_000]),
        st.sampled_from(["1", "nan", '"x"', ""]),
        st.booleans(),
    )
)


@st.composite
def mutated_targets(draw) -> str:
    lines = list(LINES)
    for _ in range(draw(st.integers(1, 4))):
        what = draw(st.sampled_from(["value", "value", "value", "drop", "repeat", "insert", "header"]))
        index = draw(st.sampled_from(ASSIGNMENTS if what == "value" else range(len(lines))))
        if index >= len(lines):
            continue
        if what == "value" and "=" in lines[index]:
            lines[index] = lines[index].split("=")[0] + "= " + draw(VALUES)
        elif what == "drop":
            del lines[index]
        elif what == "repeat":
            lines.insert(index, lines[index])
        elif what == "insert":
            lines.insert(index, f"{draw(st.sampled_from(KEYS))} = {draw(VALUES)}")
        else:
            lines.insert(
                index,
                draw(
                    st.sampled_from(
                        ["[grid]", "[memory.l1]", "[memory.sram]", "[memory]", "[[noc]]", "[grid.rows]", "[x.y.z]"]
                    )
                ),
            )
    text = "\n".join(lines) + "\n"
    return text[: draw(st.integers(0, len(text)))] if draw(st.integers(0, 9)) == 0 else text


def _changes(text: str) -> str:
    return " | ".join(line for line in text.splitlines() if line not in LINES) or "lines dropped or cut"


@fuzz_settings()
@given(mutated_targets())
def test_fuzz_target_files(text):
    with case("target: TOML files", lambda: _changes(text)):
        try:
            target = load_target("fuzz.toml", text)
        except TargetError as err:
            one_line(str(err))
            return
        assert isinstance(target, Target)
    with case("target: compile and simulate what loaded", lambda: _changes(text)):
        _simulates(target)


def _simulates(target: Target) -> None:
    """A target that loads has finite numbers, and a model compiles and simulates on it to finite
    times (or one error line)."""
    assert all(math.isfinite(x) for x in (target.clock_hz, *target.dispatch_ns.values()))
    assert all(math.isfinite(m.bytes_per_s) and math.isfinite(m.latency_ns) for m in target.memories.values())
    try:
        compilation = compile_model(MODEL, target)
        result = simulate(compilation.kernel, target, "host")
    except TilescopeError as err:
        one_line(str(err))
        return
    assert math.isfinite(result.total_ns) and math.isfinite(result.device_ns)
    assert all(math.isfinite(op.start_ns) and math.isfinite(op.duration_ns) for op in result.ops)


def _toml(value) -> str:
    """TOML of a target's data, every table inline: `memory = { l1 = { scope = "core", ... } }`."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{key} = {_toml(v)}" for key, v in value.items()) + " }"
    return (
        str(value).lower()
        if isinstance(value, bool)
        else repr(value)
        if isinstance(value, float)
        else json.dumps(value)
    )


def _limits_key(path: tuple[str, ...]) -> str | None:
    """The LIMITS entry of a number's dotted path, whose memory, dtype or mode is a placeholder."""
    key = ".".join(path)
    if path[0] == "memory":
        key = f"memory.<name>.{path[2]}"
    elif path[:2] == ("matrix", "flops_per_cycle"):
        key = "matrix.flops_per_cycle.<dtype>"
    elif path[:2] == ("matrix", "fidelity_passes"):
        key = "matrix.fidelity_passes.<fidelity>"
    elif path[0] == "dispatch":
        key = "dispatch.<mode>_ns"
    return key if key in LIMITS else None


def _numbers(node: dict, path: tuple[str, ...] = ()):
    for key, value in node.items():
        if isinstance(value, dict):
            yield from _numbers(value, (*path, key))
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and _limits_key((*path, key)):
            yield (*path, key)


NUMBER_PATHS = list(_numbers(tomllib.loads(SOURCE)))


@st.composite
def extreme_targets(draw) -> str:
    """The shipped target with numbers anywhere in their documented ranges, often at an end."""
    data = tomllib.loads(SOURCE)
    for path in draw(st.lists(st.sampled_from(NUMBER_PATHS), min_size=1, unique=True)):
        low, high = LIMITS[_limits_key(path)]
        whole = isinstance(low, int) and isinstance(high, int)
        number = st.integers(low, high) if whole else st.floats(low, high, allow_nan=False, allow_infinity=False)
        node = data
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = draw(st.sampled_from([low, high]) | number)
    return "".join(f"{key} = {_toml(value)}\n" for key, value in data.items())


@fuzz_settings(default=100)
@given(extreme_targets())
def test_fuzz_targets_at_the_ends_of_their_ranges_load_and_simulate(text):
    with case("target: numbers in their documented ranges", lambda: _changes(text)):
        _simulates(load_target("extreme.toml", text))  # within every limit: it loads
