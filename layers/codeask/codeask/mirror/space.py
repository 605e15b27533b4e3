"""Disk space under the mirror and snapshot roots: the write boundary, telling a full disk apart, what is free."""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path

import pygit2

_FULL = (errno.ENOSPC, errno.EDQUOT)
# libgit2 reports a full disk only in its message, which carries strerror's text.
_FULL_TEXT = tuple(os.strerror(e) for e in _FULL)


def is_full(exc: BaseException) -> bool:
    """Whether `exc` says a disk (or a quota, or a filesystem's inodes) ran out."""
    if isinstance(exc, OSError) and exc.errno is not None:
        return exc.errno in _FULL
    if isinstance(exc, (OSError, pygit2.GitError)):  # pygit2's OSError carries no errno
        return any(text in str(exc) for text in _FULL_TEXT)
    return False


def write(fd: int, data: memoryview) -> int:
    """Write part of a snapshot file; how many bytes went. The one place a snapshot's file bytes
    reach the disk, so that a disk filling up (tests put a small one here) is met in one place."""
    return os.write(fd, data)


def write_all(fd: int, data: bytes) -> None:
    """Write all of `data` (a blob, a manifest) through `write`, however little each call takes."""
    view = memoryview(data)
    while view:
        view = view[write(fd, view) :]


@dataclass(frozen=True)
class Free:
    """Space a write may still use on one filesystem."""

    bytes: int
    inodes: int  # a filesystem that does not count inodes reports a large number here

    def covers(self, need: Free) -> bool:
        return self.bytes >= need.bytes and self.inodes >= need.inodes


def free(path: Path) -> Free:
    """What is free on the filesystem holding `path` for an unprivileged writer."""
    st = os.statvfs(path)
    inodes = st.f_favail if st.f_files else 2**62
    return Free(st.f_bavail * st.f_frsize, inodes)


def same_disk(a: Path, b: Path) -> bool:
    """Whether two existing directories are on one filesystem (freeing one frees the other)."""
    try:
        return os.stat(a).st_dev == os.stat(b).st_dev
    except OSError:
        return False
