"""A read-only tree of one repository at one SHA, and the jail every path from a model goes through."""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from codeask.denylist import DenyList
from codeask.errors import ToolRefused
from codeask.pathdisplay import display_path, read_displayed
from codeask.scope import PathScope

BINARY_SNIFF = 8000  # a NUL byte in a file's first this many bytes makes it binary (as git and rg)
CHUNK = 1 << 20  # files are read in pieces this big when they are counted or streamed


def is_binary(real: Path) -> bool:
    try:
        with open(real, "rb") as f:
            return b"\x00" in f.read(BINARY_SNIFF)
    except OSError:
        return False


@dataclass(frozen=True)
class RepoRef:
    """What a snapshot is of: a name for humans, the remote URL (for permalinks), the branch."""

    name: str
    url: str
    branch: str | None = None


@dataclass(eq=False)
class Snapshot:
    """Files of one repo at `sha` under `root`; denied paths are invisible through every method,
    and so is everything outside `scope` (the part of the repo the asker's channel may read,
    which is all that was written to `root` in the first place)."""

    root: Path
    sha: str
    repo: RepoRef
    deny: DenyList = field(default_factory=DenyList)
    # Where this snapshot's definitions index lives (beside the read-only tree, never inside it);
    # None keeps it in memory (a tree that is not a materialised snapshot).
    index_path: Path | None = None
    # Each file's git blob id, when the writer of the tree knows them: an index build reuses the
    # rows of an earlier commit's unchanged files by them.
    blobs: Mapping[str, str] | None = None
    scope: PathScope = field(default_factory=PathScope)

    def __post_init__(self) -> None:
        self.root = Path(os.path.realpath(self.root))
        self._line_counts: dict[str, int] = {}
        self._large: dict[int, dict[str, int]] = {}
        self._real_dirs: dict[str, str] = {}

    @property
    def short_sha(self) -> str:
        return self.sha[:7]

    @property
    def parts(self) -> Mapping[str, Snapshot]:
        """The repositories this tree spans, by name: just this one (a workspace has several)."""
        return {self.repo.name: self}

    @functools.cached_property
    def files(self) -> tuple[str, ...]:
        """Every visible file (regular or symlink), as sorted POSIX paths relative to the root."""
        out: list[str] = []
        root = str(self.root)
        cut = len(root) + 1
        for dirpath, dirnames, filenames in os.walk(root):
            rel_dir = dirpath[cut:]
            keep = []
            for d in dirnames:
                rel = f"{rel_dir}/{d}" if rel_dir else d
                if os.path.islink(os.path.join(dirpath, d)):
                    filenames.append(d)  # listed as an entry; the jail decides if it may be read
                elif not self.deny.is_denied(rel):
                    keep.append(d)
            dirnames[:] = keep
            for f in filenames:
                rel = f"{rel_dir}/{f}" if rel_dir else f
                if not self.deny.is_denied(rel) and self.scope.admits(rel):
                    out.append(rel.replace(os.sep, "/"))
        out.sort()
        return tuple(out)

    def seed_files(self, files: tuple[str, ...]) -> None:
        """Take the listing the writer of this tree already has, sorted like `files`, over a walk."""
        self.__dict__["files"] = files

    @functools.cached_property
    def file_set(self) -> frozenset[str]:
        return frozenset(self.files)

    @functools.cached_property
    def dir_set(self) -> frozenset[str]:
        dirs: set[str] = set()
        for f in self.files:
            parts = f.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                dirs.add("/".join(parts[:i]))
        return frozenset(dirs)

    @functools.cached_property
    def by_basename(self) -> dict[str, list[str]]:
        index: dict[str, list[str]] = {}
        for f in self.files:
            index.setdefault(f.rsplit("/", 1)[-1], []).append(f)
        return index

    def large_files(self, limit: int) -> dict[str, int]:
        """Visible regular files bigger than `limit` bytes, with their sizes; worked out once per
        snapshot and limit, as a snapshot never changes."""
        found = self._large.get(limit)
        if found is None:
            found = {}
            for rel in self.files:
                try:
                    st = os.lstat(self.root / rel)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode) and st.st_size > limit:
                    found[rel] = st.st_size
            self._large[limit] = found
        return found

    def normalise(self, path: str) -> str:
        """Check a model-supplied relative path and return it normalised, or refuse it clearly.

        A path shown with escapes (`new\\nline.py`, see pathdisplay) names the file it was shown
        for; a file whose name really holds a backslash is found too; any other backslash is
        read as a Windows separator."""
        if not isinstance(path, str):
            raise ToolRefused("path must be a string")
        shown = read_displayed(path)
        if shown is not None and self._exists(shown):
            return self._normalise(shown, windows=False)
        if "\\" in path and self._exists(path):
            return self._normalise(path, windows=False)
        return self._normalise(path)

    def _exists(self, path: str) -> bool:
        try:
            rel = self._normalise(path, windows=False)
        except ToolRefused:
            return False
        return rel in self.file_set or rel in self.dir_set

    def _normalise(self, path: str, *, windows: bool = True) -> str:
        if "\x00" in path:
            raise ToolRefused("path contains a NUL byte; give a plain relative path")
        p = path.strip()
        if windows:
            p = p.replace("\\", "/")
        if p in ("", ".", "./"):
            return ""
        shown = display_path(path)
        if p.startswith("~"):
            raise ToolRefused(
                f"'{shown}': home-relative paths are not allowed; paths are relative to the repository root"
            )
        if p.startswith("/") or (len(p) > 1 and p[1] == ":"):
            raise ToolRefused(
                f"'{shown}': absolute paths are not allowed; paths are relative to the repository root"
            )
        while p.startswith("./"):
            p = p[2:]
        parts = [s for s in p.split("/") if s not in ("", ".")]
        if ".." in parts:
            raise ToolRefused(
                f"'{shown}': '..' is not allowed; paths are relative to the repository root"
            )
        rel = "/".join(parts)
        if self.deny.is_denied(rel):
            raise ToolRefused(
                f"'{display_path(rel)}' is on the deny-list of secret-shaped paths and cannot be read"
            )
        if rel and not self.in_scope(rel):
            raise ToolRefused(
                f"'{display_path(rel)}' is outside the part of {self.repo.name} this channel may read "
                f"({self.scope.describe()}); paths outside it cannot be searched, listed or read"
            )
        return rel

    def in_scope(self, rel: str) -> bool:
        """Whether `rel` is a file in scope, or a directory that may hold some."""
        return self.scope.whole or self.scope.admits(rel) or self.scope.may_hold(rel)

    def resolve(self, path: str) -> tuple[str, Path]:
        """The normalised relative path and its real location, refusing anything that escapes the root."""
        rel = self.normalise(path)
        # Worked on strings: a search resolves every file it hits, and Path objects cost more
        # than the checks themselves.
        root = str(self.root)
        target = os.path.join(root, rel) if rel else root
        real = self._realpath(target)
        if real != root and not real.startswith(root + os.sep):
            raise ToolRefused(
                f"'{display_path(rel)}' points outside the repository (a symlink) and cannot be read"
            )
        if real != target:
            # A symlink inside the tree to a denied file is still denied.
            inner = real[len(root) + 1 :]
            if inner and self.deny.is_denied(inner):
                raise ToolRefused(
                    f"'{display_path(rel)}' leads to a deny-listed path and cannot be read"
                )
            if inner and not self.in_scope(inner):
                raise ToolRefused(f"'{display_path(rel)}' leads outside what this channel may read")
        return rel, Path(real)

    def _realpath(self, target: str) -> str:
        """os.path.realpath, with each directory's worked out once: a search judges every file it
        hits, and realpath costs an lstat per component (0.2 ms of a 0.3 ms resolve). A name that
        is no symlink resolves to its resolved directory plus the name; the tree never changes."""
        parent, name = os.path.split(target)
        if not name or os.path.islink(target):
            return os.path.realpath(target)
        real_parent = self._real_dirs.get(parent)
        if real_parent is None:
            real_parent = self._real_dirs[parent] = os.path.realpath(parent)
        return os.path.join(real_parent, name)

    def link(self, rel: str, start: int | None = None, end: int | None = None) -> str | None:
        """A permalink at this snapshot's commit, for GitHub, GitLab and Bitbucket remotes."""
        from codeask.permalinks import permalink

        return permalink(self.repo.url, self.sha, rel, start, end)

    def locate(self, rel: str) -> tuple[Snapshot, str]:
        """Which snapshot holds `rel`, and its path there (a workspace answers for its repos)."""
        return self, rel

    def line_count(self, rel: str) -> int | None:
        """Lines in a file (a last line without a newline counts), or None if it is not a readable file."""
        if rel in self._line_counts:
            return self._line_counts[rel]
        n = 0
        last = b"\n"
        try:
            _, real = self.resolve(rel)
            with open(real, "rb") as f:
                while chunk := f.read(CHUNK):  # a huge file is counted in bounded memory
                    n += chunk.count(b"\n")
                    last = chunk[-1:]
        except (ToolRefused, OSError):
            return None
        n += last != b"\n"
        self._line_counts[rel] = n
        return n
