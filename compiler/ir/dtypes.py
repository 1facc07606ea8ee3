"""Element types: storage size per element, including shared exponents of block formats."""

from __future__ import annotations

from tilescope.compiler.errors import TilescopeError

# Bytes per element. Block floating point shares one exponent byte per 16 mantissas:
# bfp8 = (16 x 1 B + 1 B) / 16 = 1.0625 B, bfp4 = (16 x 0.5 B + 1 B) / 16 = 0.5625 B
# (tt-metal tech_reports/data_formats; ../shared/reference/targets.md "bfp8 ~1.06 B, bfp4 ~0.56 B").
BYTES_PER_ELEMENT: dict[str, float] = {
    "f64": 8.0,
    "f32": 4.0,
    "tf32": 4.0,
    "bf16": 2.0,
    "f16": 2.0,
    "bfp8": 1.0625,
    "bfp4": 0.5625,
    "f8": 1.0,
    # OCP Microscaling (MX) v1.0: blocks of 32 elements share one 8-bit scale, so 1/32 B per
    # element on top of the element bits; d-Matrix's MXINT16 uses the same 32-element blocks
    "mxint8": 1.03125,
    "mxint4": 0.53125,
    "mxint16": 2.03125,
    "i64": 8.0,
    "i32": 4.0,
    "ui32": 4.0,
    "i16": 2.0,
    "ui16": 2.0,
    "i8": 1.0,
    "ui8": 1.0,
    "i1": 1.0,
}


def normalize(name: str) -> str:
    """Map MLIR element type spellings to ours (e.g. 'ui8' stays, 'si32' -> 'i32')."""
    name = name.strip()
    if name.startswith("si"):
        name = "i" + name[2:]
    if name in ("f8E4M3FN", "f8E5M2", "f8E4M3FNUZ", "f8E5M2FNUZ"):
        return "f8"
    return name


def bytes_per_element(dtype: str) -> float:
    try:
        return BYTES_PER_ELEMENT[dtype]
    except KeyError:
        raise TilescopeError(f"unknown dtype {dtype!r}; known: {', '.join(BYTES_PER_ELEMENT)}") from None
