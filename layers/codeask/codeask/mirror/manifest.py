"""A snapshot's manifest: each entry written (path, mode, blob, inode), so the next one links what is unchanged."""

from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path

from codeask.denylist import SNAPSHOT_MANIFEST
from codeask.mirror import space

# Inside the snapshot, so the manifest is renamed into place with the tree it describes in one step;
# the deny-list holds this name (like `.git`), so no tool ever shows it and no repo can write it.
MANIFEST_NAME = SNAPSHOT_MANIFEST
_MAGIC = "codeask-snapshot 1"

# One entry as stored: "<git file mode, octal> <blob id> <inode>". Kept as text, and parsed only
# where needed, because a manifest of 100k entries is read and written whole for each snapshot;
# a hash of the body in the header tells a whole manifest from one cut short or damaged.
# An entry parsed: (git file mode, blob id in hex, inode number on disk).
Entry = tuple[int, str, int]
# A "." or ".." part, or an empty one (two slashes, or one at either end), in a NUL-framed body.
_DOTS = re.compile(rb"\.\.?(?=[/\0])")
_EMPTY = re.compile(rb"/[/\0]")


def _climbs(body: bytes) -> bool:
    """Whether a field of a manifest's body (a path or a directory) is absolute or has an empty,
    "." or ".." part. Searched, not split: a regex alternation took half a second on 100k entries."""
    framed = b"\0" + body + b"\0"
    if b"\0/" in framed or _EMPTY.search(framed):
        return True
    return any(framed[m.start() - 1] in b"/\0" for m in _DOTS.finditer(framed))


def entry_text(mode: int, oid: str, ino: int) -> str:
    return f"{mode:06o} {oid} {ino}"


def parse_entry(text: str) -> Entry:
    mode, oid, ino = text.split(" ")
    return int(mode, 8), oid, int(ino)


@dataclass
class Manifest:
    """What one snapshot directory holds: the commit and view it was written for, its entries,
    and when each of its directories last changed.

    A directory of a published snapshot never changes (every one is read-only), so one whose
    modification time differs from the manifest's has been tampered with, or is being pruned:
    nothing in it is linked from. A snapshot directory without a readable manifest was written
    by an older codeask or is damaged: it is never linked from at all.
    """

    sha: str
    view: str  # the deny-list and scope fingerprint the snapshot was filtered with
    entries: dict[str, str] = field(default_factory=dict)  # path -> entry_text(...)
    dirs: dict[str, int] = field(default_factory=dict)  # directory ("" the root) -> mtime in ns

    def dump(self) -> bytes:
        # NUL-separated, so any file name (newlines included) survives. In the entries' own
        # order: an incremental snapshot keeps its base's, so sorting its listing costs little.
        dirs = "".join(f"{mtime}\0{d}\0" for d, mtime in sorted(self.dirs.items()))
        files = "\0".join(
            chain.from_iterable(zip(self.entries.values(), self.entries, strict=True))
        )
        body = (dirs + files + ("\0" if self.entries else "")).encode("utf-8", "surrogateescape")
        digest = hashlib.sha256(body).hexdigest()
        head = f"{_MAGIC} {self.sha} {self.view} {len(self.dirs)} {digest}\n"
        return head.encode() + body

    @classmethod
    def load(cls, data: bytes) -> Manifest | None:
        """The manifest in `data`, or None if it is not one this codeask wrote whole."""
        head, nl, body = data.partition(b"\n")
        parts = head.decode("ascii", "replace").split(" ")
        if not nl or len(parts) != 6 or " ".join(parts[:2]) != _MAGIC or not parts[4].isdigit():
            return None
        if hashlib.sha256(body).hexdigest() != parts[5]:
            return None  # cut short, or damaged
        # The hash tells damage, not a forgery: a path that would climb out of the snapshot (it
        # is linked from and written to) is never used. An entry of another shape is found where
        # it is parsed (checking all 100k here took as long as the rest of reading them).
        if _climbs(body):
            return None
        fields = body.decode("utf-8", "surrogateescape").split("\0")
        cut = 2 * int(parts[4])
        if len(fields) <= cut or len(fields) % 2 == 0:
            return None
        files = fields[cut:]
        try:
            dirs = {fields[i + 1]: int(fields[i]) for i in range(0, cut, 2)}
        except ValueError:
            return None
        return cls(parts[2], parts[3], dict(zip(files[1::2], files[0:-1:2], strict=True)), dirs)

    def write_into(self, root: Path) -> None:
        """Write the manifest inside the (not yet published) snapshot directory `root`, noting
        the root's own modification time once the manifest's name is in it."""
        path = root / MANIFEST_NAME
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o444)
        try:
            # Writing into the file does not change the directory: its time is final now.
            self.dirs[""] = os.stat(root).st_mtime_ns
            space.write_all(fd, self.dump())
        finally:
            os.close(fd)

    def note_dirs(self, root: Path, dirs: list[str]) -> None:
        """Record the modification times of `dirs` (under `root`), once nothing more goes in."""
        for d in dirs:
            self.dirs[d] = os.lstat(os.path.join(root, d)).st_mtime_ns

    def changed_dirs(self, root: Path) -> list[str]:
        """The directories ("" the root) whose modification time is not what was recorded."""
        out = []
        for d, mtime in self.dirs.items():
            try:
                if os.lstat(os.path.join(root, d)).st_mtime_ns != mtime:
                    out.append(d)
            except OSError:
                out.append(d)
        return out

    @classmethod
    def read_from(cls, root: Path) -> Manifest | None:
        """The manifest of the snapshot directory `root`, or None if it has none that is whole."""
        try:
            # Never through a symlink, never waiting on a FIFO put in its place.
            fd = os.open(root / MANIFEST_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)  # fmt: skip
        except OSError:
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            with open(fd, "rb", closefd=False) as f:
                data = f.read()
        except OSError:
            return None
        finally:
            os.close(fd)
        return cls.load(data)
