"""The one build fact pyproject.toml cannot declare: which packages go under `tilescope`. Its
folders (app/, compiler/, ...) are mapped to dotted names in pyproject.toml; their sub-packages are
found here and named with the root in front, so tests/ and docs/ stay out. Folders of data files
(assets/, targets/chips/, migrations/versions/, ...) are packages too, so their files install beside
the code that reads them (package-data in pyproject.toml)."""

from setuptools import find_namespace_packages, setup

TOP = ("app", "compiler", "overrides", "perfdb")
SUB = find_namespace_packages(include=[f"{top}{rest}" for top in TOP for rest in ("", ".*")], exclude=["*__pycache__"])

setup(packages=["tilescope", "tilescope.assets", *(f"tilescope.{package}" for package in SUB)])
