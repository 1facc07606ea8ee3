"""A lock per key: one key's holder never blocks another key, the same key's holders take turns,
and nothing is left once nobody holds or waits."""

from __future__ import annotations

import os
import threading

from tilescope.app.workbench.key_locks import KeyLocks


def test_another_key_is_not_held_up_by_a_long_holder():
    locks = KeyLocks()
    held, release = threading.Event(), threading.Event()

    def long_read():
        with locks.holding(1):
            held.set()
            release.wait(30)

    reader = threading.Thread(target=long_read)
    reader.start()
    assert held.wait(30)
    other = threading.Event()

    def other_read():
        with locks.holding(17):  # 17: what shared key 1's lock when locks were hashed 16 ways
            other.set()

    threading.Thread(target=other_read, daemon=True).start()
    got_in = other.wait(10)  # while key 1 is still held
    release.set()
    reader.join(30)
    assert got_in and len(locks) == 0


def test_the_same_key_is_held_by_one_thread_at_a_time():
    locks, inside, most = KeyLocks(), [0], [0]
    guard = threading.Lock()

    def read():
        for _ in range(200):
            with locks.holding("run"):
                with guard:
                    inside[0] += 1
                    most[0] = max(most[0], inside[0])
                with guard:
                    inside[0] -= 1

    threads = [threading.Thread(target=read) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert most[0] == 1 and len(locks) == 0


def test_a_forked_child_does_not_inherit_a_held_lock():
    locks = KeyLocks()
    with locks.holding(5):
        pid = os.fork()
        if pid == 0:  # the child: the parent's holder is not here, so key 5 is free
            acquired = threading.Event()

            def take():
                with locks.holding(5):
                    acquired.set()

            threading.Thread(target=take, daemon=True).start()
            os._exit(0 if acquired.wait(10) else 1)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
