"""What this server process is doing to open a model that has no run yet (importing, compiling,
simulating, storing), for the pages waiting on it: a page opening a 100k-op model waits tens of
seconds, and asks for the stage while it does.

Stages are kept by what is being opened (model, target, policy, dispatch, data-tiling), so every
page opening the same thing sees the same stage; an entry lives while some request reports on it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass
class _Opening:
    stage: str
    requests: int  # reporting on it now


def key(model, target, policy, dispatch, data_tiling) -> tuple:
    """What a page opens, as the page's choice of model and the stage it asks for both name it."""
    return (model, target, policy, dispatch, bool(data_tiling))


_lock = threading.Lock()
_open: dict[tuple, _Opening] = {}


@contextmanager
def reporting(key: tuple) -> Iterator[Callable[[str], None]]:
    """An `on_stage` that makes each stage `key`'s, while the block runs."""
    with _lock:
        _open.setdefault(key, _Opening("", 0)).requests += 1

    def say(stage: str) -> None:
        with _lock:
            if key in _open:
                _open[key].stage = stage

    try:
        yield say
    finally:
        with _lock:
            opening = _open[key]
            opening.requests -= 1
            if not opening.requests:
                del _open[key]


def stage_of(key: tuple) -> str:
    """The stage `key` is at ('' if nothing is opening it, or it has said nothing yet)."""
    with _lock:
        opening = _open.get(key)
        return opening.stage if opening else ""
