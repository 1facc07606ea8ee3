"""Which device each op of a multi-device IREE program runs on.

IREE places tensors on devices by affinity: an argument's `iree.abi.affinity`, an import's
`on(#hal.device.affinity<@device_a>)`, and `flow.tensor.transfer ... to #hal.device.affinity<@b>`,
which moves a tensor to another device. An op runs where its operands are (its first operand's
device: IREE's placement moves operands before they meet), a transfer's result is on its target
device, an op with no placed operand (a constant, a fill) where its first reader runs, and one
read by none on the first device. Each op gets `device`, a transfer also `from_device`, and the
graph the devices in the order the program declares them.

    %b = flow.tensor.transfer %a to #hal.device.affinity<@device_b>   {device = "device_b", from_device = "device_a"}
    %c = linalg.matmul(%b, %w)                                        {device = "device_b"}
"""

from __future__ import annotations

import re

from tilescope.compiler.ir.graph import Graph
from tilescope.compiler.ir.meta import DEVICES

MAX_DEVICES = 64  # devices one program names: real multi-device programs name a few
_AFFINITY = re.compile(r"#hal\.device\.(?:affinity|promise)<@([A-Za-z0-9_$.\-]{1,200})")
TRANSFER = "flow.tensor.transfer"


def affinity(text: object) -> str | None:
    """The device an affinity attribute names (`#hal.device.affinity<@device_a>`), or None."""
    found = _AFFINITY.search(str(text)) if text else None
    return found.group(1) if found else None


def place(graph: Graph, declared: list[str], placed_inputs: dict[str, str]) -> None:
    """Give each op of `graph` the device it runs on, when the program names more than one
    (`declared`: its device globals in order; `placed_inputs`: input tensor -> device)."""
    named = list(dict.fromkeys([*declared, *placed_inputs.values()]))
    targets = [affinity(op.attrs.get("target")) for op in graph.ops if op.kind == TRANSFER]
    named = list(dict.fromkeys([*named, *(t for t in targets if t)]))[:MAX_DEVICES]
    if len(named) < 2:
        return
    device_of = {t: d for t, d in placed_inputs.items() if d in named}
    unplaced = []
    for op in graph.ops:  # forward: where the operands are
        here = next((device_of[t] for t in op.inputs if t in device_of), None)
        if op.kind == TRANSFER:
            op.attrs["from_device"] = here or named[0]
            target = affinity(op.attrs.get("target"))
            here = target if target in named else here
        if here is None:
            unplaced.append(op)
            continue
        op.attrs["device"] = here
        device_of.update(dict.fromkeys(op.outputs, here))
    readers = {t: op for op in reversed(graph.ops) for t in op.inputs}  # each tensor's first reader
    for op in reversed(unplaced):  # backward: where what they make is read
        reader = next((readers[t] for t in op.outputs if t in readers and "device" in readers[t].attrs), None)
        op.attrs["device"] = reader.attrs["device"] if reader is not None else named[0]
    graph.meta[DEVICES] = tuple(named)
