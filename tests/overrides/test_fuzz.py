"""Fuzzing the override readers: random tt-mlir option strings, tilescope and TT-Explorer JSON of
random shapes and types, arbitrary and deeply nested JSON, and random bytes as files. Each reads to
an OverrideSet (which every format can write) or one OverrideError line; never another exception."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tilescope.compiler.errors import OverrideError
from tilescope.compiler.ir.graph import MEMORY_LAYOUTS, TENSOR_LAYOUTS
from tilescope.compiler.pipeline.op_override import OpOverride
from tilescope.overrides.formats import dump, load_file, parse_text
from tilescope.overrides.override_set import OverrideSet
from tilescope.overrides.tilescope_json import format_json
from tilescope.overrides.ttmlir_options import L1_USAGE_CAP, OUTPUT_LAYOUT
from tilescope.overrides.spec import EXTENSIONS, parse_item
from tests.fuzzing import case, fuzz_settings, one_line

OPS = st.sampled_from(["matmul_0", "relu_0", "a", 'loc("x")', "", " ", "a=b", "a:b", "a,b", "a b", "\x00"]) | st.text(
    max_size=12
)
NUMBERS = (
    st.sampled_from(
        ["0", "1", "4", "-1", "1.5", "99999999999999999999", "1e308", "nan", "inf", "-0", "0x10", "1_0", "\u0663", ""]
    )
    | st.integers().map(str)
    | st.integers(4000, 5000).map("9".__mul__)  # past the digits Python converts
)
WORDS = st.sampled_from(
    [
        "dram",
        "l1",
        "lls",
        "system",
        "system_memory",
        *MEMORY_LAYOUTS,
        *TENSOR_LAYOUTS,
        "bf16",
        "bfp8",
        "f32",
        "mxint8",
        "bfloat16",
        "lofi",
        "hifi4",
        "true",
        "false",
        "#",
        ":",
        "=",
        ",",
        "x",
    ]
)
DIMS = st.lists(NUMBERS, min_size=1, max_size=4).map("x".join)
TOKENS = (
    WORDS
    | DIMS
    | st.builds("{}#{}".format, st.sampled_from([*EXTENSIONS, "bogus", ""]), WORDS | DIMS)
    | st.text(max_size=8)
)
ITEMS = st.builds("{}={}".format, OPS, st.lists(TOKENS, max_size=6).map(":".join)) | st.text(max_size=24)
OPTIONS = st.lists(
    st.builds((OUTPUT_LAYOUT + "={}").format, st.lists(ITEMS, max_size=6).map(",".join))
    | st.builds((L1_USAGE_CAP + "={}").format, NUMBERS | st.floats().map(repr))
    | st.builds("{}={}".format, st.text(max_size=8), st.text(max_size=8))
    | st.text(max_size=16),
    max_size=4,
)
OPTION_STRINGS = st.builds(lambda options, sep: sep.join(options), OPTIONS, st.sampled_from([" ", "\n", "\t ", "\r\n"]))

SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=16,
)


def _or_anything(strategy):
    return strategy | JSON


TILESCOPE_ENTRY = st.fixed_dictionaries(
    {},
    optional={
        "op": _or_anything(OPS),
        "grid": _or_anything(st.lists(st.integers(-2, 300), max_size=3)),
        "memory": _or_anything(WORDS),
        "memory_layout": _or_anything(WORDS),
        "layout": _or_anything(WORDS),
        "dtype": _or_anything(WORDS),
        "fidelity": _or_anything(WORDS),
        "block": _or_anything(st.lists(st.integers(-1, 10**12), max_size=4)),
        "subblock": _or_anything(st.lists(st.integers(-1, 64), max_size=3)),
        "double_buffer": _or_anything(st.booleans()),
        "tile": _or_anything(st.lists(st.integers(-1, 64), max_size=3)),
        "operand": _or_anything(st.integers(-1, 10**9)),
        "result": _or_anything(st.integers(-1, 10**9)),
        "colour": JSON,
    },
)
TILESCOPE = st.fixed_dictionaries(
    {"version": st.just(1) | JSON},
    optional={
        "overrides": _or_anything(st.lists(_or_anything(TILESCOPE_ENTRY), max_size=5)),
        "policy": _or_anything(st.sampled_from(["dram-interleaved", "greedy-l1", "fast"])),
        "dispatch": _or_anything(st.sampled_from(["host", "trace"])),
        "l1_usage_cap": _or_anything(st.floats()),
    },
)
ATTRIBUTE = st.fixed_dictionaries(
    {},
    optional={
        "key": _or_anything(
            st.sampled_from(
                [
                    "grid_shape",
                    "buffer_type",
                    "tensor_memory_layout",
                    "memory_layout",
                    "data_type",
                    "fidelity#",
                    "block#",
                    "operand#",
                    "shard_spec",
                    "#",
                    "",
                ]
            )
        ),
        "value": _or_anything(WORDS | DIMS | st.sampled_from(["[2, 4]", "4x4x4", "[]"])),
    },
)
EXPLORER = st.dictionaries(
    st.sampled_from(['loc("matmul_0")', 'loc("relu_0"("f":1:2))', "x"]) | st.text(max_size=16),
    _or_anything(
        st.fixed_dictionaries(
            {},
            optional={
                "named_location": _or_anything(OPS),
                "full_location": JSON,
                "attributes": _or_anything(st.lists(_or_anything(ATTRIBUTE), max_size=5)),
            },
        )
    ),
    max_size=4,
)
# where a deep structure is put in an otherwise good file
SLOT = "\x00slot"
TEMPLATES = [
    {"version": 1, "overrides": [{"op": "a", "grid": SLOT}]},
    {"version": 1, "overrides": SLOT},
    {"version": 1, "overrides": [], "policy": SLOT},
    {"x": {"named_location": "a", "attributes": [{"key": "grid_shape", "value": SLOT}]}},
    {"x": SLOT},
    {SLOT[1:]: SLOT},
]


@st.composite
def deeply_nested(draw) -> str:
    depth = draw(st.integers(1, 2000) | st.sampled_from([15, 16, 17, 990, 1000, 1001, 100_000]))
    levels = draw(st.lists(st.sampled_from(["[]", '{"a":}', "[1,]"]), min_size=1, max_size=3))
    inner = draw(st.sampled_from(["1", "[]", "{}", '"x"', "null", ""]))
    opened = "".join(levels[i % len(levels)][:-1] for i in range(depth))
    closed = "".join(levels[i % len(levels)][-1] for i in reversed(range(depth)))
    template = json.dumps(draw(st.sampled_from(TEMPLATES)))
    return template.replace(json.dumps(SLOT), opened + inner + closed, 1)


def _texts(data) -> st.SearchStrategy[str]:
    """A document as users write them, or broken after a random number of characters."""
    text = json.dumps(data) if not isinstance(data, str) else data
    return st.just(text) | st.integers(0, len(text)).map(lambda n: text[:n])


def _read(category: str, text: str) -> None:
    """The property: strictly, an OverrideSet or one OverrideError line; leniently, the same, or
    a set whose problems are each one line. What was read, every format can write."""
    with case(category, lambda: text):
        problems: list[str] = []
        for errors in (None, problems):
            try:
                found = parse_text(text, "f.json", errors)
            except OverrideError as err:
                one_line(str(err))
                continue
            assert isinstance(found, OverrideSet) and all(isinstance(o, OpOverride) for o in found.items)
            for fmt in ("tilescope", "tt-explorer", "tt-mlir"):
                dump(found, fmt)
        for problem in problems:
            one_line(problem)


@fuzz_settings()
@given(OPTION_STRINGS | ITEMS)
def test_fuzz_ttmlir_option_strings(text):
    _read("overrides: tt-mlir option strings", text)
    with case("overrides: single items", lambda: text):
        try:
            parse_item(text)
        except OverrideError as err:
            one_line(str(err))


@fuzz_settings()
@given(TILESCOPE.flatmap(_texts))
def test_fuzz_tilescope_json(text):
    _read("overrides: tilescope JSON", text)


@fuzz_settings()
@given(EXPLORER.flatmap(_texts))
def test_fuzz_tt_explorer_json(text):
    _read("overrides: TT-Explorer JSON", text)


@fuzz_settings()
@given(JSON.map(json.dumps) | deeply_nested())
def test_fuzz_arbitrary_and_deeply_nested_json(text):
    _read("overrides: arbitrary and deep JSON", text)


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("override-files")


@fuzz_settings()
@given(
    st.binary(max_size=200)
    | st.builds(
        lambda text, codec: text.encode(codec, "replace"),
        OPTION_STRINGS | TILESCOPE.map(json.dumps),
        st.sampled_from(["utf-8", "utf-16", "latin-1", "utf-8-sig"]),
    )
    | st.just(json.dumps(format_json(OverrideSet([OpOverride("a", memory="l1")]))).encode())
)
def test_fuzz_override_files(files, data):
    path = files / "overrides.json"
    path.write_bytes(data)
    with case("overrides: files (bytes)", lambda: repr(data)):
        try:
            found = load_file(str(path), [])
        except OverrideError as err:
            one_line(str(err))
        else:
            assert isinstance(found, OverrideSet)
