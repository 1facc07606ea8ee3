"""Every command the README shows runs as written, on a throwaway database, and leaves the checkout clean.

Each ```sh block runs line by line in one shell environment: the Quick start from the checkout, as a
new user types it; the command-line walk-through in an empty directory, so its outputs land there;
the team set-up on a fresh PostgreSQL schema and a Redis database of its own. Commands that serve
(`./run app`, `tilescope serve`, `tilescope worker`) are started, must come up, and are stopped.
"""

from __future__ import annotations

import base64
import math
import os
import queue
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from .app.web.serving import free_port

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
STARTUP_S = 180  # a first compile on a loaded 2-core machine; a server that never comes up fails sooner


def blocks(language: str) -> list[tuple[str, str]]:
    """(the heading above it, its text) for each block of the README in `language` (```sh, ```python)."""
    found, heading = [], ""
    fence = f"```{re.escape(language)}\n"
    for part in re.split(rf"^(#{{2,3}} [^\n]*|{fence}.*?^```)$", README.read_text(), flags=re.M | re.S):
        if part.startswith("#"):
            heading = part.lstrip("#").strip()
        elif part.startswith(f"```{language}\n"):
            found.append((heading, part.removeprefix(f"```{language}\n").removesuffix("```")))
    return found


def _blocks() -> list[tuple[str, list[str]]]:
    """(the heading above it, its command lines) for each ```sh block of the README."""
    found = []
    for heading, text in blocks("sh"):
        lines = [line.strip() for line in text.splitlines()]
        found.append((heading, [line for line in lines if line and not line.startswith("#")]))
    return found


def _program(line: str) -> str:
    """What a line runs: `./run app`, `tilescope serve`, ... (its first two words, comments aside)."""
    return " ".join(shlex.split(line, comments=True)[:2])


SERVES = {"./run app", "tilescope serve"}  # lines that serve the explorer until stopped
# the user `tilescope passwd` adds in the team set-up, with the password _run types for it; a
# server without users ignores the header
SIGNED_IN = "Basic " + base64.b64encode(b"alice:readme-password").decode()


def _git_status() -> str | None:
    try:
        done = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


@pytest.fixture(scope="module")
def checkout_status():
    """The checkout's git status before the README's commands; the test module checks it is unchanged after."""
    return _git_status()


def _env(tmp_path: Path, **extra: str) -> dict:
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",  # this suite's tilescope
        "TILESCOPE_DB": f"sqlite:///{tmp_path / 'readme.db'}",
        "TILESCOPE_PORT": str(free_port()),
        "HOME": os.environ.get("HOME", str(tmp_path)),
    }
    env.pop("TILESCOPE_CELERY_BROKER", None)
    env.update(extra)
    return env


def _run(line: str, cwd: Path, env: dict) -> str:
    """What the line printed; it must succeed. What it asks for on its standard input (a password) is typed."""
    done = subprocess.run(
        ["bash", "-c", line],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        input="readme-password\n",
    )
    assert done.returncode == 0, f"`{line}` exited {done.returncode}:\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr, f"`{line}`:\n{done.stderr[-3000:]}"
    return done.stdout


def _lines(proc: subprocess.Popen) -> queue.Queue:
    """The process's output, a line at a time, readable with a timeout."""
    lines: queue.Queue = queue.Queue()

    def pump() -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def _until_up(line: str, cwd: Path, env: dict, up) -> None:
    """Start a serving command, wait until `up(output so far)` holds, then stop it and all it started."""
    proc = subprocess.Popen(
        ["bash", "-c", line],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    output, lines, deadline = [], _lines(proc), time.monotonic() + STARTUP_S
    try:
        while not up(output):
            try:
                text = lines.get(timeout=0.5)
            except queue.Empty:
                text = ""
            if text is None or time.monotonic() > deadline:
                pytest.fail(f"`{line}` did not come up:\n{''.join(output)[-3000:]}")
            output.append(text)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert "Traceback" not in "".join(output), "".join(output)[-3000:]


def _answers(port: str):
    def up(_output) -> bool:
        request = urllib.request.Request(f"http://127.0.0.1:{port}/", headers={"Authorization": SIGNED_IN})
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return response.status == 200 and b"tilescope" in response.read()
        except OSError:
            return False

    return up


def _ready(output: list[str]) -> bool:
    return any(" ready." in line for line in output)  # Celery's own word once the worker takes jobs


def _execute(lines: list[str], cwd: Path, env: dict) -> dict[str, str]:
    """Each line run in turn; what each line that ends printed."""
    printed = {}
    for line in lines:
        program = _program(line)
        if program in SERVES:
            _until_up(line, cwd, env, _answers(env["TILESCOPE_PORT"]))
        elif program == "tilescope worker":
            _until_up(line, cwd, env, _ready)
        else:
            printed[line] = _run(line, cwd, env)
    return printed


def test_readme_has_the_blocks_this_test_knows():
    """A new ```sh or ```python block needs a way to run; the Quick start holds exactly its two commands."""
    commands = dict(_blocks())
    assert set(commands) == {"Quick start", "The command line", "Configuration"}
    assert commands["Quick start"] == ["./run app", "./run test"]
    # the Python API's lines run in tests/test_package.py, in the installed wheel
    assert [heading for heading, _ in blocks("python")] == ["Python API"]
    assert "./run test" in (ROOT / ".ci" / "run").read_text()  # CI runs what the README says runs the tests


def test_quick_start_serves_the_example_model(tmp_path, checkout_status):
    if not (ROOT / ".venv" / "bin" / "tilescope").exists():
        pytest.skip("no .venv in the checkout: the suite runs outside ./run")
    env = _env(tmp_path)
    lines = [line for line in dict(_blocks())["Quick start"] if line != "./run test"]  # the test is running
    _execute(lines, ROOT, env)  # from the checkout, as a new user types it
    from tilescope.perfdb.engine import open_db, session_factory
    from tilescope.perfdb.runs import list_runs

    with session_factory(open_db(env["TILESCOPE_DB"]))() as session:
        assert [run.model_ref for run in list_runs(session)] == ["zoo:mlp"]  # the example run, on the given database


def test_command_line_walk_through_runs_as_written(tmp_path, checkout_status):
    work = tmp_path / "work"
    work.mkdir()
    env = _env(tmp_path)
    _run("tilescope run zoo:mlp", work, env)  # the database as the Quick start leaves it: its example's run
    printed = _execute(dict(_blocks())["The command line"], work, env)
    _check_diffs(printed, env["TILESCOPE_DB"])
    # what the commands wrote is where they were typed
    assert {"tuned.txt", "trace.json", "ops.csv", "ffn.db"} <= {p.name for p in work.iterdir()}
    # the layout tt-mlir reads; the fidelity, tilescope's own, is not in a tt-mlir file
    assert "override-output-layout=ffn.fc1=8x8:l1:block_sharded:bfp8 " in (work / "tuned.txt").read_text()


def _check_diffs(printed: dict[str, str], db: str) -> None:
    """Each `tilescope diff` compares two runs of one model; one said to be across meshes, a run on
    one device with a run on several."""
    from tilescope.perfdb.engine import open_db, session_factory
    from tilescope.perfdb.runs import get_run

    diffs = {line: out for line, out in printed.items() if _program(line) == "tilescope diff"}
    assert any("across meshes" in line for line in diffs)
    with session_factory(open_db(db))() as session:
        for line, out in diffs.items():
            b, a = (get_run(session, int(n)) for n in re.match(r"run (\d+) against run (\d+)", out).groups())
            assert a.model_ref == b.model_ref, (line, a.model_ref, b.model_ref)
            devices = [math.prod(size for _, size in run.mesh) for run in (a, b)]
            assert (devices[0] == 1 < devices[1]) == ("across meshes" in line), (line, devices)


def test_team_set_up_runs_as_written(tmp_path, pg_schemas, redis_broker, checkout_status):
    env = _env(tmp_path, TILESCOPE_DB=pg_schemas(), TILESCOPE_CELERY_BROKER=redis_broker)
    _execute(dict(_blocks())["Configuration"], tmp_path, env)
    users = tmp_path / "team-users"
    assert users.stat().st_mode & 0o777 == 0o600 and users.read_text().startswith("alice:")


DOCS = (README, *sorted((ROOT / "docs").glob("*.md")))
# a path in the checkout as the docs name one: from a top-level folder, a file or a glob of files
CHECKOUT_PATH = re.compile(
    r"(?<![\w./-])(?:(?:app|compiler|perfdb|overrides|assets|tests)/[\w./*-]*[\w*/]|tilescope/\w+\.py)"
)
LINK = re.compile(r"\]\(([^)#:\s]+)(?:#[^)]*)?\)")  # a relative link of Markdown, without its anchor


def test_every_path_the_docs_name_is_in_the_checkout():
    """A file moved or renamed is named by its new path in the README and docs/, so a reader finds it."""
    missing = []
    for doc in DOCS:
        text = doc.read_text()
        for path in sorted(set(CHECKOUT_PATH.findall(text))):
            if not (ROOT / path).exists() and not any(ROOT.glob(path)):
                missing.append(f"{doc.relative_to(ROOT)}: {path}")
        for link in sorted(set(LINK.findall(text))):
            if not (doc.parent / link).exists():
                missing.append(f"{doc.relative_to(ROOT)}: ({link})")
    assert not missing, missing


def test_override_examples_in_the_docs_apply_to_the_shipped_model():
    """The examples table of docs/overrides.md: each applies to ffn.mlir on the default target as written."""
    from tilescope.compiler.frontend.model_refs import load_model
    from tilescope.compiler.pipeline.options import CompileOptions
    from tilescope.compiler.targets.catalog import load_target
    from tilescope.overrides import parse_item
    from tilescope.overrides import validate

    table = (ROOT / "docs" / "overrides.md").read_text().split("## Outcomes")[0]
    specs = re.findall(r"^\| `(ffn\.[^`]+)` \|", table, flags=re.M)
    assert len(specs) == 4
    model, target = load_model("ffn.mlir"), load_target("wormhole_n150")
    for spec in specs:
        report = validate(CompileOptions([parse_item(spec)]), model, target)
        assert report.ok and [o.status for o in report.outcomes] == ["applied"], (spec, report.problems)


def test_the_checkout_is_as_it_was(checkout_status):
    """Runs last in this module: nothing the README's commands did shows in `git status`."""
    if checkout_status is None:
        pytest.skip("not a git checkout")
    assert _git_status() == checkout_status
