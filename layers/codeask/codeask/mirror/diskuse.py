"""How much disk snapshots take, each inode counted once: files hard-linked between snapshots are shared."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class DiskUsage:
    """Space under a snapshot root (or one snapshot), counted honestly."""

    files: int  # distinct files and symlinks (inodes), however many snapshots share them
    bytes: int  # space allocated, each inode once, directories included
    naive_bytes: int  # what adding up each snapshot's own size would claim

    def line(self) -> str:
        return (
            f"{_size(self.bytes)} on disk, {self.files:,} distinct files "
            f"({_size(self.naive_bytes)} if shared files were counted per snapshot)"
        )


def _size(n: int) -> str:
    return f"{n / 1e6:,.1f} MB" if n >= 1e6 else f"{n / 1e3:,.0f} kB"


def disk_usage(*roots: Path) -> DiskUsage:
    """Walk `roots` counting every inode once (hard links are space shared, not repeated)."""
    seen: set[tuple[int, int]] = set()
    files = size = naive = 0
    for dirpath, dirnames, filenames in (w for root in roots for w in os.walk(root)):
        for name in dirnames + filenames:
            try:
                st = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue  # removed while we walked: a prune, or a writer's temp dir
            allocated = st.st_blocks * 512
            naive += allocated
            key = (st.st_dev, st.st_ino)
            if key in seen:
                continue
            seen.add(key)
            size += allocated
            if not stat.S_ISDIR(st.st_mode):
                files += 1
    return DiskUsage(files, size, naive)
