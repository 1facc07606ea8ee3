"""Times Google's Model Explorer converting MLIR files to its graph; runs under Model Explorer's
own interpreter (a venv with `ai-edge-model-explorer`), never tilescope's, and imports nothing of
tilescope.

The conversion timed is what Model Explorer's UI waits for after a file is picked: its built-in
MLIR adapter, `BuiltinMlirAdapter.convert`, which calls the C++ `ConvertMlirToJson` (parse the
file, build the graph, write it as JSON) and loads the JSON into graph collections.

    python model_explorer_timer.py REPEATS FILE...  one JSON list: per file, best and median seconds
    python model_explorer_timer.py --serve          one path a line on stdin, one JSON line out per
                                                    conversion (the caller interleaves its own runs)
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time


def _adapter():
    from model_explorer.builtin_mlir_adapter import BuiltinMlirAdapter  # noqa: PLC0415  # only in the peer's venv

    return BuiltinMlirAdapter()


def convert(adapter, path: str) -> dict:
    """Seconds to convert `path`, and the nodes of its graphs; or the error, in one line."""
    start = time.perf_counter()
    try:
        collections = adapter.convert(path, {})["graphCollections"]
    except Exception as err:  # noqa: BLE001  # any failure is reported for its file
        return {"error": " ".join(str(err).split())[:300] or type(err).__name__}
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "nodes": sum(len(graph["nodes"]) for c in collections for graph in c.graphs)}


def serve(adapter, out) -> None:
    print(json.dumps({"ready": True}), file=out, flush=True)
    for line in sys.stdin:
        print(json.dumps(convert(adapter, line.rstrip("\n"))), file=out, flush=True)


def summary(adapter, repeats: int, paths: list[str]) -> list[dict]:
    rows = []
    for path in paths:
        first = convert(adapter, path)  # untimed: the first conversion loads the native library
        runs = [first] if "error" in first else [convert(adapter, path) for _ in range(repeats)]
        failed = next((run for run in runs if "error" in run), None)
        if failed is not None:
            rows.append({"file": path, **failed})
            continue
        times = [run["seconds"] for run in runs]
        rows.append(
            {"file": path, "nodes": runs[0]["nodes"], "best_s": min(times), "median_s": statistics.median(times)}
        )
    return rows


def main(argv: list[str]) -> int:
    # the answers keep stdout to themselves: whatever else writes there (native libraries' logs
    # included) goes to stderr
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        adapter = _adapter()
    except ImportError as err:
        print(json.dumps({"error": f"no Model Explorer here ({err})"}), file=out, flush=True)
        return 3
    if argv == ["--serve"]:
        serve(adapter, out)
    else:
        print(json.dumps(summary(adapter, int(argv[0]), argv[1:]), indent=1), file=out, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
