"""The one build step pyproject.toml cannot declare: the explorer's CSS and JS, which the checkout
keeps in its top-level assets/, go into the package as app/web/assets/, where an installed
explorer finds them (app/web/server.py). An editable install reads them from the checkout."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ASSETS = Path("assets")  # beside this file; MANIFEST.in puts it in the source distribution
IN_PACKAGE = Path("app", "web", "assets")


class BuildPyWithAssets(build_py):
    def _assets(self) -> list[tuple[Path, Path]]:
        if self.editable_mode:
            return []
        files = sorted(path for path in ASSETS.rglob("*") if path.is_file())
        return [(path, Path(self.build_lib, IN_PACKAGE, path.relative_to(ASSETS))) for path in files]

    def run(self) -> None:
        super().run()
        for source, target in self._assets():
            self.mkpath(str(target.parent))
            self.copy_file(str(source), str(target))

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return super().get_outputs(include_bytecode) + [str(target) for _, target in self._assets()]


setup(cmdclass={"build_py": BuildPyWithAssets})
