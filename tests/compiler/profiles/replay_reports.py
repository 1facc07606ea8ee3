"""Ops perf reports the replay tests write: a row per op, each given by its code, its tensors, its
attributes and what else it sets, in tt-metal's columns."""

from __future__ import annotations

import csv
import io

DURATION = "DEVICE KERNEL DURATION [ns]"
OPERANDS = (("INPUT", 4), ("OUTPUT", 2))
PARTS = ("W_PAD[LOGICAL]", "Z_PAD[LOGICAL]", "Y_PAD[LOGICAL]", "X_PAD[LOGICAL]", "LAYOUT", "DATATYPE", "MEMORY")
COLUMNS = [
    "OP CODE",
    "OP TYPE",
    "DEVICE ID",
    "DEVICE ARCH",
    "ATTRIBUTES",
    "MATH FIDELITY",
    "CORE COUNT",
    DURATION,
    *(f"{role}_{i}_{part}" for role, count in OPERANDS for i in range(count) for part in PARTS),
]
DTYPES = {"bf16": "BFLOAT16", "bfp8": "BFLOAT8_B", "ui32": "UINT32", "f32": "FLOAT32"}


def shard_config(layout: str, cores: tuple[int, int], shape: tuple[int, int]) -> str:
    """A sharded L1 memory config over a grid of cores (x across, y down) with shards of `shape`."""
    x, y = cores
    return (
        f"MemoryConfig(memory_layout=TensorMemoryLayout::{layout.upper()};buffer_type=BufferType::L1;"
        f"shard_spec=ShardSpec(grid={{[(x=0;y=0) - (x={x - 1};y={y - 1})]}};shape={{{shape[0]}; {shape[1]}}};"
        "orientation=ShardOrientation::ROW_MAJOR);nd_shard_spec=std::nullopt)"
    )


def fidelity_config(fidelity: str) -> str:
    return f"WormholeComputeKernelConfig(math_fidelity={fidelity};math_approx_mode=0;fp32_dest_acc_en=1)"


def window(hw: tuple[int, int], size: int, stride: int, pad: int, batch: int = 1) -> str:
    """A sliding window config as ttnn prints one."""
    return (
        f"SlidingWindowConfig(batch_size={batch}; input_hw=({hw[0]};{hw[1]}); window_hw=({size};{size}); "
        f"stride_hw=({stride};{stride}); padding=(({pad}; {pad}); ({pad}; {pad})); output_padding = (0; 0); "
        "dilation_hw=(1;1); num_cores_nhw=32)"
    )


def t(*shape: int, layout: str = "tile", dtype: str = "bf16", memory: str = "dram_interleaved") -> dict:
    """A tensor as a report lists it: W Z Y X, layout, dtype and memory (l1_height_sharded, ...)."""
    return {"shape": shape, "layout": layout, "dtype": dtype, "memory": memory}


def op(code: str, inputs, outputs, ns: float = 1000, cores: int = 32, device: int = 0, **attributes) -> dict:
    """A device op's row; `fidelity`, `arch` and any other column may be given among `attributes`
    by their column name in lower case."""
    row = {
        "OP CODE": code,
        "OP TYPE": "tt_dnn_device",
        "DEVICE ID": str(device),
        "DEVICE ARCH": attributes.pop("arch", "wormhole_b0"),
        "MATH FIDELITY": attributes.pop("fidelity", ""),
        "CORE COUNT": str(cores),
        DURATION: str(ns),
        "ATTRIBUTES": "{" + "; ".join(f"'{k}': '{v}'" for k, v in attributes.items()) + "}" if attributes else "",
    }
    for role, tensors in (("INPUT", inputs), ("OUTPUT", outputs)):
        for i, tensor in enumerate(tensors):
            prefix = f"{role}_{i}_"
            row |= {f"{prefix}{d}_PAD[LOGICAL]": str(v) for d, v in zip("WZYX", tensor["shape"])}
            row[f"{prefix}LAYOUT"] = tensor["layout"].upper()
            row[f"{prefix}DATATYPE"] = DTYPES[tensor["dtype"]]
            row[f"{prefix}MEMORY"] = f"DEV_{device}_{tensor['memory'].upper()}"
    return row


def report_text(*rows: dict, columns: list[str] = COLUMNS) -> str:
    """The report of `rows` in `columns` (a row's other columns left out), as tt-metal writes it."""
    out = io.StringIO()
    writer = csv.DictWriter(out, columns, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()
