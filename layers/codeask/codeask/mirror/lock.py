"""One writer per mirror: a thread lock within the process and an fcntl lock file across processes."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from codeask.errors import DiskFull, RepoUnavailable
from codeask.mirror.materialise import remove_tree
from codeask.mirror.space import is_full

_LOCK_POLL_MAX_S = 0.25
# O_NOFOLLOW: a symlink at the lock path is refused, never followed to a file elsewhere.
# O_NONBLOCK: a FIFO there must not hang the open; it is refused once opened.
_OPEN = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK

_guard = threading.Lock()
# fcntl locks belong to the process, so threads must also exclude each other.
_thread_locks: dict[Path, threading.Lock] = {}


def _thread_lock(mdir: Path) -> threading.Lock:
    with _guard:
        return _thread_locks.setdefault(mdir, threading.Lock())


def lock_path(mdir: Path) -> Path:
    """The lock file beside the mirror `mdir`."""
    return mdir.with_name(mdir.name + ".lock")


@contextlib.contextmanager
def locked(
    mdir: Path, timeout_s: float, on_replaced: Callable[[str], None] | None = None
) -> Iterator[bool]:
    """Hold the mirror's lock file; yields False if it stayed busy for `timeout_s`.

    fcntl.lockf works over NFS/EFS and the kernel releases it when the holder dies, so a
    killed sync never wedges the mirror. A lock path that is no usable file (a directory, a
    symlink, a FIFO, one we may not open) is moved aside and made again, and `on_replaced` is
    told why; raises RepoUnavailable if that fails too, DiskFull if no file can be made.
    """
    deadline = time.monotonic() + timeout_s
    thread_lock = _thread_lock(mdir)
    if not (
        thread_lock.acquire(timeout=timeout_s) if timeout_s > 0 else thread_lock.acquire(False)
    ):
        yield False
        return
    try:
        # Closing any descriptor of this file drops a process's lock, so it is opened only here.
        fd = _open(lock_path(mdir), on_replaced)
        try:
            if not _lockf_until(fd, deadline):
                yield False
                return
            try:
                yield True
            finally:
                fcntl.lockf(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
    finally:
        thread_lock.release()


def _open(path: Path, on_replaced: Callable[[str], None] | None) -> int:
    """A descriptor of the regular lock file at `path`, made if missing, replaced if unusable."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        if is_full(exc):
            raise DiskFull(f"no space left to make {path.parent} ({exc.strerror})") from None
        raise RepoUnavailable(f"cannot use {path.parent} for mirrors: {_why(exc)}") from None
    why = "unknown"
    for attempt in range(2):
        denied = False
        try:
            fd = os.open(path, _OPEN, 0o644)
        except OSError as exc:
            if is_full(exc):
                raise DiskFull(f"no space left to make the lock file {path}") from None
            denied = exc.errno == errno.EACCES
            if denied and attempt == 0 and _make_ours_readable(path):
                continue
            why = _why(exc)
        else:
            if stat.S_ISREG(os.fstat(fd).st_mode):
                return fd
            os.close(fd)
            why = "not a regular file"
        moved = _move_aside(path, even_a_file=denied) if attempt == 0 else False
        if moved is False:
            break
        if moved and on_replaced is not None:
            on_replaced(f"the lock path was {why}")
    raise RepoUnavailable(f"the lock file {path} cannot be used ({why}) and could not be replaced")


def _why(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "a symbolic link"
    if exc.errno == errno.EISDIR:
        return "a directory"
    return (exc.strerror or type(exc).__name__).lower()


def _make_ours_readable(path: Path) -> bool:
    """Give a lock file this user owns but may not open its permissions back."""
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            return False
        os.chmod(path, 0o644)
    except OSError:
        return False
    return True


def _move_aside(path: Path, *, even_a_file: bool) -> bool | None:
    """Rename an unusable lock path out of the way and delete it: True if done, None if another
    process did it first, False if it cannot be done."""
    if not even_a_file:
        # Another process may have replaced it a moment ago: never move a good lock file away.
        with contextlib.suppress(OSError):
            if stat.S_ISREG(os.lstat(path).st_mode):
                return None
    trash = path.with_name(f".trash-{path.name}-{uuid.uuid4().hex[:8]}")
    try:
        os.rename(path, trash)
    except FileNotFoundError:
        return None
    except OSError:
        return False
    remove_tree(trash)
    return True


def _lockf_until(fd: int, deadline: float) -> bool:
    delay = 0.01
    while True:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EAGAIN):
                raise
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(delay, left))
        delay = min(delay * 2, _LOCK_POLL_MAX_S)
