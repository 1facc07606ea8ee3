"""Large compilations kept on disk, so a server that restarts shows a big model's stored run without
compiling it again.

A stored run holds its timings, not its compilation, and every view of a run (graph, MLIR,
inspector) reads the compilation: after a restart the first page of a 100k-op model compiled it
again for about 20 s. Unpickling the same compilation takes about 1.5 s. Only compilations of at
least MIN_OPS ops are kept (a small one compiles faster than it loads), at most KEEP of them,
written by a thread of their own once compiled. A file's name is a hash of everything the
compilation depends on, the compiler's own source included, so a changed compiler or model never
reads a stale one. The directory is the server's own cache: it holds nothing a request wrote.

A pickle runs code as it loads, and a file's name is worked out from public inputs, so a file is
never taken on trust: the directory is private to the server's user (private_files: 0700, files
0600, refused if another user's), and each file starts with an HMAC-SHA256 of its key and bytes
under a key of the store's own (`key`, 0600, made on first use), checked before anything is
unpickled; a file that fails it is removed. The model's op count, signed with the rest, comes
before the pickle: a server whose --max-ops is lower than when the file was written refuses it
unread. A format that runs no code would need a reader and
writer for every record a compilation holds (IR, passes' metadata, kernels), kept in step with
the compiler; the signature costs a second read of the file, from the page cache: 0.06 s for the
28 MB of a 10k-op compilation, whose unpickling took 3.7-4.3 s (on a loaded machine).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import pickle
import struct
import sys
import threading
import time
import weakref
from pathlib import Path

from tilescope.compiler.pipeline.compilation import Compilation
from tilescope.compiler.pipeline.options import CompileOptions

from tilescope.app.workbench.private_files import NotPrivate, create_private, make_private, open_private, private_key

MIN_OPS = 20_000  # kernel-level ops from which a compilation is kept
KEEP = 4  # compilations kept; the least recently used goes first
TAG_BYTES = hashlib.sha256().digest_size  # the signature a file starts with
CHUNK = 1 << 20
_OPS = struct.Struct("!Q")  # after the signature, signed with the rest: the model's imported ops


def _compiler_version() -> str:
    """A hash of the compiler's source and target files: what a kept compilation was made by."""
    root = Path(__file__).resolve().parents[2] / "compiler"
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".toml")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


class CompileStore:
    """Compilations by key, in files under `directory`. NotPrivate, in one line, when the directory
    cannot be kept to this user (another user's, or on a read-only file system)."""

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)
        if make_private(self.directory, entries=True):  # kept compilations hold their model's source
            (self.directory / "key").unlink(missing_ok=True)  # known to others maybe: its signatures are void
        self._secret = private_key(self.directory / "key")
        self.version = _compiler_version()
        self._writing: set[str] = set()
        self._writers: list[threading.Thread] = []
        self._lock = threading.Lock()
        _STORES.add(self)

    def _forget_writers(self) -> None:
        """In a forked child: the parent's writer threads are not here, and a lock one held stays held."""
        self._writing, self._writers, self._lock = set(), [], threading.Lock()

    def key(self, ref: str, text: str, target: str, options: CompileOptions) -> str:
        """The file name of a compilation of `ref` (whose text is `text`) for `target` (the
        target's repr) under `options`, as the compiler reads them (their dispatch is not)."""
        options = options.compiler_part
        parts = (
            self.version,
            ref,
            text,
            target,
            repr(options.overrides),
            options.policy,
            repr(options.l1_usage_cap),
            repr(options.data_tiling),
        )
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    def has(self, key: str) -> bool:
        return (self.directory / f"{key}.pickle").exists()

    def load(self, key: str, max_ops: int | None = None) -> Compilation | None:
        """The compilation kept under `key`, or None; None too, before it is read, when its model
        has more than `max_ops` ops (a server whose limit was lowered since). A file that does not
        read back, or that this store did not sign, is removed."""
        path = self.directory / f"{key}.pickle"
        try:
            with os.fdopen(open_private(path), "rb") as f:
                if not hmac.compare_digest(f.read(TAG_BYTES), self._signature(key, f)):
                    raise NotPrivate("not signed by this server")
                f.seek(TAG_BYTES)
                (ops,) = _OPS.unpack(f.read(_OPS.size))
                if max_ops is not None and ops > max_ops:
                    return None
                found = pickle.load(f)  # noqa: S301  # signed by this store, in its private directory (see above)
        except FileNotFoundError:
            return None
        except Exception as err:  # truncated by a crash, made by another Python or by someone else: compile
            said = str(err) if isinstance(err, NotPrivate) else type(err).__name__
            sys.stderr.write(f"tilescope: a kept compilation was not read back ({said}); compiling\n"[:300])
            path.unlink(missing_ok=True)
            return None
        with contextlib.suppress(FileNotFoundError):  # evicted by another process meanwhile: read already
            os.utime(path)  # recently used: evicted last
        return found if isinstance(found, Compilation) else None

    def _signature(self, key: str, body) -> bytes:
        """The HMAC of `key` and what `body` (a file) holds from where it stands to its end."""
        mac = hmac.new(self._secret, f"tilescope compilation {key}\0".encode(), hashlib.sha256)
        while chunk := body.read(CHUNK):
            mac.update(chunk)
        return mac.digest()

    def keep(self, key: str, compilation: Compilation) -> threading.Thread | None:
        """Write `compilation` under `key` in a thread (the thread, or None when it is too small to
        keep or already being written)."""
        if len(compilation.kernel.ops) < MIN_OPS:
            return None
        with self._lock:
            if key in self._writing:
                return None
            self._writing.add(key)
        writer = threading.Thread(target=self._write, args=(key, compilation), daemon=True)
        writer.start()
        with self._lock:
            self._writers = [w for w in self._writers if w.is_alive()] + [writer]
        return writer

    def flush(self) -> None:
        """Wait for the compilations being written."""
        with self._lock:
            writers = list(self._writers)
        for writer in writers:
            writer.join()

    def _write(self, key: str, compilation: Compilation) -> None:
        partial = self.directory / f"{key}.{os.getpid()}.{threading.get_ident()}.partial"  # per writer
        try:
            with os.fdopen(create_private(partial), "w+b") as f:
                f.write(bytes(TAG_BYTES))  # the signature's place, written once the rest is
                f.write(_OPS.pack(len(compilation.model.graph.ops)))  # as ModelAccess.check_ops counts them
                pickle.dump(compilation, f, protocol=pickle.HIGHEST_PROTOCOL)
                f.seek(TAG_BYTES)
                tag = self._signature(key, f)
                f.seek(0)
                f.write(tag)
            partial.replace(self.directory / f"{key}.pickle")  # whole or not at all
            kept = []
            for path in self.directory.glob("*.pickle"):
                with contextlib.suppress(FileNotFoundError):  # removed by another process meanwhile
                    kept.append((path.stat().st_mtime, path))
            for _, old in sorted(kept, reverse=True)[KEEP:]:
                old.unlink(missing_ok=True)
            for left in self.directory.glob("*.partial"):  # a writer that died an hour ago or more
                with contextlib.suppress(FileNotFoundError):  # another process's cleanup got there first
                    if time.time() - left.stat().st_mtime > 3600:
                        left.unlink(missing_ok=True)
        except Exception as err:  # a full disk, or no memory to pickle in: a compile after the next restart
            sys.stderr.write(f"tilescope: could not keep a compilation: {type(err).__name__}: {err}\n"[:300])
            partial.unlink(missing_ok=True)
        finally:
            with self._lock:
                self._writing.discard(key)


_STORES: weakref.WeakSet[CompileStore] = weakref.WeakSet()
os.register_at_fork(after_in_child=lambda: [store._forget_writers() for store in list(_STORES)])
