"""What an exported program's node says of where it came from: the module path of the innermost
module that made it (`encoder.layer.3.attention.self.query`), the call it is named by there
(`linear`), and the line of the user's Python that made it (torch.export's `stack_trace`, whose
innermost frame outside torch itself is the user's)."""

from __future__ import annotations

import re
from dataclasses import dataclass

# a frame of a Python stack trace: its file, line and function, the code on the next line
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>.+)$')
# the calls an aten op is named by in its module: a Linear's matmul is its `linear`, ...
CALLS = {
    "addmm": "linear",
    "convolution": "conv2d",
    "_native_batch_norm_legit_no_training": "batch_norm",
    "native_layer_norm": "layer_norm",
    "_softmax": "softmax",
    "max_pool2d_with_indices": "max_pool2d",
    "scaled_dot_product_attention": "attention",
    "_unsafe_view": "view",
    "embedding": "embedding",
}
MAX_FILE_CHARS = 240  # a path longer than this keeps its end: the file name and its folders


@dataclass(frozen=True)
class PythonLine:
    """The line of Python that made an op: its file, line number and the line's code."""

    file: str
    line: int
    code: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


def module_path(meta: dict) -> str:
    """The dotted path of the innermost module a node was made in ('' for the model itself)."""
    stack = meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    path, _kind = list(stack.values())[-1]
    return _clean(str(path))


def python_line(meta: dict, library_roots: tuple[str, ...]) -> PythonLine | None:
    """The innermost frame of the node's stack trace outside the libraries (torch's own modules,
    whose `F.linear` made every Linear's matmul); None where the trace passes through none (a
    model whose code torch could not trace to a file: a string run with exec)."""
    user = [f for f in _frames(str(meta.get("stack_trace") or "")) if not f.file.startswith(library_roots)]
    return user[-1] if user else None


def module_class(meta: dict) -> str:
    """The class of the innermost module a node was made in (`torch.nn.modules.linear.Linear`)."""
    stack = meta.get("nn_module_stack") or {}
    return str(list(stack.values())[-1][1]) if stack else ""


def call_name(target_name: str, module: str = "") -> str:
    """The name an aten op (`aten.addmm.default`) is called by in its module (`linear`; a
    Linear's matmul is its `linear` with a bias or without)."""
    base = target_name.split(".")[1] if target_name.startswith("aten.") else target_name.split(".")[-1]
    if base == "mm" and module.endswith(".Linear"):
        return "linear"
    return CALLS.get(base, base.lstrip("_"))


def _frames(trace: str) -> list[PythonLine]:
    lines = trace.splitlines()
    frames = []
    for i, text in enumerate(lines):
        match = _FRAME.match(text)
        if match is None:
            continue
        code = lines[i + 1].strip() if i + 1 < len(lines) and not _FRAME.match(lines[i + 1]) else ""
        file = match.group("file")
        if len(file) > MAX_FILE_CHARS:
            file = "..." + file[-(MAX_FILE_CHARS - 3) :]
        frames.append(PythonLine(file, int(match.group("line")), code[:200]))
    return frames


def _clean(path: str) -> str:
    """A module path as `named_modules` spells it: torch.export writes `L['self'].layer[3].fc`
    or `layer.3.fc` by version."""
    path = re.sub(r"^L\['self'\]\.?", "", path)
    path = re.sub(r"\[(\d+)\]", r".\1", path)
    path = re.sub(r"\['([^']*)'\]", r".\1", path)
    return path.strip(".")
