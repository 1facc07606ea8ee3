"""The ATTRIBUTES column of an ops perf report: `{'key': 'value'; ...}` as tt-metal prints an op's
attributes (memory and program configs, shard specs, dtypes, compute kernel configs), read as text.

Nothing here evaluates what it reads: values are kept as written and the few things tilescope needs
(where the output lives, its shard spec, the math fidelity) are picked out with patterns.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from tilescope.compiler.profiles.report import ShardSpec

_PAIR = re.compile(r"'([^']{0,200})'\s*:\s*'([^']*)'")
# the keys an op's output memory config is under, by op family
OUTPUT_MEMORY_KEYS = (
    "output_mem_config",
    "output_memory_config",
    "memory_config",
    "output_memory_config_",
    "memory_config_",
)
_RANGE = re.compile(r"\[\(x=(\d{1,4});y=(\d{1,4})\) - \(x=(\d{1,4});y=(\d{1,4})\)\]")
_SHARD = re.compile(
    r"shard_spec=ShardSpec\(grid=\{([^}]*)\};shape=\{(\d{1,9}); ?(\d{1,9})\}(?:;orientation=(\w+)::(\w+))?"
)
_FIDELITY = re.compile(r"math_fidelity=(?:MathFidelity::)?(\w+)")
_MEMORY_LAYOUT = re.compile(r"memory_layout=TensorMemoryLayout::(\w+)")
_BUFFER = re.compile(r"buffer_type=BufferType::(\w+)")


def parse_attributes(text: str) -> dict[str, str]:
    """key -> value of an ATTRIBUTES field; {} for a blank field or one tt-metal wrote as None."""
    return dict(_PAIR.findall(text)) if text.startswith("{") else {}


def output_memory(attributes: Mapping[str, str]) -> str:
    """The op's output memory config as written, or ""."""
    for key in OUTPUT_MEMORY_KEYS:
        value = attributes.get(key, "")
        if value.startswith("MemoryConfig("):
            return value
    return ""


def shard_spec(memory_config: str) -> ShardSpec | None:
    """The shard spec of a memory config: its cores (the sum of its grid's core ranges) and shard
    shape; None when the tensor is not sharded."""
    match = _SHARD.search(memory_config)
    if match is None:
        return None
    cores = sum((int(x1) - int(x0) + 1) * (int(y1) - int(y0) + 1) for x0, y0, x1, y1 in _RANGE.findall(match[1]))
    orientation = (match[5] or "ROW_MAJOR").lower()
    return ShardSpec(cores, (int(match[2]), int(match[3])), orientation) if cores else None


def memory_of(memory_config: str) -> tuple[str, str]:
    """(memory, memory layout) a memory config names, in tilescope's spelling: ("l1", "height_sharded")."""
    buffer, layout = _BUFFER.search(memory_config), _MEMORY_LAYOUT.search(memory_config)
    return (buffer[1].lower() if buffer else "", layout[1].lower() if layout else "")


def fidelity_of(attributes: Mapping[str, str]) -> str:
    """The math fidelity a compute kernel config names, lower case (hifi4), or ""."""
    for key in ("compute_kernel_config", "compute_kernel_config_"):
        match = _FIDELITY.search(attributes.get(key, ""))
        if match:
            return match[1].lower()
    return ""
