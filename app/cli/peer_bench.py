"""Tilescope's MLIR import against Google's Model Explorer's conversion of the same files.

Model Explorer runs under its own interpreter (a venv with `pip install ai-edge-model-explorer`;
never a tilescope dependency), in one process that converts a file whenever asked
(app/cli/model_explorer_timer.py), so its runs and tilescope's interleave and share whatever else
loads the machine. Tilescope's side is `import_mlir` on the file's text, in this process; beside
it, MLIR's bare parse of the same text in the context tilescope parses it in, the floor under any
import.

Model Explorer registers StableHLO, Shardy, TOSA and TF's dialects, not TTIR (its parser refuses
`ttcore` wrappers and crashes on generic TTIR ops), so the files compared are the corpus's
StableHLO model, a Shardy-annotated autoencoder, and chains of it: its body repeated, each copy
fed the one before, up to the size of a large encoder.
"""

from __future__ import annotations

import json
import re
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from tilescope.compiler.errors import TilescopeError, clip
from tilescope.compiler.frontend.mlir_import import import_mlir
from tilescope.compiler.frontend.mlir_text import make_parsable

from tilescope.app.cli.bench_goals import parse_seconds

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "ttmlir"
# The corpus's other StableHLO file, gather_op.mlir, is 18 small functions: Model Explorer converts
# them all, tilescope one, so their times do not compare.
AUTOENCODER = "sdy_autoencoder_linear.mlir"  # 97 ops, one function, a Shardy mesh
CHAIN_COPIES = (1, 10, 40, 132, 400)  # 97 to 38,800 ops; 132 copies are 12,804
TIMER = Path(__file__).with_name("model_explorer_timer.py")


class PeerError(TilescopeError):
    """Model Explorer's interpreter is missing, lacks Model Explorer, or failed on a file."""


_LOCAL_VALUE = re.compile(r"%(?!arg\d+\b)([\w$.-]+)")  # SSA values but the function's arguments
_RETURN = re.compile(r"^\s*(?:func\.)?return (%[\w$.-]+) : (.+?)\s*$")


def chained(text: str, copies: int) -> str:
    """`text`'s one function with its body repeated `copies` times, each copy taking the previous
    copy's result in place of the argument of the result's type: a model `copies` times as deep."""
    lines = text.split("\n")
    head = next((i for i, line in enumerate(lines) if line.lstrip().startswith("func.func")), None)
    end = next((i for i in range(head or 0, len(lines)) if _RETURN.match(lines[i])), None)
    if head is None or end is None:
        raise ValueError("no func.func ending in a return of one value")
    returned, result_type = _RETURN.match(lines[end]).groups()
    fed = re.search(rf"(%arg\d+): {re.escape(result_type)}[,)]", lines[head])
    if fed is None:
        raise ValueError(f"no argument of the result's type {result_type}")
    body: list[str] = []
    previous = None
    for copy in range(copies):
        prefix = f"c{copy}_" if copy else ""
        for line in lines[head + 1 : end]:
            line = _LOCAL_VALUE.sub(lambda m, p=prefix: f"%{p}{m.group(1)}", line)
            body.append(re.sub(rf"{re.escape(fed.group(1))}\b", previous, line) if previous else line)
        previous = f"%{prefix}{returned[1:]}"
    return "\n".join([*lines[: head + 1], *body, lines[end].replace(returned, previous), *lines[end + 1 :]])


def peer_files(directory: Path) -> list[tuple[str, str]]:
    """(name, path) of each file compared, the chains written to `directory`; none without the corpus."""
    source = CORPUS / AUTOENCODER
    if not source.exists():
        return []
    text, files = source.read_text(), []
    for copies in CHAIN_COPIES:
        name = "autoencoder" if copies == 1 else f"autoencoder x{copies}"
        path = directory / f"autoencoder_x{copies}.mlir"
        path.write_text(chained(text, copies))
        files.append((name, str(path)))
    return files


class _Peer:
    """Model Explorer's interpreter, converting one file whenever asked."""

    def __init__(self, python: str) -> None:
        self.python = python
        self.log = tempfile.TemporaryFile("w+")  # its native libraries log to stderr
        try:
            self.process = subprocess.Popen(
                [python, str(TIMER), "--serve"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.log,
                text=True,
            )
        except OSError as err:
            raise PeerError(f"peer python {python}: {err.strerror or err}") from None
        ready = self._answer("starting")
        if not ready.get("ready"):
            self.close()
            raise PeerError(f"peer python {python}: {ready.get('error', 'did not start')}")

    def seconds(self, name: str, path: str) -> tuple[float, int]:
        """(seconds, graph nodes) of one conversion of `path`."""
        self.process.stdin.write(path + "\n")
        self.process.stdin.flush()
        answer = self._answer(f"converting {name}")
        if "error" in answer:
            raise PeerError(f"Model Explorer cannot convert {name}: {clip(answer['error'], 160)}")
        return answer["seconds"], answer["nodes"]

    def _answer(self, doing: str) -> dict:
        line = self.process.stdout.readline()
        if line:
            try:
                return json.loads(line)
            except ValueError:
                raise PeerError(
                    f"peer python {self.python}: not Model Explorer's timer: {clip(line.strip())}"
                ) from None
        code = self.process.wait()
        if code < 0:  # a crash: what it last logged is no cause
            raise PeerError(f"peer python {self.python} was killed by {signal.Signals(-code).name} {doing}")
        self.log.seek(0)
        said = [line.strip() for line in self.log if line.strip()]
        cause = f": {clip(said[-1], 160)}" if said else ""
        raise PeerError(f"peer python {self.python} exited with code {code} {doing}{cause}")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait()
        self.log.close()


def _import_seconds(path: str) -> tuple[float, int]:
    """(seconds, ops) of tilescope's import of `path`, from reading the file to the `input` graph."""
    start = time.perf_counter()
    graph = import_mlir(Path(path).read_text(), path).graph
    return time.perf_counter() - start, len(graph.ops)


def compare_import(peer_python: str, files: list[tuple[str, str]], repeats: int) -> list[dict]:
    """Per (name, path): the median over `repeats` rounds of tilescope's import, Model Explorer's
    conversion and MLIR's bare parse, each round running every file through all three in turn
    (after one untimed round: first runs load libraries)."""
    parsable = {path: make_parsable(Path(path).read_text(), path)[0] for _, path in files}
    times: dict[str, dict[str, list[float]]] = {name: {"tilescope": [], "peer": [], "bare": []} for name, _ in files}
    sizes: dict[str, tuple[int, int]] = {}
    peer = _Peer(peer_python)
    try:
        for round_ in range(repeats + 1):
            for name, path in files:
                peer_s, nodes = peer.seconds(name, path)
                tilescope_s, ops = _import_seconds(path)
                bare_s = parse_seconds(parsable[path], path)
                sizes[name] = (ops, nodes)
                if round_:
                    for key, seconds in (("tilescope", tilescope_s), ("peer", peer_s), ("bare", bare_s)):
                        times[name][key].append(seconds)
    finally:
        peer.close()
    rows = []
    for name, _ in files:
        median = {key: statistics.median(values) for key, values in times[name].items()}
        rows.append(
            {
                "name": name,
                "ops": sizes[name][0],
                "peer_nodes": sizes[name][1],
                "tilescope_s": median["tilescope"],
                "peer_s": median["peer"],
                "ratio": median["tilescope"] / median["peer"],
                "bare_s": median["bare"],
                "import_over_bare": median["tilescope"] / median["bare"],
            }
        )
    return rows


def format_rows(rows: list[dict]) -> str:
    """The comparison as a table: ratio is tilescope over Model Explorer (under 1: tilescope faster)."""
    lines = [
        f"{'file':<18} {'ops':>7} {'tilescope':>10} {'Model Explorer':>15} {'ratio':>6} {'bare parse':>11} {'/bare':>6}"
    ]
    for r in rows:
        lines.append(
            f"{r['name']:<18} {r['ops']:>7,} {r['tilescope_s']:>10.4f} {r['peer_s']:>15.4f} {r['ratio']:>6.2f} "
            f"{r['bare_s']:>11.4f} {r['import_over_bare']:>6.1f}"
        )
    return "\n".join(lines)
