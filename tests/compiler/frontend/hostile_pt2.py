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
