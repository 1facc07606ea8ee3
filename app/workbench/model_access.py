"""What a web request may name, and how a model it names for the first time is compiled.

The server never opens a path a user typed: a page may ask for a zoo model, a shipped example, a
model already stored in the database, or a file under a directory the operator allowed
(`tilescope serve --models-dir DIR`). Targets likewise: a built-in one, or one a stored run kept.
A model compiled for the first time on a request is compiled in a child process with memory and
time limits, and refused beyond `max_ops` ops. The command line has none of these limits: its
user names what they may read.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from sqlalchemy.orm import Session, sessionmaker

from tilescope.compiler.frontend import zoo
from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.frontend.model_refs import (
    EXAMPLES,
    count_ops,
    example_names,
    read_source,
    split_function,
)
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.compiler.targets.catalog import builtin_names

from tilescope.app.workbench.defaults import DEFAULT_MAX_OPS
from tilescope.app.workbench.isolation import run_isolated
from tilescope.app.workbench.runs import (
    CompileInputs,
    baseline_options,
    finish_keeping,
    imported,
    is_kept,
    store_baseline,
)

MAX_SOURCE_BYTES = 64 * 2**20  # an upload or a file under --models-dir; larger models: the CLI
MEMORY_PER_OP = 64 * 2**10  # a 50k-op model peaks at ~1.5 GB compiling and storing: twice that
MIN_COMPILE_MEMORY = 2 * 2**30  # counting a 64 MiB upload's ~1M ops peaks at ~0.7 GB
COMPILE_SECONDS = 300.0
LISTED_FILES = 200  # files of the models directories offered in the model menu
T = TypeVar("T")


class NotAllowed(TilescopeError):
    """A model or target a request may not name; says what it may."""


@dataclass(frozen=True)
class ModelAccess:
    models_dirs: tuple[Path, ...] = ()
    max_ops: int = DEFAULT_MAX_OPS
    seconds: float = COMPILE_SECONDS

    @property
    def memory_bytes(self) -> int:
        """A first compile's memory budget, from the ops it may have: two children at once may
        each take this much (app/workbench/isolation.py)."""
        return max(MIN_COMPILE_MEMORY, self.max_ops * MEMORY_PER_OP)

    @classmethod
    def of(cls, models_dirs: Sequence[str | Path] = (), max_ops: int = DEFAULT_MAX_OPS) -> ModelAccess:
        """Directories resolved once (symbolic links followed), so a file's real path is checked against them."""
        dirs = []
        for d in models_dirs:
            path = Path(d).expanduser().resolve()
            if not path.is_dir():
                raise TilescopeError(f"--models-dir {d}: no such directory")
            dirs.append(path)
        if max_ops < 1:
            raise TilescopeError(f"--max-ops {max_ops}: a model has at least one op")
        return cls(tuple(dirs), max_ops)

    def files(self) -> list[str]:
        """The .mlir files directly in the models directories, for the model menu."""
        found = []
        for d in self.models_dirs:
            found += sorted(str(p) for p in d.glob("*.mlir") if p.is_file())
        return found[:LISTED_FILES]

    def source(self, ref: str) -> str | None:
        """The text of a model `ref` names that has no stored run yet: a shipped example's or an
        allowed file's (read here, within MAX_SOURCE_BYTES); None for a zoo model (generated
        where it is compiled). Anything else raises NotAllowed, having opened nothing."""
        if zoo.is_zoo(ref):
            return None
        file_ref = split_function(ref)[0]
        if file_ref in example_names():
            return _read(EXAMPLES / file_ref, ref)
        path = self._allowed_path(file_ref)
        if path is None:
            raise NotAllowed(
                f"{ref}: not an allowed model; this server opens zoo models, the shipped examples "
                f"({', '.join(example_names())}), models stored in its database"
                + (", and .mlir files under its --models-dir" if self.models_dirs else " and uploads")
            )
        return _read(path, ref)

    def _allowed_path(self, file_ref: str) -> Path | None:
        """The file `file_ref` names inside a models directory (absolute, or relative to one), with
        every link resolved first; None if it names none."""
        if not self.models_dirs or not file_ref.endswith(".mlir") or "\0" in file_ref:
            return None
        given = Path(file_ref)
        for d in self.models_dirs:
            path = (given if given.is_absolute() else d / given).resolve()
            if path.is_relative_to(d):
                return path
        return None

    def target_source(self, target: str, stored: Callable[[str], str | None]) -> str | None:
        """The description to compile `target` with: None for a built-in one (read by name), the
        one a stored run kept for a target file; anything else raises NotAllowed."""
        if target in builtin_names():
            return None
        description = stored(target)
        if description:
            return description
        raise NotAllowed(
            f"{target}: not an allowed target; this server has {', '.join(builtin_names())} "
            "and the targets of runs stored in its database"
        )

    def compile_new(
        self,
        sessions: sessionmaker[Session],
        model_ref: str,
        target: str,
        options: CompileOptions,
        source_text: str | None,
        target_source: str | None,
        on_stage: Callable[[str], None],
    ) -> int:
        """Compile, simulate and store a model's first run in a child process; returns the run id."""

        def work(say: Callable[[str], None]) -> int:
            sessions.kw["bind"].dispose(close=False)  # the parent's pooled connections are the parent's
            say("reading the model")
            text = read_source(model_ref) if source_text is None else source_text  # a zoo model: generated
            ops = self.check_ops(model_ref, text)
            if not is_kept(CompileInputs(model_ref, target, baseline_options(options), text, target_source)):
                say(f"importing {ops:,} ops")  # apart from the compile, to say which is going on
                imported(model_ref, text)
            run_id = store_baseline(sessions, model_ref, target, options, text, target_source, say)
            finish_keeping()  # the page's views read the compilation back from disk, not compile it again
            return run_id

        return self.isolated(work, model_ref, on_stage)

    def check_ops(self, model_ref: str, text: str) -> int:
        """Refuse, in one line, a model of more ops than this server compiles: counted before any
        import, which costs ~15x the count. The count, when allowed."""
        ops = count_ops(model_ref, text)
        if ops > self.max_ops:
            raise TilescopeError(
                f"{model_ref}: {ops:,} ops is over this server's limit of {self.max_ops:,} "
                "(tilescope serve --max-ops; the command line has none)"
            )
        return ops

    def isolated(
        self, work: Callable[[Callable[[str], None]], T], what: str, on_stage=None, seconds: float | None = None
    ) -> T:
        """`work(say)` in a child process within this server's memory budget and `seconds` (by
        default, a compile's); what it says goes to `on_stage` (app/workbench/isolation.py)."""
        return run_isolated(work, what, self.memory_bytes, self.seconds if seconds is None else seconds, on_stage)


def _read(path: Path, ref: str) -> str:
    """A regular file's text, refused past MAX_SOURCE_BYTES before more is read (a device or a
    pipe would never end)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise TilescopeError(f"{ref}: no such file") from None
    except OSError as err:
        raise TilescopeError(f"{ref}: cannot read: {err.strerror}") from None
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise TilescopeError(f"{ref}: not a regular file")
        data = file.read(MAX_SOURCE_BYTES + 1)
    if len(data) > MAX_SOURCE_BYTES:
        raise TilescopeError(f"{ref}: over this server's {MAX_SOURCE_BYTES // 2**20} MiB limit for a model file")
    try:
        return data.decode()
    except UnicodeDecodeError:
        raise TilescopeError(f"{ref}: not MLIR text (not UTF-8)") from None
