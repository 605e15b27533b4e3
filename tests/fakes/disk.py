"""A small disk under one folder, met at codeask's write boundary: writes past it fail with ENOSPC."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from codeask.mirror import space
from codeask.mirror.space import Free


class SmallDisk:
    """A filesystem of `capacity` bytes that holds only `root`, as a real full disk behaves: a
    write fills what is left and the next one fails with ENOSPC; removing files frees their bytes
    (once per inode, as hard links share them); free space is what statvfs would say.

    Installed at the seam every snapshot byte passes (space.write) and where codeask reads free
    space (space.free): everything else, the store, the snapshots and removing them, is real.
    """

    def __init__(self, root: Path, capacity: int) -> None:
        self.root = root.absolute()
        self.capacity = capacity
        self.refused = 0  # writes refused for want of space
        # Set when a write found more on the disk than it holds: bytes got there past the seam.
        self.overfilled = False

    def used(self) -> int:
        seen: set[int] = set()
        total = 0
        for dirpath, _dirs, files in os.walk(self.root):
            for name in files:
                try:
                    st = os.lstat(os.path.join(dirpath, name))
                except FileNotFoundError:
                    continue
                if st.st_ino not in seen:
                    seen.add(st.st_ino)
                    total += st.st_size
        return total

    def write(self, fd: int, data: memoryview) -> int:
        room = self.capacity - self.used()
        self.overfilled |= room < 0
        if room <= 0:
            self.refused += 1
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return os.write(fd, data[:room])

    def free(self, path: Path) -> Free:
        if not Path(path).absolute().is_relative_to(self.root):
            return self._real_free(path)
        return Free(max(0, self.capacity - self.used()), 1 << 40)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> SmallDisk:
        self._real_free = space.free
        monkeypatch.setattr(space, "write", self.write)
        monkeypatch.setattr(space, "free", self.free)
        return self
