"""What differs between two records of one op: its tensors' shapes, where they live and how they are
laid out, and the op's own grid, cores, fidelity and program config, as the op records of two runs
say."""

from __future__ import annotations

import json
from dataclasses import dataclass

# What an op record keeps of how its op ran: per tensor (each output as the op writes it, each input
# as the op reads it, with the grid of its shards) and of the op itself. Parameters only override
# items hold (a matmul's blocking, double buffering) are not in op records.
TENSOR_PARAMS = ("shape", "memory", "memory_layout", "layout", "dtype", "tile")
OP_PARAMS = ("grid", "cores", "fidelity", "config")


# Slotted and not frozen, as perfdb.diff's records made once per op are.
@dataclass(slots=True)
class RecordedParams:
    """What an op record says of how its op ran, as stored."""

    memory: str  # the first output's
    grid: str
    cores: str  # "" when not recorded
    fidelity: str
    config: str  # the program config a measured report names; "" when not recorded
    tensors: str | None  # JSON text: decoded only for the ops whose records differ

    @classmethod
    def recorded(cls, memory: str, grid: str, cores: int | None, fidelity: str, config: str, tensors: str | None):
        """Of an op record's columns as read (cores a number, 0 or None when not recorded)."""
        return cls(memory, grid, str(cores or ""), fidelity, config or "", tensors)


@dataclass(slots=True)
class ParamChange:
    """One parameter of an op that differs between two runs: one of TENSOR_PARAMS of a tensor
    (`operand` N: the op's input N as the op reads it; `result` N: its output N), `grid` of an
    input's shards, or one of the op's own (both None). The values as strings: "dram", "8x8", "bfp8",
    a shape "1x32x768"."""

    param: str
    a: str
    b: str
    operand: int | None = None
    result: int | None = None


# A parameter of an op's input (operand N), output (result N) or its own (both None): (operand,
# result, param). A plain tuple: a dict key made some twenty times per op whose records differ.
_Where = tuple[int | None, int | None, str]


def changes(a: RecordedParams, b: RecordedParams) -> tuple[ParamChange, ...]:
    """What differs between two records of an op: its outputs first, then the op, then its inputs.
    A parameter that one record does not hold is not compared."""
    x, y = _params(a), _params(b)
    return tuple(
        ParamChange(param, value, y[operand, result, param], operand, result)
        for (operand, result, param), value in x.items()
        if y.get((operand, result, param), value) != value and _compared(operand, param, x, y)
    )


def _compared(operand: int | None, param: str, *params: dict[_Where, str]) -> bool:
    """An input's grid is compared when it is sharded in either run: the grid of an interleaved
    tensor only names the cores that wrote it, which its producer's grid change already shows. The
    op's cores are when its grid does not already say they changed."""
    if param == "cores":
        grids = [p.get((None, None, "grid")) for p in params]
        return None in grids or grids[0] == grids[1]
    if param != "grid" or operand is None:
        return True
    return any(p.get((operand, None, "memory_layout"), "interleaved") != "interleaved" for p in params)


def _params(record: RecordedParams) -> dict[_Where, str]:
    """(operand, result, param) -> value of one op record: its outputs, the op, its inputs, the
    order changes are listed in; empty values (not recorded) left out. The memory column stands
    for the first output's memory in records without tensors; an output's grid is the op's."""
    described = json.loads(record.tensors) if record.tensors else []
    found = {(None, 0, "memory"): record.memory}
    for tensor in described:
        if tensor["role"].startswith("out"):
            index = int(tensor["role"][3:])
            found.update({(None, index, param): _value(tensor, param) for param in TENSOR_PARAMS})
    found.update({(None, None, param): getattr(record, param) for param in OP_PARAMS})
    for tensor in described:
        if tensor["role"].startswith("in"):
            index = int(tensor["role"][2:])
            found.update({(index, None, param): _value(tensor, param) for param in (*TENSOR_PARAMS, "grid")})
    return {where: value for where, value in found.items() if value}


def _value(tensor: dict, param: str) -> str:
    """A tensor's parameter as a string: its shape as "1x32x768"."""
    value = tensor.get(param, "")
    return "x".join(str(d) for d in value) if param == "shape" else value
