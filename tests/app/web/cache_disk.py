"""A server whose cache directory is a file system of its own: a small one a test fills up, or a
read-only one. The server runs in a mount namespace of its own (unshare), where a tmpfs is mounted
on the directory; nothing outside the namespace sees the mount, and it goes when the server does."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import pytest

CHUNK = 64 * 1024


def on_tmpfs(directory: Path, size_kib: int, read_only: bool = False) -> list[str]:
    """The command to run the server under so that `directory` is a tmpfs of `size_kib` KiB."""
    if not shutil.which("unshare"):
        pytest.skip("util-linux's unshare is not installed")
    directory.mkdir(parents=True, exist_ok=True)
    options = f"size={size_kib}k,mode=0700" + (",ro" if read_only else "")
    as_root = [] if os.geteuid() == 0 else ["--map-root-user"]  # mounts need root, in a user namespace will do
    mount = 'mount -t tmpfs -o "$0" tmpfs "$1" && shift && exec "$@"'
    return ["unshare", "--mount", *as_root, "--", "sh", "-c", mount, options, str(directory)]


def fill(server_pid: int, directory: Path) -> int:
    """Fill the tmpfs the server sees at `directory` with a file `filler` in it (written through
    the server's view of the file system); the bytes written."""
    filler = Path(f"/proc/{server_pid}/root") / directory.relative_to("/") / "filler"
    written = 0
    with filler.open("wb", buffering=0) as out:
        for size in (CHUNK, 512):  # then the last pages
            try:
                while True:
                    written += out.write(b"\0" * size)
            except OSError as err:
                if err.errno != errno.ENOSPC:
                    raise
    return written
