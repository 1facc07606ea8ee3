"""Fuzzing the importer with mutations of the shipped examples and the tests' tiny MLP.

The property, whatever the mutation: importing (and, for what imports, compiling and simulating on
wormhole_n150) either succeeds or raises a TilescopeError whose message is one line; never another
exception, never a crash of the process (MLIR's parser segfaults on deep nesting: the importer's
nesting check must stop that first). TILESCOPE_FUZZ_EXAMPLES=N runs N examples per category
(default 100, about a second each in CI); TILESCOPE_FUZZ_REPORT=FILE tallies them (tests/fuzzing.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.frontend.mlir_import import MAX_NESTING, import_mlir
from tilescope.compiler.frontend.model_refs import EXAMPLES, load_model
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.sim.simulator import simulate
from tilescope.compiler.targets.catalog import load_target
from tests.fuzzing import case, fuzz_settings, one_line

FUZZ = fuzz_settings(default=100)
SEED_FILES = [*sorted(EXAMPLES.glob("*.mlir")), Path(__file__).parents[1] / "data" / "tiny_mlp.mlir"]
SEEDS = {p.name: p.read_text() for p in SEED_FILES}
WORMHOLE = load_target("wormhole_n150")

seed_texts = st.sampled_from(sorted(SEEDS)).map(SEEDS.__getitem__)


def holds(category: str, load, what: str) -> None:
    """The property, for `load()` giving an ImportedModel; `what` describes the case in the tally."""
    with case(f"import: {category}", lambda: what):
        try:
            compilation = compile_model(load(), WORMHOLE)
            simulate(compilation.kernel, WORMHOLE)
        except TilescopeError as err:
            one_line(str(err))


# --- mutations --------------------------------------------------------------------------------------


@st.composite
def truncated(draw) -> str:
    text = draw(seed_texts)
    return text[: draw(st.integers(0, len(text)))]


@st.composite
def flipped_bytes(draw) -> bytes:
    """Bit flips and inserted raw bytes: mostly not UTF-8, which the file reader must refuse."""
    raw = bytearray(draw(seed_texts).encode())
    for _ in range(draw(st.integers(1, 8))):
        at = draw(st.integers(0, len(raw) - 1))
        if draw(st.booleans()):
            raw[at] ^= 1 << draw(st.integers(0, 7))
        else:
            raw[at:at] = draw(st.binary(min_size=1, max_size=8))
    return bytes(raw)


_CLOSERS = {
    "[": "]",
    "{": "}",
    "(": ")",
    "<": ">",
    "tuple<": ">",
    '"t.r"() ({\n': "}) : () -> ()\n",
    "module {\n": "}\n",
}


@st.composite
def nested(draw) -> str:
    """Nesting near the limit and far past it, where MLIR's parser used to crash: at a random
    place, or as an attribute every generic op accepts (so the parser really descends)."""
    text = draw(seed_texts)
    opener = draw(st.sampled_from(sorted(_CLOSERS)))
    depth = draw(st.one_of(st.integers(1, 2 * MAX_NESTING), st.integers(MAX_NESTING, 20_000)))
    inner = opener * depth + (_CLOSERS[opener] * depth if draw(st.booleans()) else "")
    if draw(st.booleans()):
        return text.replace(") : (", f") {{fz = {inner}}} : (", 1)
    at = draw(st.integers(0, len(text)))
    return text[:at] + inner + text[at:]


_SPECIAL_DIMS = st.sampled_from(["0", "?", "-3", "1", "99999999999", "281474976710657", "18446744073709551616"])
_DIMS = st.one_of(_SPECIAL_DIMS, st.sampled_from(["31", "32", "4096"]), st.integers(0, 2**70).map(str))
_DTYPES = st.sampled_from(["f32", "bf16", "i1", "ui8", "f8E4M3FN", "bfp8", "complex<f32>", "index", "none", "!t.x"])


@st.composite
def redimensioned(draw) -> str:
    """One dim size changed in every tensor type (so a matmul's K or N becomes 0 or ? and the model
    stays consistent enough to reach the compiler), or one tensor type given other dims and maybe
    another element type, in every use or in one."""
    text = draw(seed_texts)
    if draw(st.booleans()):
        size = draw(st.sampled_from(sorted(set(re.findall(r"(?<=[<x])(\d+)(?=x)", text)))))
        new_size = draw(st.one_of(_SPECIAL_DIMS, _DIMS))
        return re.sub(r"tensor<[^>]*>", lambda m: re.sub(rf"(?<=[<x]){size}(?=x)", new_size, m.group()), text)
    old = draw(st.sampled_from(sorted(set(re.findall(r"tensor<[0-9x]*?x?\w+>", text)))))
    dims = draw(st.lists(_DIMS, max_size=4))
    dtype = draw(st.one_of(st.just(old[7:-1].rsplit("x", 1)[-1]), _DTYPES))
    new = f"tensor<{'x'.join([*dims, dtype])}>"
    return text.replace(old, new) if draw(st.booleans()) else text.replace(old, new, 1)


_IDENT = st.from_regex(r"[A-Za-z_][A-Za-z0-9_$]{0,15}", fullmatch=True)


@st.composite
def unknown_dialects(draw) -> str:
    """Op kinds under other dialect names: whole new kinds, or a known op under a new dialect."""
    text = draw(seed_texts)
    # generic-form kinds ("ttir.add"), else custom-syntax ones (= sdy.all_reduce ..., IREE's = linalg.pack ...)
    custom = r"= (?:sdy|stablehlo|linalg|util|hal|flow|iree_tensor_ext|arith)\.[\w.]+ "
    kinds = sorted(set(re.findall(r'"ttir\.\w+"', text))) or sorted(set(re.findall(custom, text)))
    for kind in draw(st.lists(st.sampled_from(kinds), min_size=1, max_size=3, unique=True)):
        op = draw(st.one_of(_IDENT, st.just(kind.strip('"= ').split(".", 1)[1])))
        new_kind = f'"{draw(_IDENT)}.{op}"' if kind.startswith('"') else f"= {draw(_IDENT)}.{op} "
        text = text.replace(kind, new_kind)
    return text


_LOC_TEXT = st.one_of(
    st.text(max_size=40),
    st.lists(
        st.sampled_from(
            [
                r"\00",
                r"\0A",
                r"\09",
                r"\7F",
                r"\FF",
                r"\C3\A9",
                r"\C3",
                r"\"",
                "\\\\",
                "\\",
                '"',
                "\t",
                "\ud800",
                "\u2028",
                "\x85",
                ".",
                "#",
                ":",
                "é",
                "a",
                "a.b",
            ]
        ),
        max_size=20,
    ).map("".join),
    st.integers(1, 5000).map(lambda n: "a." * n),
)


@st.composite
def odd_locs(draw) -> str:
    """Op lines given loc names of odd characters: escapes of control and non-UTF-8 bytes, quotes,
    lone surrogates, separators, very long dotted names."""
    lines = draw(seed_texts).split("\n")
    op_lines = [i for i, line in enumerate(lines) if re.match(r'\s*%\S+ = ["a-z]', line)]
    for i in draw(st.lists(st.sampled_from(op_lines), min_size=1, max_size=3)):
        lines[i] = re.sub(r" loc\(.*\)$", "", lines[i]) + f' loc("{draw(_LOC_TEXT)}")'
    return "\n".join(lines)


# --- the property per category ---------------------------------------------------------------------

MUTATIONS = {
    "truncation": truncated(),
    "inserted nesting": nested(),
    "random dims": redimensioned(),
    "unknown dialects": unknown_dialects(),
    "odd loc names": odd_locs(),
}


@pytest.mark.parametrize("category", list(MUTATIONS))
@FUZZ
@given(data=st.data())
def test_mutated_models(category, data):
    text = data.draw(MUTATIONS[category], label="text")
    holds(category, lambda: import_mlir(text, "fuzz.mlir"), f"{len(text):,} chars: {text[:60]!r}")


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@FUZZ
@given(raw=flipped_bytes())
def test_flipped_bytes_through_the_file_reader(raw, fuzz_dir):
    path = fuzz_dir / "flipped.mlir"
    path.write_bytes(raw)
    holds("byte flips, through the file reader", lambda: load_model(str(path)), f"{len(raw):,} bytes: {raw[:60]!r}")
