"""`tilescope bench`'s tracing database figures: a synthetic run shaped like a simulated one,
stored on SQLite, its timeline windows at every zoom, and a diff of two runs; and diffs of measured
runs of MEASURED_OPS ops, whose ops are aligned as sequences: a report against an edited copy, and
two unrelated ones."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from tilescope.perfdb.engine import open_db, session_factory
from tilescope.perfdb.diff import diff_runs
from tilescope.perfdb.timeline import timeline_window
from tilescope.perfdb.records import NewRun, ZoneColumns
from tilescope.perfdb.store import save_run

from tilescope.compiler.sim.records import OpTiming, TensorUse
from tilescope.compiler.sim.tracks import core_track, device_track, engine_track


def progress(message: str) -> None:
    """A line on stderr as each step ends: the whole bench takes minutes, and stdout holds the report."""
    print(f"tilescope bench: {message}", file=sys.stderr, flush=True)


# perfdb: a synthetic trace of PERF_OPS ops, each with a zone on every core and its three engines
PERF_OPS = 10_000
PERF_CORES = 25  # 10k ops x (1 + 25 cores x 4 tracks) = 1,010,000 zones
ZOOMS = (1.0, 0.1, 0.01, 0.001, 0.0001)  # window as a share of the run
PIXELS = 1500


def _synthetic(ops: int, cores: int, seed: int, scale: float = 1.0) -> NewRun:
    """A run shaped like a simulated one: ops of 0.5-200 us back to back, each a zone on the device
    track and per core (depth 0), and reader/compute/writer zones under it (depth 1). Each core
    finishes at its own time, so no two cores' tracks are the same (none shares another's blocks)."""
    import numpy as np  # noqa: PLC0415

    rng = np.random.default_rng(seed)
    durations = (10 ** rng.uniform(2.7, 5.3, ops)) * scale
    starts = np.concatenate([[0.0], np.cumsum(durations)[:-1]])
    names = [f"layer.{i // 12}.op_{i % 12}" for i in range(ops)]
    zones = []
    for name, start, op_length in zip(names, starts.tolist(), durations.tolist()):
        zones.append(("device", 0, name, start, start + op_length, name))
        for c, share in enumerate((0.9 + 0.1 * rng.random(cores)).tolist()):
            r, col = divmod(c, 8)
            core = core_track((r, col))
            length = share * op_length
            zones.append((core, 0, name, start, start + length, name))
            zones.append((engine_track(core, "reader"), 1, "read", start, start + length * 0.4, name))
            zones.append(
                (engine_track(core, "compute"), 1, "compute", start + length * 0.1, start + length * 0.9, name)
            )
            zones.append((engine_track(core, "writer"), 1, "write", start + length * 0.6, start + length, name))
    ops_rows = [
        OpTiming(
            name=n,
            kind="matmul",
            start_ns=s,
            duration_ns=d,
            flops=1,
            bytes={"dram": 1.0},
            bound="dram",
            memory="dram",
            grid="8x8",
            cores=64,
            roofline_ns=d / 2,
        )
        for n, s, d in zip(names, starts.tolist(), durations.tolist())
    ]
    total = float(starts[-1] + durations[-1])
    return NewRun("bench", "bench", "0" * 64, "", "wormhole_n150", total, total, ops_rows, ZoneColumns.from_rows(zones))


# measured runs: a layer of an encoder as a report names its ops, (op code, kind, cores, config)
MEASURED_OPS = 100_000
MEASURED_EDITS = 25  # ops removed, ops inserted, fidelities and layouts changed in the edited copy
LAYER = (
    ("LayerNormDeviceOperation", "layernorm", 64, ""),
    *[("MinimalMatmulOp", "matmul", 64, "MinimalMatmulConfig(M_block_size=2;K_block_size=8)")] * 3,
    ("ReshapeDeviceOperation", "reshape", 32, ""),
    *[("TransposeDeviceOperation", "transpose", 64, "")] * 4,
    ("Matmul", "matmul", 64, ""),
    ("SoftmaxDeviceOperation", "softmax", 64, ""),
    ("BinaryNgDeviceOperation", "add", 64, ""),
)


def _measured(ops: list[tuple[str, str, int, str, str, str]], seed: int, label: str) -> NewRun:
    """A measured run of ops given as (op code, kind, cores, config, fidelity, layout), named by op
    code and count as a report without LOC is, each of a time of its own."""
    import numpy as np  # noqa: PLC0415

    durations = (10 ** np.random.default_rng(seed).uniform(3, 5, len(ops))).round().tolist()
    counts: dict[str, int] = {}
    rows, zones, start = [], [], 0.0
    for (code, kind, cores, config, fidelity, layout), duration in zip(ops, durations):
        counts[code] = counts.get(code, 0) + 1
        name = f"{code}#{counts[code]}"
        tensors = (
            TensorUse("in0", "", (1, 1, 64, 768), "bf16", "dram", "interleaved", "tile", "32x32", ""),
            TensorUse("out0", "", (1, 1, 64, 768), "bf16", "dram", "interleaved", layout, "", ""),
        )
        rows.append(
            OpTiming(
                name=name,
                kind=kind,
                start_ns=start,
                duration_ns=duration,
                flops=0,
                bytes={},
                bound="measured",
                memory="dram",
                grid="",
                cores=cores,
                roofline_ns=0.0,
                level="measured",
                fidelity=fidelity,
                tensors=tensors,
                config=config,
            )
        )
        zones.append((device_track(0), 0, name, start, start + duration, name))
        start += duration
    zone_rows = ZoneColumns.from_rows(zones)
    return NewRun(
        f"report:{label}.csv",
        label,
        str(seed).zfill(64),
        "",
        "blackhole_p150",
        start,
        start,
        rows,
        zone_rows,
        kind="measured",
    )


def measured_diff_bench(sessions) -> dict:
    """A diff of a MEASURED_OPS-op report against a copy with MEASURED_EDITS ops removed, as many
    inserted, fidelities and layouts changed; and of two unrelated reports (ops of random codes)."""
    import random  # noqa: PLC0415

    rng = random.Random(7)
    ops = [(*op, "hifi4", "tile") for op in LAYER] * (MEASURED_OPS // len(LAYER))
    edited = list(ops)
    for _ in range(MEASURED_EDITS):
        del edited[rng.randrange(len(edited))]
        edited.insert(rng.randrange(len(edited)), ("TypecastDeviceOperation", "typecast", 64, "", "", "tile"))
        i = rng.randrange(len(edited))
        edited[i] = (*edited[i][:4], "lofi", edited[i][5])
        i = rng.randrange(len(edited))
        edited[i] = (*edited[i][:5], "row_major")
    unrelated = [(*rng.choice(LAYER), "hifi4", "tile") for _ in ops]
    found = {}
    with sessions() as session:
        ids = [
            save_run(session, _measured(o, seed, label))
            for seed, (o, label) in enumerate(((ops, "report"), (edited, "edited"), (unrelated, "unrelated")))
        ]
    for key, other in (("edited", ids[1]), ("unrelated", ids[2])):
        progress(f"perfdb: diff of two measured {len(ops):,}-op runs, {key}")
        start = time.perf_counter()
        with sessions() as session:
            diff = diff_runs(session, ids[0], other)
        found[key] = {"ms": (time.perf_counter() - start) * 1e3, "paired": len(diff.ops), "removed": len(diff.removed)}
    return {"ops": len(ops), **found}


def perfdb_bench(db_dir: Path) -> dict:
    """Store a 1M-zone run on SQLite; window queries at every zoom; diff of two 10k-op runs; diffs
    of measured runs (measured_diff_bench)."""
    sessions = session_factory(open_db(f"sqlite:///{db_dir / 'perfdb.db'}"))
    progress(f"perfdb: a synthetic run of {PERF_OPS:,} ops on {PERF_CORES} cores")
    big = _synthetic(PERF_OPS, PERF_CORES, seed=1)
    zones = len(big.zones)
    start = time.perf_counter()
    with sessions() as session:
        run_id = save_run(session, big)
    store_s = time.perf_counter() - start
    progress(f"perfdb: stored {zones:,} zones {store_s:.2f} s; timeline windows next")
    other = _synthetic(PERF_OPS, 0, seed=2, scale=1.1)
    with sessions() as session:
        other_id = save_run(session, other)
    windows = []
    first = core_track((0, 0))
    few = ["device", *(core_track((0, c)) for c in range(4)), *(engine_track(first, e) for e in ("reader", "compute"))]
    for tracks_name, tracks in (("7 tracks", few), ("all 101 tracks", None)):
        for zoom in ZOOMS:
            t0 = big.total_ns * (1 - zoom) / 2
            t1 = t0 + big.total_ns * zoom
            times = []
            for _ in range(3):  # the first also pays for reading the pages from disk
                start = time.perf_counter()
                with sessions() as session:
                    items = timeline_window(session, run_id, t0, t1, (t1 - t0) / PIXELS, tracks)
                times.append((time.perf_counter() - start) * 1e3)
            windows.append(
                {
                    "tracks": tracks_name,
                    "zoom": zoom,
                    "items": len(items),
                    "first_ms": times[0],
                    "ms": sorted(times)[1],
                }
            )
    start = time.perf_counter()
    with sessions() as session:
        diff = diff_runs(session, other_id, run_id)
    diff_ms = (time.perf_counter() - start) * 1e3
    measured = measured_diff_bench(sessions)
    return {
        "zones": zones,
        "store_s": store_s,
        "windows": windows,
        "diff_ops": len(diff.ops),
        "diff_ms": diff_ms,
        "measured_diff": measured,
        "db_mb": (db_dir / "perfdb.db").stat().st_size / 2**20,
    }
