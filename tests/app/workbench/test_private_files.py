"""Cache directories only the server's user may use: made 0700 with files 0600, narrowed when an
older tilescope left them open, and refused, in one line, when another user could have put
something in them."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from tilescope.app.workbench.private_files import NotPrivate, make_private, open_private, private_key

NOBODY = 65534


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _others(path: Path) -> None:
    """Give `path` to another user (only root may)."""
    if os.geteuid() != 0:
        pytest.skip("only root can give a file to another user")
    os.chown(path, NOBODY, NOBODY, follow_symlinks=False)


def test_a_new_cache_directory_and_its_missing_parents_are_0700(tmp_path):
    cache = tmp_path / "home" / ".cache" / "tilescope"
    assert make_private(cache) is False
    assert _mode(cache) == _mode(cache.parent) == _mode(cache.parent.parent) == 0o700
    assert make_private(cache) is False  # as it was


def test_an_open_directory_of_this_users_is_narrowed_with_what_it_holds(tmp_path):
    """An older tilescope made its caches 0755 with files 0644 (the umask's)."""
    cache = tmp_path / "jobs"
    (cache / "ab").mkdir(parents=True)
    (cache / "ab" / "result.val").write_bytes(b"x")
    (cache / "cache.db").write_bytes(b"x")
    modes = {cache: 0o755, cache / "ab": 0o775, cache / "cache.db": 0o644, cache / "ab" / "result.val": 0o666}
    for path, mode in modes.items():
        path.chmod(mode)
    assert make_private(cache, entries=True) is True  # what it held may be known to others
    assert [_mode(p) for p in (cache, cache / "ab", cache / "cache.db", cache / "ab" / "result.val")] == [
        0o700,
        0o700,
        0o600,
        0o600,
    ]
    assert make_private(cache, entries=True) is False


def test_what_others_could_not_reach_was_not_open(tmp_path):
    """diskcache makes the directories of its large values with the umask's 0755, inside a cache
    that is 0700: nobody else could reach them or their files, so the cache was never open."""
    cache = tmp_path / "jobs"
    (cache / "ab" / "cd").mkdir(parents=True)
    (cache / "ab" / "cd" / "result.val").write_bytes(b"x")
    modes = {cache: 0o700, cache / "ab": 0o755, cache / "ab" / "cd": 0o755, cache / "ab" / "cd" / "result.val": 0o644}
    for path, mode in modes.items():
        path.chmod(mode)
    assert make_private(cache, entries=True) is False
    assert [_mode(path) for path in modes] == [0o700, 0o700, 0o700, 0o600]  # narrowed all the same


def test_another_users_directory_is_refused_in_one_line(tmp_path):
    cache = tmp_path / "tilescope"
    cache.mkdir()
    cache.chmod(0o755)
    _others(cache)
    with pytest.raises(NotPrivate, match=r"^\S+/tilescope: owned by uid \d+, not this user \(uid \d+\)$"):
        make_private(cache)
    assert _mode(cache) == 0o755  # not narrowed: not ours to change


def test_a_directory_holding_another_users_file_is_refused(tmp_path):
    cache = tmp_path / "compilations"
    cache.mkdir()
    planted = cache / "0123.pickle"
    planted.write_bytes(b"x")
    _others(planted)
    with pytest.raises(NotPrivate, match=r"0123\.pickle: owned by uid"):
        make_private(cache, entries=True)


def test_a_link_in_the_place_of_the_directory_or_in_it_is_refused(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "tilescope").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(NotPrivate, match=r"tilescope: a link$"):
        make_private(tmp_path / "tilescope")
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "cache.db").symlink_to("/etc/passwd")
    with pytest.raises(NotPrivate, match=r"cache\.db: a link$"):
        make_private(tmp_path / "jobs", entries=True)
    with pytest.raises(NotPrivate, match=r"cache\.db: a link$"):
        open_private(tmp_path / "jobs" / "cache.db")


@pytest.mark.parametrize("mode", [0o777, 0o757])
def test_a_directory_above_that_others_may_write_in_is_refused(tmp_path, mode):
    """Whoever may write in a directory above the cache may rename the cache and put their own in
    its place."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(mode)
    with pytest.raises(NotPrivate, match=r"shared: other users may write in it, so not private to this user$"):
        make_private(shared / "tilescope")
    assert not (shared / "tilescope").exists()


def test_under_a_directory_all_may_write_in_with_the_sticky_bit_it_is_made(tmp_path):
    """/tmp: the sticky bit keeps others from renaming or removing what is not theirs."""
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    make_private(shared / "cache" / "tilescope")
    assert _mode(shared / "cache" / "tilescope") == 0o700


def test_a_file_system_that_refuses_is_one_line(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(NotPrivate, match=r"^\S+/file/tilescope: Not a directory$"):
        make_private(tmp_path / "file" / "tilescope")


def test_a_file_others_may_read_is_not_opened(tmp_path):
    path = tmp_path / "k.pickle"
    path.write_bytes(b"x")
    path.chmod(0o644)
    with pytest.raises(NotPrivate, match=r"k\.pickle: readable or writable by others$"):
        open_private(path)
    path.chmod(0o600)
    os.close(open_private(path))


def test_processes_asking_for_a_key_at_once_get_the_same_one(tmp_path):
    at_once = threading.Barrier(8)
    keys = []

    def ask():
        at_once.wait()
        keys.append(private_key(tmp_path / "key"))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(keys) == 8 and len(set(keys)) == 1 and len(keys[0]) == 32
    assert [p.name for p in tmp_path.iterdir()] == ["key"] and _mode(tmp_path / "key") == 0o600
