"""Ops perf reports written in the tests, in tt-metal's columns: a row per op, each given as the
columns it sets."""

from __future__ import annotations

import csv
import io

DURATION = "DEVICE KERNEL DURATION [ns]"
# the columns of tt-metal's report the readers use, in the order a recent report writes them
COLUMNS = [
    "OP CODE",
    "OP TYPE",
    "GLOBAL CALL COUNT",
    "DEVICE ID",
    "DEVICE ARCH",
    "ATTRIBUTES",
    "MATH FIDELITY",
    "CORE COUNT",
    "HOST START TS",
    "HOST END TS",
    "DEVICE FW START CYCLE",
    "DEVICE FW END CYCLE",
    "OP TO OP LATENCY [ns]",
    "DEVICE FW DURATION [ns]",
    DURATION,
    "DEVICE KERNEL DURATION PER CORE MIN [ns]",
    "DEVICE KERNEL DURATION PER CORE MAX [ns]",
    *(f"{role}_{i}_{part}" for role, i in (("INPUT", 0), ("INPUT", 1), ("OUTPUT", 0)) for part in (
        "W_PAD[LOGICAL]", "Z_PAD[LOGICAL]", "Y_PAD[LOGICAL]", "X_PAD[LOGICAL]", "LAYOUT", "DATATYPE", "MEMORY"
    )),
    "METAL TRACE ID",
]  # fmt: skip

SHARDED = (
    "MemoryConfig(memory_layout=TensorMemoryLayout::HEIGHT_SHARDED;buffer_type=BufferType::L1;shard_spec="
    "ShardSpec(grid={[(x=0;y=0) - (x=7;y=3)]};shape={64; 128};orientation=ShardOrientation::ROW_MAJOR);"
    "nd_shard_spec=std::nullopt;created_with_nd_shard_spec=0)"
)
COMPUTE = "WormholeComputeKernelConfig(math_fidelity=HiFi2;math_approx_mode=0;fp32_dest_acc_en=1)"
PROGRAM = "MatmulMultiCoreReuseMultiCastProgramConfig(compute_with_storage_grid_size=(x=8;y=4);in0_block_w=2)"


def attributes(**values: str) -> str:
    """An ATTRIBUTES field as tt-metal writes one: {'key': 'value'; ...}."""
    return "{" + "; ".join(f"'{k}': '{v}'" for k, v in values.items()) + "}"


def tensor(role: str, shape: tuple[str, str, str, str], dtype="BFLOAT16", memory="DEV_0_DRAM_INTERLEAVED") -> dict:
    """`role` ("INPUT_0", "OUTPUT_0") with its W Z Y X as written ("32[19]": padded 32, logical 19)."""
    row = {f"{role}_{d}_PAD[LOGICAL]": v for d, v in zip("WZYX", shape)}
    return row | {f"{role}_LAYOUT": "TILE", f"{role}_DATATYPE": dtype, f"{role}_MEMORY": memory}


def matmul(**given) -> dict:
    """A matmul of (1,1,64,128) by (1,1,128,256) into a height-sharded L1 output on 32 cores, HiFi2."""
    return {
        "OP CODE": "MatmulDeviceOperation",
        "OP TYPE": "tt_dnn_device",
        "DEVICE ID": "0",
        "DEVICE ARCH": "wormhole_b0",
        "ATTRIBUTES": attributes(compute_kernel_config=COMPUTE, output_mem_config=SHARDED, program_config=PROGRAM),
        "CORE COUNT": "32",
        DURATION: "1000",
        "OP TO OP LATENCY [ns]": "500",
        **tensor("INPUT_0", ("1", "1", "64", "128")),
        **tensor("INPUT_1", ("1", "1", "128", "256"), "BFLOAT8_B"),
        **tensor("OUTPUT_0", ("1", "1", "64", "256"), memory="DEV_0_L1_HEIGHT_SHARDED"),
        **given,
    }


def add(**given) -> dict:
    """An element-wise add of two (1,1,32[19],64) bf16 tensors in DRAM."""
    return {
        "OP CODE": "BinaryNgDeviceOperation",
        "OP TYPE": "tt_dnn_device",
        "DEVICE ID": "0",
        "ATTRIBUTES": attributes(binary_op_type="BinaryOpType::ADD"),
        "CORE COUNT": "8",
        DURATION: "200",
        "OP TO OP LATENCY [ns]": "300",
        **tensor("INPUT_0", ("1", "1", "32[19]", "64")),
        **tensor("INPUT_1", ("1", "1", "32[19]", "64")),
        **tensor("OUTPUT_0", ("1", "1", "32[19]", "64")),
        **given,
    }


def signpost(name: str) -> dict:
    return {"OP CODE": name, "OP TYPE": "signpost"}


def report_text(*rows: dict, columns: list[str] = COLUMNS) -> str:
    """The report of `rows` (each the columns it sets; the rest blank), as tt-metal writes it."""
    out = io.StringIO()
    writer = csv.DictWriter(out, columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()
