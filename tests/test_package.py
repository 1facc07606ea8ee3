"""tilescope as `pip install .` installs it, not editable: a wheel built from the checkout holds
every file of its packages and the explorer's assets under the one import root `tilescope`, and,
installed in a fresh venv outside the checkout, runs the README's Python lines, runs a model over
a system of devices, validates against the shipped measurements and serves the explorer with its
CSS and JS; and it installs no top-level package but `tilescope`.

The wheel is built from a copy of the checkout (a build leaves build/ and *.egg-info beside its
source) with the build backend pyproject.toml names, which the test extra installs. The fresh venv
gets the wheel alone (`--no-deps`); it reads the dependencies from this environment's
site-packages through a .pth file, which puts them on its path without running the .pth files
there, so the editable install of the checkout stays out of it.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import site
import subprocess
import sys
import tomllib
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tilescope.compiler.targets.catalog import builtin_names

from .app.web import serving
from .test_readme import blocks

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("app", "compiler", "overrides", "perfdb")  # folders of the checkout, each tilescope.<folder> installed
API = ROOT / "tilescope"  # the package itself: the Python API
ASSETS = ROOT / "assets"
ASSETS_IN_WHEEL = "tilescope/assets"  # where the installed explorer finds them
NOT_SOURCE = ("__pycache__", "*.pyc", ".git", ".venv", "build", "dist", "*.egg-info", "screenshots", "*.db")
TIMEOUT_S = 300  # a command on a loaded 2-core machine; one that hangs fails


def shipped() -> set[str]:
    """Every file the wheel must hold, as its path in the wheel: each file of the packages under
    `tilescope/`, where it lies in the checkout, and the top-level assets/ in tilescope/assets/."""
    files = {
        f"tilescope/{path.relative_to(ROOT).as_posix()}"
        for package in PACKAGES
        for path in (ROOT / package).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    api = {
        f"tilescope/{path.relative_to(API).as_posix()}" for path in API.rglob("*.py") if "__pycache__" not in path.parts
    }
    return files | api | {f"{ASSETS_IN_WHEEL}/{path.relative_to(ASSETS).as_posix()}" for path in _assets()}


def _assets() -> list[Path]:
    return sorted(path for path in ASSETS.rglob("*") if path.is_file())


def test_the_build_backend_here_is_the_one_pyproject_names():
    """The wheel below is built with this environment's setuptools: it must be what a build gets."""
    for text in tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]:
        requirement = Requirement(text)
        assert requirement.specifier.contains(importlib.metadata.version(requirement.name)), text


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("wheel")
    source = where / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*NOT_SOURCE))
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(where),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (path,) = where.glob("tilescope-*.whl")
    return path


def test_the_wheel_holds_every_file_of_the_packages_and_the_assets(wheel):
    with zipfile.ZipFile(wheel) as archive:
        held = set(archive.namelist())
        missing = sorted(shipped() - held)
        assert not missing, f"not in the wheel: {missing}"
        for path in _assets():
            assert archive.read(f"{ASSETS_IN_WHEEL}/{path.relative_to(ASSETS).as_posix()}") == path.read_bytes(), path


@dataclass(frozen=True)
class Installed:
    """A venv with the wheel installed, and a directory outside the checkout to work in."""

    venv: Path
    work: Path
    env: dict[str, str]

    @property
    def program(self) -> list[str]:
        return [str(self.venv / "bin" / "tilescope")]

    def tilescope(self, *argv: str) -> str:
        """What the command printed; it must succeed."""
        return self._run(*self.program, *argv)

    def python(self, code: str) -> str:
        return self._run(str(self.venv / "bin" / "python"), "-c", code)

    def script(self, name: str, code: str) -> str:
        """`code` run as a script of the user's, `name` in the work directory."""
        path = self.work / name
        path.write_text(code)
        return self._run(str(self.venv / "bin" / "python"), str(path))

    def _run(self, *argv: str) -> str:
        done = subprocess.run(argv, cwd=self.work, env=self.env, capture_output=True, text=True, timeout=TIMEOUT_S)
        assert done.returncode == 0, f"{' '.join(argv)}:\n{done.stderr[-3000:]}"
        assert "Traceback" not in done.stderr, done.stderr[-3000:]
        return done.stdout


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Installed:
    where = tmp_path_factory.mktemp("installed")
    venv, work = where / "venv", where / "work"
    work.mkdir()
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=TIMEOUT_S)
    python = venv / "bin" / "python"
    # the wheel first, into a venv that holds nothing else: pip then sees no tilescope installed
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index"]
    done = subprocess.run([*install, str(wheel)], capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-3000:]
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    env |= {
        "TILESCOPE_DB": f"sqlite:///{work / 'perf.db'}",
        "XDG_DATA_HOME": str(where / "data"),
        "XDG_CACHE_HOME": str(where / "cache"),
    }
    installed = Installed(venv, work, env)
    purelib = Path(installed.python("import sysconfig; print(sysconfig.get_path('purelib'))").strip())
    (purelib / "dependencies.pth").write_text("\n".join(_dependency_dirs()) + "\n")
    for path in installed.python("import tilescope; print(tilescope.__file__)").split():
        assert Path(path).is_relative_to(venv), path  # what runs below is the wheel's, not the checkout's
    return installed


def _dependency_dirs() -> list[str]:
    """Where this environment finds its dependencies: its site-packages, and the site directories
    a .pth file of theirs put on its path (an environment that borrows another's packages)."""
    found = [*site.getsitepackages(), *(p for p in sys.path if Path(p).name in ("site-packages", "dist-packages"))]
    return [path for path in dict.fromkeys(found) if Path(path).is_dir()]


def test_installed_has_one_top_level_package(wheel, installed):
    """`pip install .` puts `tilescope` in site-packages and none of the generic names its folders have."""
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/")[0] for name in archive.namelist()}
    assert {top for top in tops if not top.endswith(".dist-info")} == {"tilescope"}, tops
    code = f"import importlib.util; print(*[importlib.util.find_spec(n) for n in {PACKAGES}])"
    assert installed.python(code).split() == ["None"] * len(PACKAGES)


def test_installed_runs_the_readmes_python(installed):
    """The README's Python API lines, as written, in the installed wheel, as a script of the user's:
    they store two runs in the command line's database and print their times, then a PyTorch
    module's run and its ops' module paths and lines of Python."""
    ((_, code),) = blocks("python")
    printed = installed.script("model.py", code)
    times, ops = printed.splitlines()
    assert re.fullmatch(r"Sides\(a=RunTimes\(total_ns=[\d.]+, .*\), b=RunTimes\(total_ns=[\d.]+, .*\)\)", times), times
    # the PyTorch module's ops, by module path, at the lines of the script that made them
    lines = code.splitlines()
    fc1 = next(n for n, line in enumerate(lines, 1) if "self.fc2(torch.nn.functional.gelu(self.fc1(x)))" in line)
    assert ops.startswith(f"[('fc1.linear', 'model.py:{fc1}'), ('fc2.linear', 'model.py:{fc1}')"), ops
    assert installed.tilescope("runs").count("zoo:mlp") >= 2


def test_installed_knows_every_built_in_target_and_system(installed):
    code = (
        "from tilescope.compiler.targets.catalog import builtin_names, load_target\n"
        "print(*[load_target(n).name for n in builtin_names()])"
    )
    assert installed.python(code).split() == list(builtin_names())


def test_installed_runs_a_model_over_the_devices_of_a_system(installed):
    out = installed.tilescope("run", "zoo:llama-3.2-1b?layers=1&devices=8", "--target", "t3k")
    assert re.search(r"^each of 8 devices: compute [\d.]+ us, collectives [1-9][\d.]* us", out, re.M), out[-2000:]


def test_installed_runs_an_example_with_overrides_from_a_file(installed):
    """The shipped examples, the overrides file's JSON Schema and the database's migrations."""
    installed.tilescope("run", "ffn.mlir", "--override", "ffn.fc1=8x8:l1:block_sharded")
    installed.tilescope("export", "last", "-o", "ffn.json")
    checked = installed.tilescope("check", "ffn.mlir", "--overrides", "ffn.json")
    assert checked == "no problems; 1 override(s) apply\n"


def test_installed_runs_ireees_example_on_a_cpu_target_and_data_tiles_on_it(installed):
    """The shipped IREE program and CPU target files, and the data-tiling stage, from the wheel."""
    out = installed.tilescope("run", "ffn_iree.mlir", "--target", "x86_avx512")
    assert re.search(r"^mmt4d_0 +mmt4d ", out, re.M), out[-2000:]
    out = installed.tilescope("run", "zoo:mlp", "--target", "aarch64_sve", "--data-tiling")
    assert "data-tiling)" in out.splitlines()[0] and " pack " in out, out[-2000:]


@pytest.mark.parametrize("args", [(), ("--models",)], ids=["ops", "models"])
def test_installed_validate_cites_sources_the_user_can_open(installed, args):
    out = installed.tilescope("validate", *args)
    (cited,) = re.findall(r"sources: (\S+)$", out, re.M)
    opened = installed.work / cited  # as the user, where they typed the command
    assert opened.is_file(), cited
    assert opened.read_bytes() == (ROOT / "compiler" / "validation" / "measurements" / "SOURCES.md").read_bytes()


def test_installed_serves_the_explorer_with_its_css_and_js(installed, tmp_path):
    url, proc = serving.start(
        "zoo:mlp", installed.env["TILESCOPE_DB"], logs=tmp_path, env=installed.env, program=installed.program
    )
    try:
        with urllib.request.urlopen(url, timeout=60) as page:
            html = page.read().decode()
        for path in _assets():
            name = path.relative_to(ASSETS).as_posix()
            assert f"/assets/{name}" in html, name  # the page links it
            with urllib.request.urlopen(f"{url}assets/{name}", timeout=60) as asset:
                assert asset.status == 200 and asset.read() == path.read_bytes(), name
    finally:
        proc.stop()
