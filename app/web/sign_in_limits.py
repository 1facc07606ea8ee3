"""How many failed sign-ins a server hears before it stops listening for a while: per address
(a guesser trying many names) and per user name (guessers from many addresses). Past either, a
sign-in is answered 429 unheard, its password not checked (a check is 0.1 s of work on purpose),
until the window that began with the first failure has passed. A page already signed in goes on:
its credentials were verified before, and are known without a check.

Each server process counts its own; memory is bounded by forgetting the oldest counts first.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

FAILURES_PER_ADDRESS = 30
FAILURES_PER_USER = 10
WINDOW_S = 300.0  # a user's password takes 120 guesses an hour, where 845 came in 30 s
TRACKED = 10_000  # addresses, and user names, counted at once
NAME_CHARS = 64  # a longer name is no user's, and is counted by its start


@dataclass
class _Count:
    started: float
    failures: int


class FailureCounts:
    """Failures per key within a window opened by the first, for at most `tracked` keys."""

    def __init__(self, allowed: int, window_s: float, tracked: int, clock: Callable[[], float]) -> None:
        self.allowed, self.window_s, self.tracked, self.clock = allowed, window_s, tracked, clock
        self._counts: OrderedDict[str, _Count] = OrderedDict()  # oldest window first

    def wait(self, key: str) -> float:
        """Seconds until `key` may try again; 0 if it may now."""
        count = self._counts.get(key)
        if count is None:
            return 0.0
        left = count.started + self.window_s - self.clock()
        if left <= 0:
            del self._counts[key]
            return 0.0
        return left if count.failures >= self.allowed else 0.0

    def add(self, key: str) -> None:
        self.wait(key)  # forgets a window that has passed
        if key in self._counts:
            self._counts[key].failures += 1
            return
        while len(self._counts) >= self.tracked:
            self._counts.popitem(last=False)
        self._counts[key] = _Count(self.clock(), 1)

    def __len__(self) -> int:
        return len(self._counts)


class SignInLimits:
    """Failed sign-ins counted per address and per user name; safe to share between threads."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.addresses = FailureCounts(FAILURES_PER_ADDRESS, WINDOW_S, TRACKED, clock)
        self.users = FailureCounts(FAILURES_PER_USER, WINDOW_S, TRACKED, clock)
        self._lock = threading.Lock()

    def wait_s(self, address: str, name: str) -> int:
        """Whole seconds until a sign-in from `address` as `name` is heard; 0 if it is now."""
        with self._lock:
            return math.ceil(max(self.addresses.wait(address), self.users.wait(name[:NAME_CHARS])))

    def failed(self, address: str, name: str) -> None:
        with self._lock:
            self.addresses.add(address)
            self.users.add(name[:NAME_CHARS])
