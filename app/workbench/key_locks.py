"""A lock per key, which exists only while a thread holds or waits for it: work on one key (a run's
view read, which may compile for minutes) never holds up another key's, and a stream of keys a
page names leaves nothing behind."""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections.abc import Hashable, Iterator


class KeyLocks:
    def __init__(self) -> None:
        self._forget()
        _ALL.add(self)

    def _forget(self) -> None:
        """Locks of their own (in a forked child: a lock a parent's thread held stays held)."""
        self._guard = threading.Lock()
        self._held: dict[Hashable, tuple[threading.Lock, list[int]]] = {}  # key -> (lock, [users])

    @contextlib.contextmanager
    def holding(self, key: Hashable) -> Iterator[None]:
        with self._guard:
            lock, users = self._held.setdefault(key, (threading.Lock(), [0]))
            users[0] += 1
        try:
            with lock:
                yield
        finally:
            with self._guard:
                users[0] -= 1
                if not users[0]:
                    del self._held[key]

    def __len__(self) -> int:
        return len(self._held)


_ALL: weakref.WeakSet[KeyLocks] = weakref.WeakSet()
os.register_at_fork(after_in_child=lambda: [locks._forget() for locks in list(_ALL)])
