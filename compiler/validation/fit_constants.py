"""The constants `tilescope calibrate` may fit, each with the range physics and its source allow:
a module of its own, so that the command line can name them without loading the compiler."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Constant:
    """A constant the fit may move: its target-file key and the range it must stay in."""

    key: str  # dotted, as in the target file
    low: float
    high: float
    what: str  # what it is and where its range comes from


CONSTANTS = (
    Constant(
        "noc.round_trip_cycles",
        100.0,
        1500.0,
        "a row-major transaction's NoC round trip (384-463 cycles from DRAM on Wormhole, tt-metal data_movement)",
    ),
    Constant(
        "noc.issue_cycles",
        4.0,
        100.0,
        "a RISC-V issuing one NoC read: a ready flag read and five or six register writes (tt-isa BabyRISCV)",
    ),
    Constant(
        "noc.page_cycles",
        1.0,
        1000.0,
        "a RISC-V's work per row-major page it moves among many in flight: address and command",
    ),
    Constant("pipeline.launch_ns", 500.0, 10_000.0, "per op: kernels launched and set up (2.05 us op to op, tt-metal)"),
    Constant("pipeline.step_sync_cycles", 0.0, 2_000.0, "per pipeline step: circular-buffer and semaphore handshakes"),
    Constant("pipeline.overlap_loss", 0.0, 1.0, "share of the shorter compute threads' time that shows"),
    Constant("pipeline.unpack_bytes_per_cycle", 16.0, 80.0, "the unpackers' L1 reads: 16 to 80 B/cycle (tt-isa)"),
    Constant(
        "pipeline.segment_copy_cycles",
        20.0,
        400.0,
        "a RISC-V's copy of a face row between L1 buffers: 16 word accesses and bookkeeping",
    ),
    Constant(
        "pipeline.word_store_cycles",
        1.0,
        40.0,
        "a RISC-V's 32-bit store to L1 in a loop of them: at most one per 5 cycles (tt-isa BabyRISCV)",
    ),
)
