"""The three override formats round-trip, and a model tuned through each gives the same run."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tilescope.compiler.errors import OverrideError
from tilescope.compiler.ir.graph import MEMORY_LAYOUTS, TENSOR_LAYOUTS
from tilescope.compiler.pipeline.op_override import OpOverride
from tilescope.compiler.pipeline.options import POLICIES
from tilescope.compiler.sharding.mesh import Sharding
from tilescope.compiler.targets.chip import FIDELITIES
from tilescope.overrides import format_item, parse_item
from tilescope.overrides.explorer_json import format_explorer, parse_explorer
from tilescope.overrides.formats import dump, left_out, parse_text
from tilescope.overrides.override_set import OverrideSet
from tilescope.overrides.portable import portable
from tilescope.overrides.tilescope_json import format_json, parse_json
from tilescope.overrides.ttmlir_options import format_ttmlir, parse_ttmlir

EXAMPLE = OverrideSet(
    [
        OpOverride("matmul_0", grid=(4, 4), memory="l1", memory_layout="block_sharded", layout="tile", dtype="bf16"),
        OpOverride("relu_0", memory="dram", memory_layout="interleaved"),
        OpOverride("matmul_1", grid=(2, 8), dtype="bfp8", fidelity="lofi"),
    ],
    l1_usage_cap=0.75,
)


def _tools_part(overrides: OverrideSet) -> list[OpOverride]:
    """What tt-mlir and TT-Explorer read of a set of overrides."""
    return [kept for kept in map(portable, overrides.canonical().items) if kept is not None]


def test_ttmlir_option_string_holds_what_tt_mlir_reads():
    text = format_ttmlir(EXAMPLE)
    assert text == (
        "override-output-layout=matmul_0=4x4:l1:block_sharded:tile:bf16,relu_0=dram:interleaved,"
        "matmul_1=2x8:bfp8 tensor-l1-usage-cap=0.75"
    )
    assert parse_ttmlir(text).canonical().items == _tools_part(EXAMPLE)
    # and what it leaves out is said, in tilescope's spelling
    assert left_out(EXAMPLE, "tt-mlir") == ["matmul_1=fidelity#lofi"]
    # TT-Explorer's file has no L1 usage cap; neither tool's has tilescope's policy or dispatch
    assert left_out(EXAMPLE, "tt-explorer") == ["tensor-l1-usage-cap=0.75", "matmul_1=fidelity#lofi"]
    tuned = OverrideSet(EXAMPLE.items[:1], policy="greedy-l1", dispatch="trace")
    assert left_out(tuned, "tt-mlir") == ["policy=greedy-l1", "dispatch=trace"]
    assert left_out(OverrideSet(EXAMPLE.items[:1], policy="dram-interleaved", dispatch="host"), "tt-mlir") == []
    assert left_out(EXAMPLE, "tilescope") == []
    # tilescope's own key#value tokens are still read, as older exports wrote them
    assert parse_ttmlir("override-output-layout=matmul_1=2x8:bfp8:fidelity#lofi").items[0].fidelity == "lofi"


def test_ttmlir_accepts_tt_mlirs_own_example_as_is():
    parsed = parse_ttmlir(
        "override-output-layout=op1=1x1:dram:interleaved:tile:f32,op2=4x4:l1:block_sharded:row_major:f16"
    )
    assert [(o.op, o.grid, o.memory, o.memory_layout, o.layout, o.dtype) for o in parsed.items] == [
        ("op1", (1, 1), "dram", "interleaved", "tile", "f32"),
        ("op2", (4, 4), "l1", "block_sharded", "row_major", "f16"),
    ]


def test_explorer_json_shape_and_round_trip():
    data = format_explorer(EXAMPLE)
    entry = data['loc("matmul_0")']
    assert entry["named_location"] == "matmul_0" and entry["full_location"] == 'loc("matmul_0")'
    assert {a["key"]: a["value"] for a in entry["attributes"]} == {
        "grid_shape": "4x4",
        "buffer_type": "l1",
        "tensor_memory_layout": "block_sharded",
        "memory_layout": "tile",
        "data_type": "bf16",
    }
    assert parse_explorer(json.loads(json.dumps(data))).canonical().items == _tools_part(EXAMPLE)
    assert not any("#" in a["key"] for entry in data.values() for a in entry["attributes"])


def test_explorer_export_from_tt_explorer_itself():
    # the shape TT-Explorer's own tests send, with a location of a real export
    data = {
        'loc("relu_3"("MNISTLinear":4294967295:6))': {
            "named_location": "relu_3",
            "attributes": [
                {"key": "data_type", "value": "f32"},
                {"key": "memory_layout", "value": "tile"},
                {"key": "buffer_type", "value": "dram"},
                {"key": "tensor_memory_layout", "value": "interleaved"},
                {"key": "grid_shape", "value": "[2, 4]"},
            ],
        }
    }
    (ov,) = parse_explorer(data).items
    assert (ov.op, ov.grid, ov.memory, ov.memory_layout, ov.layout, ov.dtype) == (
        "relu_3",
        (2, 4),
        "dram",
        "interleaved",
        "tile",
        "f32",
    )


def test_data_tiling_and_inner_tiles_round_trip_tilescope_json_and_the_tools_formats_name_them():
    tiled = OverrideSet([parse_item("fc1=inner_tiles#16x16x1")], data_tiling=True)
    data = format_json(tiled)
    assert data["data_tiling"] is True and data["overrides"] == [{"op": "fc1", "inner_tiles": [16, 16, 1]}]
    assert parse_json(json.loads(json.dumps(data))).canonical() == tiled.canonical()
    for fmt in ("tt-mlir", "tt-explorer"):
        assert left_out(tiled, fmt) == ["data_tiling=true", "fc1=inner_tiles#16x16x1"]


def test_tilescope_json_round_trip_and_schema():
    data = format_json(OverrideSet(EXAMPLE.items, "greedy-l1", "trace", 0.75))
    assert data["version"] == 1 and data["policy"] == "greedy-l1" and data["overrides"][0]["grid"] == [4, 4]
    assert (
        parse_json(json.loads(json.dumps(data))).canonical()
        == OverrideSet(EXAMPLE.items, "greedy-l1", "trace", 0.75).canonical()
    )


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("optimizer-level=2", "unknown option 'optimizer-level'"),
        ("override-output-layout=a=l1 override-output-layout=b=l1", "given twice"),
        ("tensor-l1-usage-cap=1.5", "must be in (0, 1]"),
        ("override-output-layout=a=l1:l2", "unknown token 'l2'"),
        ('{"version": 1, "overrides": [{"op": "a", "grid": [0, 2]}]}', "overrides/0/grid/0"),
        ('{"version": 1, "overrides": [{"op": "a", "colour": "red"}]}', "'colour' was unexpected"),
        ('{"version": 2, "overrides": []}', "version"),
        ('{"version": 1,\n "overrides": [}', ":2:"),
        (
            '{"x": {"named_location": "x", "attributes": [{"key": "shard_spec", "value": "1"}]}}',
            "unknown attribute key 'shard_spec'",
        ),
        ("override-output-layout=a=l1,a=dram", "override for 'a' given twice"),
        ('module {\n  func.func @main(%a: tensor<4xf32>) {\n    %0 = "ttir.relu"(%a)', "f.json: not an overrides file"),
    ],
)
def test_bad_files_name_the_place_and_the_reason(text, fragment):
    with pytest.raises(OverrideError, match=None) as err:
        parse_text(text, "f.json")
    assert fragment in str(err.value)
    assert "\n" not in str(err.value)


def test_format_is_told_by_content():
    assert parse_text(dump(EXAMPLE, "tilescope")).canonical().items == EXAMPLE.canonical().items
    for fmt in ("tt-explorer", "tt-mlir"):
        assert parse_text(dump(EXAMPLE, fmt)).canonical().items == _tools_part(EXAMPLE)


# per dimension, the mesh axes splitting it; no dimensions: replicated
AXES = st.lists(st.sampled_from(["model", "batch", "X", "tp_1"]), max_size=2, unique=True).map(tuple)
SHARDINGS = st.lists(AXES, max_size=3).map(lambda dims: Sharding(tuple(dims)))


@st.composite
def overrides_strategy(draw):
    """Any valid override: an op's (or one result's) layout and kernel, or one operand's layout."""
    dims = st.integers(1, 16)
    port = draw(st.sampled_from(["op", "operand", "result"]))
    fields = dict(
        grid=draw(st.none() | st.tuples(dims, dims)),
        memory=draw(st.none() | st.sampled_from(["dram", "l1", "lls", "system"])),
        memory_layout=draw(st.none() | st.sampled_from(MEMORY_LAYOUTS)),
        layout=draw(st.none() | st.sampled_from(TENSOR_LAYOUTS)),
        dtype=draw(st.none() | st.sampled_from(["f32", "bf16", "bfp8", "bfp4", "i8"])),
        tile=draw(st.none() | st.tuples(st.sampled_from([1, 8, 32]), st.just(32))),
        sharding=draw(st.none() | SHARDINGS),
    )
    if port != "operand":
        fields.update(
            fidelity=draw(st.none() | st.sampled_from(FIDELITIES)),
            block=draw(st.none() | st.tuples(dims, dims, dims)),
            subblock=draw(st.none() | st.tuples(dims, dims)),
            double_buffer=draw(st.none() | st.booleans()),
            inner_tiles=draw(st.none() | st.tuples(dims, dims, dims)),
        )
    if port != "op":
        fields[port] = draw(st.integers(0, 3))
    op = draw(st.from_regex(r"[a-z][a-z0-9_.]{0,12}", fullmatch=True))
    assume(any(v is not None for k, v in fields.items() if k not in ("operand", "result")))
    return OpOverride(op, **fields)


@settings(max_examples=60, deadline=None)
@given(st.lists(overrides_strategy(), max_size=6, unique_by=lambda o: o.key), st.none() | st.floats(0.05, 1.0))
def test_every_format_round_trips_any_override_set(items, cap):
    original = OverrideSet(items, l1_usage_cap=None if cap is None else round(cap, 3))
    for fmt in ("tilescope", "tt-explorer", "tt-mlir"):
        text = dump(original, fmt)
        if fmt == "tilescope":
            assert parse_text(text).canonical().items == original.canonical().items
            continue
        # the tools' formats: what they read, and the rest named
        again = parse_text(text) if _tools_part(original) or fmt == "tt-mlir" else OverrideSet()
        assert again.canonical().items == _tools_part(original), fmt
        no_cap = fmt == "tt-explorer" and original.l1_usage_cap is not None
        assert len(left_out(original, fmt)) == sum(portable(o) != replace(o, spec="") for o in original.items) + no_cap
        if fmt == "tt-mlir":  # TT-Explorer's format carries no globals
            assert again.l1_usage_cap == original.l1_usage_cap


def test_one_op_with_output_operand_and_result_overrides_round_trips_tilescope_json():
    items = [
        OpOverride("matmul_0", grid=(2, 4), memory="l1", memory_layout="block_sharded", tile=(8, 32)),
        OpOverride("matmul_0", memory="l1", memory_layout="width_sharded", grid=(8, 1), operand=1),
        OpOverride("matmul_0", dtype="bf16", operand=0),
        OpOverride("split_0", memory="dram", result=1),
    ]
    original = OverrideSet(items)
    again = parse_text(dump(original, "tilescope"))
    assert again.canonical().items == original.canonical().items
    # tt-mlir and TT-Explorer take an op's output layout: the operand and result items, and the
    # tile shape, are left out and named
    assert dump(original, "tt-mlir") == "override-output-layout=matmul_0=2x4:l1:block_sharded\n"
    assert left_out(original, "tt-mlir") == [
        "matmul_0=tile#8x32",
        "matmul_0=8x1:l1:width_sharded:operand#1",
        "matmul_0=bf16:operand#0",
        "split_0=dram:result#1",
    ]
    for fmt in ("tt-explorer", "tt-mlir"):
        assert parse_text(dump(original, fmt)).canonical().items == _tools_part(original), fmt


def test_sharding_overrides_round_trip_every_format_and_only_tilescope_json_carries_them():
    items = [
        OpOverride("lm_head.matmul", sharding=Sharding(((), ("model",))), operand=1),
        OpOverride("attn.sdpa", memory="l1", sharding=Sharding(())),
        OpOverride("mlp.down.matmul", sharding=Sharding((("batch", "Model"), ()))),
        OpOverride("mlp.up.matmul", grid=(2, 2)),
    ]
    original = OverrideSet(items)
    data = format_json(original)
    assert [entry.get("sharding") for entry in data["overrides"]] == [
        "{},{model}",
        "replicated",
        "{batch,Model},{}",
        None,
    ]
    assert parse_json(data).canonical().items == original.canonical().items
    # tt-mlir options read them among an item's tokens (a sharding's commas are not item breaks)
    text = "override-output-layout=" + ",".join(format_item(o) for o in items)
    assert parse_ttmlir(text).canonical().items == original.canonical().items
    assert dump(original, "tt-mlir") == "override-output-layout=attn.sdpa=l1,mlp.up.matmul=2x2\n"
    assert left_out(original, "tt-mlir") == [
        "lm_head.matmul=operand#1:sharding#{},{model}",
        "attn.sdpa=sharding#replicated",
        "mlp.down.matmul=sharding#{batch,Model},{}",
    ]
    explorer = {'loc("a")': {"named_location": "a", "attributes": [{"key": "sharding#", "value": "{},{model}"}]}}
    assert parse_explorer(explorer).items[0].sharding == Sharding(((), ("model",)))


@pytest.mark.parametrize(
    "entry, fragment",
    [
        ({"op": "a", "sharding": "{},{model}:l1"}, "overrides/0/sharding"),  # no smuggled tokens
        ({"op": "a", "sharding": ["model"]}, "overrides/0/sharding"),
        ({"op": "a", "sharding": "{model"}, "expected {mesh axes} per tensor dimension"),
    ],
)
def test_a_bad_sharding_in_tilescope_json_is_one_line(entry, fragment):
    with pytest.raises(OverrideError) as err:
        parse_json({"version": 1, "overrides": [entry]})
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_the_same_operand_twice_is_an_error():
    with pytest.raises(OverrideError, match="override for 'matmul_0 operand 1' given twice"):
        OverrideSet([OpOverride("matmul_0", memory="l1", operand=1), OpOverride("matmul_0", dtype="bf16", operand=1)])


# --- hostile files: one OverrideError line each, in bounded work ------------------------------------

DEEP = 100_000  # levels: far past the recursion limit of Python's JSON parser
EXPLORER_BAD_TYPES = [  # (file, fragment of the error)
    ('{"x": {"named_location": 5, "attributes": "str"}}', "expected {named_location, attributes"),
    ('{"x": {"named_location": 5, "attributes": []}}', "named_location must be a string, got 5"),
    (
        '{"x": {"named_location": ["a"], "attributes": [{"key": "grid_shape", "value": "4x4"}]}}',
        "named_location must be a string",
    ),
    (
        '{"x": {"named_location": "a", "attributes": {"key": "grid_shape", "value": "4x4"}}}',
        "expected {named_location, attributes",
    ),
    (
        '{"x": {"named_location": "a", "attributes": [{"key": ["grid_shape"], "value": "4x4"}]}}',
        "attribute {'key': ['grid_shape']",
    ),
    (
        '{"x": {"named_location": "a", "attributes": [{"key": {}, "value": "l1"}]}}',
        'expected {"key": string, "value": string}',
    ),
    (
        '{"x": {"named_location": "a", "attributes": [{"key": 5, "value": "l1"}]}}',
        'expected {"key": string, "value": string}',
    ),
    ('{"x": {"named_location": "a", "attributes": [{"key": "grid_shape", "value": null}]}}', "'value': None"),
    (
        '{"x": {"named_location": "a", "attributes": [{"key": "fidelity#"}]}}',
        'expected {"key": string, "value": string}',
    ),
    ('{"x": {"named_location": "a", "attributes": [{"key": "buffer_type", "value": [1]}]}}', "'value': [1]"),
    ('{"x": {"named_location": "a", "attributes": [7]}}', "attribute 7: expected"),
    ('{"x": null}', "expected {named_location, attributes"),
]
HOSTILE = [  # (file, fragment of the error) in every format
    ("[" * DEEP + "]" * DEEP, "not an overrides file"),  # not JSON: an object is
    ('{"a":' * DEEP + "1" + "}" * DEEP, "JSON nested more than 16 levels deep"),
    ('{"x": ' + "[" * DEEP + "]" * DEEP + "}", "JSON nested more than 16 levels deep"),
    ('{"version": 1, "overrides": ' + "[" * 900 + "]" * 900 + "}", "JSON nested more than 16 levels deep"),
    ('{"version": 1, "overrides": [{"op": "a", "grid": [' + "9" * 5000 + ", 1]}]}", "a number with too many digits"),
    ('{"version": 1, "overrides": [], "l1_usage_cap": NaN}', "NaN is not a number JSON allows"),
    (
        '{"x": {"named_location": "a", "attributes": [{"key": "grid_shape", "value": Infinity}]}}',
        "Infinity is not a number JSON allows",
    ),
    ('{"version": 1, "overrides": [], "policy": "' + "p" * 100_000 + '"}', "is not one of"),
    ("override-output-layout=" + "a" * 100_000 + "=zz", "unknown token 'zz'"),
    *EXPLORER_BAD_TYPES,
]


@pytest.mark.parametrize("text, fragment", HOSTILE, ids=range(len(HOSTILE)))
def test_a_hostile_file_is_one_short_line_whether_read_strictly_or_leniently(text, fragment):
    problems: list[str] = []
    try:
        parse_text(text, "f.json", problems)
    except OverrideError as err:  # the file as a whole is unreadable
        problems = [str(err)]
    with pytest.raises(OverrideError) as strict:
        parse_text(text, "f.json")
    for message in (*problems, str(strict.value)):
        assert "\n" not in message and len(message) < 600, message[:200]
    assert fragment in str(strict.value) and fragment in problems[0]


def test_only_strings_make_a_tt_explorer_override():
    # before, a number became the op name "5", and a list the token "[1]"
    assert (
        parse_explorer({"x": {"named_location": "relu_0", "attributes": [{"key": "buffer_type", "value": "l1"}]}})
        .items[0]
        .op
        == "relu_0"
    )
    with pytest.raises(OverrideError, match="named_location must be a string, got 5"):
        parse_explorer({"x": {"named_location": 5, "attributes": [{"key": "buffer_type", "value": "l1"}]}})


def test_a_file_over_4_mib_or_100000_overrides_is_refused_unread(tmp_path):
    from tilescope.overrides.formats import MAX_FILE_BYTES, load_file
    from tilescope.overrides.override_set import MAX_ITEMS

    big = tmp_path / "big.txt"
    big.write_text("override-output-layout=a=l1" + " " * MAX_FILE_BYTES)
    for read in (lambda: load_file(str(big)), lambda: parse_text(big.read_text(), str(big))):
        with pytest.raises(OverrideError, match=r"big.txt: more than 4 MiB: not an overrides file"):
            read()
    # a device that never ends is read no further than the limit
    with pytest.raises(OverrideError, match=r"/dev/zero: more than 4 MiB"):
        load_file("/dev/zero")
    many = [{"op": f"op{i}", "memory": "l1"} for i in range(MAX_ITEMS + 1)]
    for text in (
        json.dumps({"version": 1, "overrides": many}),
        json.dumps({f"op{i}": {"attributes": []} for i in range(MAX_ITEMS + 1)}),
        "override-output-layout=" + ",".join(f"op{i}=l1" for i in range(MAX_ITEMS + 1)),
    ):
        with pytest.raises(OverrideError, match=r"100,001 overrides: at most 100,000 in one file"):
            parse_text(text, "f", [])


def test_a_byte_order_mark_is_read_past(tmp_path):
    path = tmp_path / "o.json"
    path.write_text("\ufeff" + dump(EXAMPLE, "tilescope"), encoding="utf-8")
    from tilescope.overrides.formats import load_file

    assert load_file(str(path)).canonical() == parse_text(dump(EXAMPLE, "tilescope")).canonical()


@pytest.mark.parametrize("text, fragment", HOSTILE[1:3] + EXPLORER_BAD_TYPES[:6], ids=range(8))
def test_the_apps_import_control_gets_an_override_error_not_a_500(text, fragment):
    """The explorer's "import overrides file" upload: a data URL of the file, read by the overrides
    package; the page shows an OverrideError's line, anything else was an HTTP 500."""
    import base64

    from tilescope.app.workbench.override_form import imported_overrides

    contents = "data:application/json;base64," + base64.b64encode(text.encode()).decode()
    try:
        items, problems = imported_overrides("o.json", contents)
    except OverrideError as err:
        problems = [str(err)]
    else:
        assert items == []
    assert len(problems) == 1 and fragment in problems[0] and "\n" not in problems[0]


def test_every_policy_a_run_may_have_is_one_a_tilescope_json_file_takes():
    """A tuned set under tt-mlir's production defaults (`optimizer`) is written and read back."""
    for policy in POLICIES:
        written = OverrideSet([], policy)
        assert parse_json(json.loads(json.dumps(format_json(written)))).policy == policy
