"""A `.pt2` archive whose pickles (weights, constants, sample inputs) each create a file when
unpickled: torch.export.load runs them; what reads it without running them leaves no file."""

from __future__ import annotations

import io
import json
import pickle
import zipfile
from pathlib import Path

import torch


class CreatesFile:
    """Unpickled, opens `path` for writing: the file appears."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (str(self.path), "w"))


def hostile_pt2(module: torch.nn.Module, inputs: tuple, marker: Path) -> bytes:
    """`module` exported and saved, then its weights and sample inputs replaced by pickles that
    create `marker` when unpickled (the weights' config saying they are pickled, as torch's own
    config does for tensors it cannot store raw)."""
    saved = io.BytesIO()
    torch.export.save(torch.export.export(module.eval(), inputs), saved)
    payload = pickle.dumps(CreatesFile(marker))
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(saved.getvalue())) as source, zipfile.ZipFile(out, "w") as target:
        for member in source.infolist():
            data, name = source.read(member), member.filename
            if name.endswith("/model_weights_config.json"):
                config = json.loads(data)
                for entry in config["config"].values():
                    entry["use_pickle"] = True
                data = json.dumps(config).encode()
            elif "/data/weights/weight_" in name or "/data/sample_inputs/" in name:
                data = payload
            target.writestr(member, data)
    return out.getvalue()


def rewritten_graph(pt2: bytes, change) -> bytes:
    """`pt2` with its graph's JSON passed through `change` (a function of the parsed JSON)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(pt2)) as source, zipfile.ZipFile(out, "w") as target:
        for member in source.infolist():
            data = source.read(member)
            if "/models/" in member.filename and member.filename.endswith(".json"):
                found = json.loads(data)
                change(found)
                data = json.dumps(found).encode()
            target.writestr(member, data)
    return out.getvalue()


def evaluated_size(marker: Path):
    """A change making the first input's first size a sympy expression that creates `marker`
    when evaluated (torch's deserializer sympifies symbolic sizes: eval)."""

    def change(found: dict) -> None:
        graph = found["graph_module"]["graph"]
        first = next(iter(graph["tensor_values"].values()))
        code = f"__import__('pathlib').Path({str(marker)!r}).touch() or 2"
        first["sizes"][0] = {"as_expr": {"expr_str": code, "hint": {"as_int": 2}}}

    return change


def retargeted(target: str):
    """A change making the first node call `target` (an attribute of torch the program would call)."""

    def change(found: dict) -> None:
        found["graph_module"]["graph"]["nodes"][0]["target"] = target

    return change
