"""What a profile measured, as typed records: one ReportOp per device op of an ops perf report (or
per event of a trace), its tensors, the signposts between them, and what could not be read.

A report holds ops from every device it profiled, in the order it lists them; host-only rows (ops
that ran in torch on the host) are kept apart. Times are ns; a field the report left blank is None
(a time) or "" (a name).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class ReportTensor:
    """An operand or result of a measured op: `32[19]` in a report is padded 32, logical 19."""

    shape: tuple[int, ...]  # logical, W Z Y X as the report lists them
    padded: tuple[int, ...]
    layout: str  # tile | row_major
    dtype: str  # tilescope's spelling (compiler.ir.dtypes): bf16, bfp8, f32, ui32, ...
    memory: str  # l1 | dram | "" (not said)
    memory_layout: str  # interleaved | height_sharded | width_sharded | block_sharded | nd_sharded

    @property
    def elements(self) -> int:
        return math.prod(self.shape)

    @property
    def padded_elements(self) -> int:
        return math.prod(self.padded)


@dataclass(frozen=True, slots=True)
class ShardSpec:
    """Where a sharded tensor's shards live: the cores of its grid and each shard's (rows, columns)."""

    cores: int
    shape: tuple[int, int]
    orientation: str = "row_major"


@dataclass(frozen=True, slots=True)
class ReportOp:
    """One device op as the profile measured it."""

    line: int  # where the report lists it (CSV line, or event index of a trace)
    op_code: str  # MatmulDeviceOperation, BinaryNgDeviceOperation, ...
    op_type: str  # tt_dnn_device, or the host-only tt_dnn_cpu / python_fallback
    call: int | None  # GLOBAL CALL COUNT
    device: int
    arch: str  # DEVICE ARCH: wormhole_b0, blackhole, or ""
    loc: str  # the MLIR location the op came from, when the report has a LOC column
    fidelity: str  # lofi | hifi2 | hifi3 | hifi4 | ""
    cores: int | None  # CORE COUNT: the cores it ran on
    attributes: Mapping[str, str]  # ATTRIBUTES, by key, values as written
    inputs: tuple[ReportTensor, ...]
    outputs: tuple[ReportTensor, ...]
    kernel_ns: float | None  # DEVICE KERNEL DURATION: what the device spent on it
    fw_ns: float | None = None  # DEVICE FW DURATION: the kernel and the firmware around it
    core_min_ns: float | None = None  # the fastest core's kernel time
    core_max_ns: float | None = None  # the slowest's
    op_to_op_ns: float | None = None  # the device idle before it (the host issuing it)
    host_start_ns: float | None = None
    host_end_ns: float | None = None
    device_start_ns: float | None = None  # on the device's clock (its firmware start)
    trace_id: str = ""  # METAL TRACE ID: the traced region it was replayed in
    region: str = ""  # the signpost it follows
    track: str = ""  # a trace's thread; "" for an ops perf report's ops (their device's)
    output_shard: ShardSpec | None = None  # from the output memory config, when sharded

    @property
    def program_config(self) -> str:
        """The program config the op ran with, as the report wrote it: its kernel's blocking."""
        for key in PROGRAM_CONFIG_KEYS:
            value = self.attributes.get(key, "")
            if value and value != "std::nullopt":
                return value
        return ""


# ATTRIBUTES keys that hold an op's program config, by op family
PROGRAM_CONFIG_KEYS = ("program_config", "config", "block_config", "parallelization_strategy")


@dataclass(frozen=True, slots=True)
class Signpost:
    """A marker the model put between ops (tt-metal's signpost rows): it opens a region."""

    line: int
    name: str
    host_ns: float | None


@dataclass(frozen=True)
class Report:
    """A profile as read: its device ops, host-only ops and signposts in report order, the rows
    that could not be read, each as 'source:line: reason', and what was left unread of the file
    as a whole (a trace's counter events, say), a line each."""

    source: str
    format: str  # ops-perf-csv | chrome-trace
    rows: int  # rows (or events) read, every kind
    ops: tuple[ReportOp, ...]
    host_ops: tuple[ReportOp, ...] = ()
    signposts: tuple[Signpost, ...] = ()
    skipped: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    columns: tuple[str, ...] = field(default=(), repr=False)

    @property
    def devices(self) -> tuple[int, ...]:
        return tuple(sorted({op.device for op in self.ops}))

    @property
    def arch(self) -> str:
        """The chip the report was measured on, as it says (the most common DEVICE ARCH)."""
        counts: dict[str, int] = {}
        for op in self.ops:
            if op.arch:
                counts[op.arch] = counts.get(op.arch, 0) + 1
        return max(counts, key=counts.__getitem__) if counts else ""

    @property
    def device_ns(self) -> float:
        """DEVICE KERNEL DURATION summed over every device op, as tt-perf-report sums it."""
        return math.fsum(op.kernel_ns for op in self.ops if op.kernel_ns is not None)

    def device_ops(self, device: int) -> tuple[ReportOp, ...]:
        return tuple(op for op in self.ops if op.device == device)
