"""One writer per mirror: a thread lock within the process and an fcntl lock file across processes."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

_LOCK_POLL_MAX_S = 0.25

_guard = threading.Lock()
# fcntl locks belong to the process, so threads must also exclude each other.
_thread_locks: dict[Path, threading.Lock] = {}


def _thread_lock(mdir: Path) -> threading.Lock:
    with _guard:
        return _thread_locks.setdefault(mdir, threading.Lock())


@contextlib.contextmanager
def locked(mdir: Path, timeout_s: float) -> Iterator[bool]:
    """Hold the mirror's lock file; yields False if it stayed busy for `timeout_s`.

    fcntl.lockf works over NFS/EFS and the kernel releases it when the holder dies, so a
    killed sync never wedges the mirror.
    """
    deadline = time.monotonic() + timeout_s
    thread_lock = _thread_lock(mdir)
    if not (
        thread_lock.acquire(timeout=timeout_s) if timeout_s > 0 else thread_lock.acquire(False)
    ):
        yield False
        return
    try:
        mdir.parent.mkdir(parents=True, exist_ok=True)
        # Closing any descriptor of this file drops a process's lock, so it is opened only here.
        path = mdir.with_name(mdir.name + ".lock")
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
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
