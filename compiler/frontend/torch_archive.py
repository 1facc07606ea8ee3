"""The program of a `.pt2` file (torch.export.save's archive) read without running anything in it.

torch.export.load unpickles the archive's weights, constants and sample inputs (pickle runs
whatever code a pickle names), so a hostile .pt2 runs code as whoever opens it. tilescope needs
the graph alone: the archive's JSON (models/<name>.json, torch's serialized ExportedProgram
schema), checked first to ask nothing of torch's deserializer but static shapes and aten ops
(its symbolic sizes are sympy expressions it evaluates, its targets attributes of torch the
program calls when traced), then deserialized with every weight, buffer and constant an empty
tensor on the meta device of the shape and dtype the graph itself gives. No pickle in the
archive is opened."""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path
from typing import Any

from tilescope.compiler.errors import ModelLoadError

MAX_MEMBERS = 100_000  # files in an archive: a program's weights are a few thousand at most
MAX_GRAPH_BYTES = 256 * 2**20  # the graph's JSON: a 10k-layer model's is well under this
MODELS = "/models/"


def read_pt2(torch: Any, source: Path | bytes, name: str) -> Any:
    """The ExportedProgram in a .pt2 file (a path, or its bytes), its weights on the meta device;
    `torch` is the torch package (torch_export.torch_module)."""
    raw = _graph_json(source, name)
    from torch._export.serde import schema
    from torch._export.serde.serialize import ExportedProgramDeserializer, _dict_to_dataclass

    try:
        found = json.loads(raw)
    except (ValueError, RecursionError):
        raise ModelLoadError(f"{name}: its graph is not JSON") from None
    checked(found, name)
    try:
        serialized = _dict_to_dataclass(schema.ExportedProgram, found)
        for tensor in serialized.graph_module.graph.tensor_values.values():
            tensor.device = schema.Device(type="meta")  # every tensor where the weights are: traced, not held
        weights, constants = _meta_tensors(torch, serialized)
        return ExportedProgramDeserializer().deserialize(serialized, weights, constants, None)
    except ModelLoadError:
        raise
    except Exception as err:  # torch's reason, on one line: a graph of another version, a bad field
        text = (str(err).strip().splitlines() or [type(err).__name__])[0][:300]
        raise ModelLoadError(f"{name}: not a torch.export program this torch reads: {text}") from None


# what torch's deserializer would do more with than read: a symbolic size is a sympy expression it
# evaluates (sympify runs eval), a node's target is any attribute of torch it resolves and the
# program calls when it is traced (torch.hub.load among them), a custom object is a pickle, a
# subgraph is a program of its own. tilescope's import needs none of them: static shapes and aten ops.
REFUSED_KEYS = frozenset({"as_expr", "expr_str", "as_custom_obj", "custom_obj", "as_graph", "as_sym_int"})
REFUSED_KEYS |= {"as_sym_ints", "as_sym_bool", "as_sym_bools", "as_sym_float", "as_sym_floats"}
SYMBOLS = ("sym_int_values", "sym_bool_values", "sym_float_values")
TARGET = re.compile(r"(torch\.ops\.aten\.\w+\.\w+|_operator\.getitem)")
KEPT_METADATA = ("stack_trace", "nn_module_stack")  # the rest names more of torch to resolve
MAX_DEPTH = 64  # nesting of the graph's JSON: torch's own is under 20


def checked(found: Any, name: str) -> None:
    """Refuse, in one line, a graph that asks torch's deserializer for more than static shapes
    and aten ops (REFUSED_KEYS, symbols, other targets); drop the metadata tilescope does not read."""
    module = found.get("graph_module") if isinstance(found, dict) else None
    graph = module.get("graph") if isinstance(module, dict) else None
    if not isinstance(graph, dict) or not isinstance(graph.get("nodes"), list):
        raise ModelLoadError(f"{name}: not a torch.export program (no graph in its JSON)")
    if any(graph.get(key) for key in SYMBOLS) or found.get("range_constraints"):
        raise ModelLoadError(f"{name}: a program of symbolic shapes (tilescope imports static shapes)")
    for node in graph["nodes"]:
        target = node.get("target") if isinstance(node, dict) else None
        if not isinstance(target, str) or not TARGET.fullmatch(target):
            raise ModelLoadError(f"{name}: a node calls {str(target)[:100]!r}, not an aten op")
        metadata = node.get("metadata")
        if isinstance(metadata, dict):
            node["metadata"] = {k: v for k, v in metadata.items() if k in KEPT_METADATA}
    refused = _refused_key(found, 0)
    if refused:
        raise ModelLoadError(f"{name}: its graph holds {refused!r} (symbolic shapes, custom objects or subgraphs)")


def _refused_key(value: Any, depth: int) -> str | None:
    """The first of REFUSED_KEYS anywhere in `value`, or a nesting too deep to be torch's."""
    if depth > MAX_DEPTH:
        return "nesting"
    if isinstance(value, dict):
        for key, item in value.items():
            if key in REFUSED_KEYS and item is not None:
                return key
            found = _refused_key(item, depth + 1)
            if found:
                return found
    elif isinstance(value, list):
        for item in value:
            found = _refused_key(item, depth + 1)
            if found:
                return found
    return None


def _graph_json(source: Path | bytes, name: str) -> bytes:
    """The archive's one program graph, its size checked before it is read."""
    try:
        with zipfile.ZipFile(io.BytesIO(source) if isinstance(source, bytes) else source) as archive:
            members = archive.infolist()
            if len(members) > MAX_MEMBERS:
                raise ModelLoadError(f"{name}: {len(members):,} files in the archive, over {MAX_MEMBERS:,}")
            graphs = [m for m in members if MODELS in f"/{m.filename}" and m.filename.endswith(".json")]
            if not graphs:
                raise ModelLoadError(f"{name}: not a torch.export program (no models/*.json in the archive)")
            if graphs[0].file_size > MAX_GRAPH_BYTES:
                raise ModelLoadError(f"{name}: its graph is {graphs[0].file_size / 2**20:,.0f} MiB, over the limit")
            with archive.open(graphs[0]) as graph:
                raw = graph.read(MAX_GRAPH_BYTES + 1)  # a size the archive understated stops here too
    except FileNotFoundError:
        raise ModelLoadError(f"{name}: no such file") from None
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as err:
        raise ModelLoadError(f"{name}: not a torch.export program: {err}") from None
    if len(raw) > MAX_GRAPH_BYTES:
        raise ModelLoadError(f"{name}: its graph is over {MAX_GRAPH_BYTES // 2**20} MiB")
    return raw


def _meta_tensors(torch: Any, serialized: Any) -> tuple[dict, dict]:
    """Each parameter, buffer and constant the program's signature names, as an empty tensor on
    the meta device of the shape and dtype its graph gives it."""
    from torch._export.serde.serialize import _SERIALIZE_TO_TORCH_DTYPE

    values = serialized.graph_module.graph.tensor_values

    def empty(arg_name: str):
        meta = values[arg_name]
        shape = [size.as_int for size in meta.sizes]
        return torch.empty(shape, dtype=_SERIALIZE_TO_TORCH_DTYPE[meta.dtype], device="meta")

    weights, constants = {}, {}
    for spec in serialized.graph_module.signature.input_specs:
        value = spec.value
        if spec.type == "parameter":
            weights[value.parameter_name] = torch.nn.Parameter(empty(value.arg.name), requires_grad=False)
        elif spec.type == "buffer":
            weights[value.buffer_name] = empty(value.arg.name)
        elif spec.type == "tensor_constant":
            constants[value.tensor_constant_name] = empty(value.arg.name)
    return weights, constants
