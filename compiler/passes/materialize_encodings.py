"""partition (its last pass): encodings become layouts, as IREE's materialize-device-encoding
pass makes them for a device: each encoded matmul becomes pack -> mmt4d -> unpack with the
target's inner tiles for its element type (or an override's).

    %x.e = set_encoding(%x)    ->  %x.e = pack(%x) {inner_tiles = array<i64: 32, 32>} : 128x512 -> 4x16x32x32
    %y.e = matmul(%x.e, %w.e)  ->  %y.e = mmt4d(%x.e, %w.e)                             -> 4x8x32x32
    %y = unset_encoding(%y.e)  ->  %y = unpack(%y.e)                                    -> 128x256

A result unpacked only to be packed again the same way by the next matmul (through element-wise
ops that read nothing else) is never unpacked: the pair cancels and the ops between work on the
packed tensor, as IREE's propagation of encodings through element-wise ops does. Encodings of
element types the target declares no tiles for stay as they are (their relayouts are costed
as copies); encodings from an imported program are materialized alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tilescope.compiler.analysis.matmul_encoding import (
    LHS,
    ROLES,
    TRANSPOSED,
    MatmulEncoding,
    matmul_encoding,
    tiles_attr,
)
from tilescope.compiler.ir import opset
from tilescope.compiler.ir.graph import Graph, Op
from tilescope.compiler.ir.meta import CANCELLED_PACKS, PACKED_TILES, CancelledPair
from tilescope.compiler.ir.rewrite import readers
from tilescope.compiler.targets.chip import Target

_FIELD = {
    "operand": re.compile(r"operand_index = (\d+)"),
    "types": re.compile(r"element_types = \[([^\]]*)\]"),
    "sizes": re.compile(r"iteration_sizes = \[([^\]]*)\]"),
}


def encoded_operand(text: str | None) -> int | None:
    """Which operand of a matmul an `#iree_encoding.encoding<...>` text says its tensor is (0 the
    LHS, 1 the RHS, 2 the result), or None for another encoding or one without static iteration
    sizes (older IREE's). The sizes themselves are the tensors' (matmul_encoding)."""
    if not text or "op_type = matmul" not in text:
        return None
    found = {key: pattern.search(text) for key, pattern in _FIELD.items()}
    if not all(found.values()):
        return None
    types = found["types"].group(1).split(",")
    try:
        sizes = [int(s.split(":")[0]) for s in found["sizes"].group(1).split(",")]
    except ValueError:  # a dynamic size (`?`)
        return None
    if len(types) != 3 or len(sizes) not in (3, 4) or min(sizes) < 1:
        return None
    return int(found["operand"].group(1))


@dataclass(frozen=True)
class MaterializeEncodings:
    name = "materialize-encodings"
    target: Target
    inner_tiles: dict[str, tuple[int, int, int]] = field(default_factory=dict, compare=False)  # per matmul

    def run(self, graph: Graph) -> Graph:
        if not any(t.encoding for t in graph.tensors.values()):
            graph.meta[CANCELLED_PACKS], graph.meta[PACKED_TILES] = [], _packed_tiles(graph, set())
            return graph
        packed: dict[str, tuple[tuple[int, ...], int]] = {}  # tensor -> its packed shape, which operand
        for op in graph.ops:
            if op.kind == "matmul" and len(op.inputs) >= 2 and op.outputs:
                self._materialize(graph, op, packed)
        for op in graph.ops:
            if op.kind == "set_encoding" and op.outputs and op.outputs[0] in packed:
                shape, operand = packed[op.outputs[0]]
                op.kind = "pack"  # its inner tiles as linalg.pack's: the two inner dims it packs into
                op.attrs.update(inner_tiles=tiles_attr(shape[-2:]), operand=ROLES[operand])
            elif op.kind == "unset_encoding" and op.inputs and op.inputs[0] in packed:
                op.kind = "unpack"
                op.attrs["inner_tiles"] = tiles_attr(packed[op.inputs[0]][0][-2:])
        for name, (shape, _) in packed.items():
            tensor = graph.tensors[name]
            tensor.shape, tensor.encoding = shape, None
        graph.meta[CANCELLED_PACKS], chained = _cancel_pairs(graph)
        graph.meta[PACKED_TILES] = _packed_tiles(graph, chained)
        return graph

    def _materialize(self, graph: Graph, op: Op, packed: dict) -> None:
        names = (op.inputs[0], op.inputs[1], op.outputs[0])
        if [encoded_operand(graph.tensors[t].encoding) for t in names] != [0, 1, 2]:
            return
        # the sizes as the tensors hold them (a device's part of a matmul split over several), not as
        # an imported encoding says them: the encoding says what each tensor is for
        encoding = matmul_encoding(graph, op)
        if encoding is None:
            return
        tile = self.inner_tiles.get(op.name) or narrowed(self.target.inner_tile(encoding.element_types[LHS]), encoding)
        if tile is None:
            return
        for index, name in enumerate(names):
            packed[name] = (encoding.packed_shape(index, tile), index)
        op.kind = "mmt4d"
        op.attrs["inner_tiles"] = tiles_attr(tile)


def narrowed(tile: tuple[int, int, int] | None, encoding: MatmulEncoding) -> tuple[int, int, int] | None:
    """`tile` with M0 narrowed to the power of two that holds M when M is shorter than M0, as
    IREE's CPU encoding resolver does for a matmul of few rows (a decode step's)."""
    if tile is None or encoding.m >= tile[0]:
        return tile
    return (1 << (encoding.m - 1).bit_length(), tile[1], tile[2])


def _packed_tiles(graph: Graph, chained: set[str]) -> dict[str, tuple[int, int]]:
    """Every packed tensor (a pack's result, an unpack's operand, an mmt4d's operands and result,
    the results of ops between a cancelled pair; materialized here or imported so) and the inner
    tile it is stored in: its last two dims."""
    found: dict[str, tuple[int, int]] = {}
    for op in graph.ops:
        names = {"pack": op.outputs, "unpack": op.inputs[:1], "mmt4d": [*op.inputs[:2], *op.outputs]}.get(op.kind, ())
        for name in [*names, *(t for t in op.outputs if t in chained)]:
            shape = graph.tensors[name].shape
            if len(shape) >= 4:  # a packed tensor: outer dims, then the inner tile
                found[name] = (shape[-2], shape[-1])
    return found


def _cancel_pairs(graph: Graph) -> tuple[list[CancelledPair], set[str]]:
    """Unpacks whose result, through element-wise ops reading nothing else, is only packed again
    into the same shape: both go, and the ops between work on the packed tensor. The pairs, and
    the results of the ops between."""
    read_by = readers(graph)
    outputs = set(graph.outputs)
    gone: set[str] = set()
    pairs: list[CancelledPair] = []
    chained: set[str] = set()
    for unpack in [op for op in graph.ops if op.kind == "unpack"]:
        chain, pack = _chain_to_pack(graph, unpack, read_by, outputs)
        source = unpack.inputs[0]
        # the same bytes only when the pack is a next matmul's LHS, read as it lies, of the same
        # shape: the result's M0 x N0 tiles are then its M0 x K0 tiles (an RHS pack transposes them)
        same = pack is not None and pack.attrs.get("operand") == "lhs" and not pack.attrs.get(TRANSPOSED)
        if not same or graph.tensors[pack.outputs[0]].shape != graph.tensors[source].shape:
            continue
        for step in chain:  # each works on the packed tensor now
            graph.tensors[step.outputs[0]].shape = graph.tensors[source].shape
            chained.add(step.outputs[0])
        first = chain[0] if chain else None
        last = chain[-1].outputs[0] if chain else source
        if first is not None:
            first.inputs = [source]
        for reader in read_by.get(pack.outputs[0], []):
            reader.inputs = [last if t == pack.outputs[0] else t for t in reader.inputs]
        for dropped in (unpack, pack):
            graph.tensors.pop(dropped.outputs[0], None)
        gone.update((unpack.name, pack.name))
        pairs.append(CancelledPair(unpack.name, pack.name))
    graph.ops = [op for op in graph.ops if op.name not in gone]
    return pairs, chained


def _chain_to_pack(graph: Graph, unpack: Op, read_by: dict[str, list[Op]], outputs: set[str]):
    """The element-wise ops (and reshapes that only fold or unfold rows) from `unpack`'s result to
    the one pack that reads the end of the chain
    (each tensor read once, by the next, and not a graph output), and that pack; (chain, None)
    where the result goes anywhere else."""
    chain: list[Op] = []
    tensor = unpack.outputs[0]
    while True:
        if tensor in outputs or len(read_by.get(tensor, [])) != 1:
            return chain, None
        (reader,) = read_by[tensor]
        if reader.kind == "pack" and reader.inputs == [tensor]:
            return chain, (reader if reader.outputs[0] not in outputs else None)
        unary = opset.op_class(reader.kind).kind_class == opset.ELTWISE_UNARY or _folds_rows(graph, reader)
        if not unary or reader.inputs != [tensor] or len(reader.outputs) != 1 or reader.attrs.get("const_eval"):
            return chain, None
        if not _in_place(reader):  # a generic reading through a permuting map moves elements
            return chain, None
        chain.append(reader)
        tensor = reader.outputs[0]


_MAP = re.compile(r"affine_map<\(([^)]*)\)\s*->\s*\(([^)]*)\)>")


def _in_place(op: Op) -> bool:
    """An op that writes each element where it read it: every indexing map an identity (an
    imported linalg.generic's), or none given."""
    maps = _MAP.findall(str(op.attrs.get("indexing_maps", "")))
    return all(dims.replace(" ", "") == results.replace(" ", "") for dims, results in maps)


def _folds_rows(graph: Graph, op: Op) -> bool:
    """A reshape that only folds leading dims into rows or unfolds them ([8, 384, 768] and
    [3072, 768]): on a packed tensor, nothing (its rows are already M1 x M0)."""
    if op.kind != "reshape" or len(op.inputs) != 1 or len(op.outputs) != 1:
        return False
    src, dst = graph.tensors[op.inputs[0]].shape, graph.tensors[op.outputs[0]].shape
    return bool(src) and bool(dst) and src[-1] == dst[-1] and len(src) >= 2 and len(dst) >= 2
