"""Where targets come from: the built-in ones by name (chips/*.toml, systems/*.toml), any other by
the path of a file of the same schema, and a stored run's by the text it kept.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from tilescope.compiler.errors import TargetError
from tilescope.compiler.targets.chip import Target
from tilescope.compiler.targets.chip_file import target_from
from tilescope.compiler.targets.data_file import assumed_keys, parse_toml, read_text, shown, toml_string
from tilescope.compiler.targets.system_file import system_target

BUILTIN_DIR = Path(__file__).parent / "chips"
SYSTEM_DIR = Path(__file__).parent / "systems"  # systems of several devices (targets/system.py)


def builtin_names() -> list[str]:
    """Built-in targets: single devices and systems of several."""
    return sorted({p.stem for d in (BUILTIN_DIR, SYSTEM_DIR) for p in d.glob("*.toml")})


def _device_names() -> list[str]:
    return sorted(p.stem for p in BUILTIN_DIR.glob("*.toml"))


def target_text(name_or_path: str) -> tuple[str, str]:
    """(TOML text, where it came from) of a built-in target name or a target file path. A system's
    text carries its device's file (a [device] table), so that it alone rebuilds the target."""
    # a built-in's file only by its name: anything else is a path the user typed, looked up as typed
    builtin = [d / f"{name_or_path}.toml" for d in (BUILTIN_DIR, SYSTEM_DIR)] if name_or_path in builtin_names() else []
    path = next((p for p in builtin if p.is_file()), None)
    if path is None:
        path = Path(name_or_path).expanduser()
        if path.suffix == ".toml" and not os.path.isfile(path):  # False for a name no file system takes too
            raise TargetError(f"{name_or_path}: no such target file")
        if path.suffix != ".toml":
            raise TargetError(
                f"unknown target {name_or_path!r}; built in: {', '.join(builtin_names())}, "
                "or a path to a .toml target file"
            )
    return _with_device(read_text(path)), str(path)


def _with_device(text: str) -> str:
    """A system file's text with its built-in device's file appended as [device] toml; any other
    text (and any the parser will refuse) as it is."""
    try:
        data = parse_toml(text, "")
    except TargetError:
        return text
    system = data.get("system")
    device = system.get("device") if isinstance(system, dict) else None
    if "device" in data or not isinstance(device, str) or device not in _device_names():
        return text
    return f"{text.rstrip()}\n\n[device]\ntoml = {toml_string(target_text(device)[0])}\n"


def load_target(name_or_path: str, text: str | None = None) -> Target:
    """A built-in target or system by name, or a target or system file by path (or, with `text`,
    the description a stored run kept). The same content gives the same Target object, so callers
    may cache on it, and an edited file is read afresh."""
    if text is not None:
        return _parse_target(text, name_or_path)
    return _parse_target(*target_text(name_or_path))


@lru_cache(maxsize=32)
def _parse_target(text: str, where: str) -> Target:
    data = parse_toml(text, where)
    if "system" in data:
        return system_target(data, where, assumed_keys(text), _device)
    return target_from(data, where, assumed_keys(text))


def _device(name: str, text: str | None, where: str) -> Target:
    """A system's device: the file it embeds ([device] toml), else the built-in device of its name."""
    if text is not None:
        return _parse_target(text, f"{where} [device]")
    if name not in _device_names():
        devices = ", ".join(_device_names())
        raise TargetError(f"{where}: key 'system.device' must be a built-in device ({devices}), got {shown(name)}")
    return _parse_target(*target_text(name))
