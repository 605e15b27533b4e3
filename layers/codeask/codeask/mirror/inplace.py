"""The files libgit2 reads of a repository read in place, checked to be of a kind it can read without hanging."""

from __future__ import annotations

import os
import re
import stat
import time
from pathlib import Path

# A FIFO (or a socket, or a device) where libgit2 reads a file blocks it forever; these are
# the files it reads to open a repository, resolve its refs and list its working tree's state.
_TOP_FILES = ("HEAD", "commondir", "gitdir", "index", "config.worktree")
_COMMON_FILES = ("config", "packed-refs", "shallow", "info/exclude", "objects/info/alternates")
_PSEUDO_REF = re.compile(r"^[A-Z_]+HEAD$")
# objects/ab/: the folder of the loose objects whose ids start with ab
_FANOUT = re.compile(r"^[0-9a-f]{2}$")
_INCLUDE_SECTION = re.compile(r'(?i)^\s*\[\s*include(?:if\s+"[^"]*")?\s*\]')
_SECTION = re.compile(r"^\s*\[")
_PATH_KEY = re.compile(r"(?i)^\s*path\s*=\s*(.*)$")  # the value stripped after (no backtracking)
_SMALL_FILE = 1 << 20  # more than any .git file, commondir or alternates list holds
_REFS_MAX = 50_000  # entries of refs/** looked at; beyond, the rest are read unchecked
_DEPTH_MAX = 5  # libgit2 follows alternates and includes no deeper either
# Object folders (objects/pack, objects/ab) found to hold only regular files, by path, with the
# (device, inode, ctime) they had then: thousands of loose objects are listed once, not per question.
_clean_folders: dict[str, tuple[int, int, int]] = {}
# A ctime is a coarse clock's: a change in the same tick as the listing keeps it. So a folder
# changed this recently is listed again next time rather than remembered (as git's racy index).
_SETTLED_NS = 2_000_000_000


def fault(path: Path) -> str | None:
    """What makes the repository at `path` (work tree, bare, or worktree) unsafe to open, if
    anything: a file libgit2 would read that is not a regular file, or a folder that is not a
    folder. Only stat and small reads of regular files; nothing is written."""
    try:
        gitdir, where = _gitdir(path)
        if gitdir is None:
            return where or None
        found = _kinds(gitdir, _TOP_FILES, where) or _pseudo_refs(gitdir, where)
        if found:
            return found
        common = gitdir
        if os.path.exists(gitdir / "commondir"):  # a worktree: refs and objects are shared
            common = gitdir / _read_line(gitdir / "commondir")
            where = f"{common}/"
        return (
            _dir(common / "objects", f"{where}objects", required=False)
            or _dir(common / "refs", f"{where}refs", required=False)
            or _kinds(common, _COMMON_FILES, where)
            or _objects(common / "objects", f"{where}objects")
            or _alternates(common / "objects", where, 0)
            or _includes(common / "config", f"{where}config", 0)
            or _refs(common, where)
        )
    except OSError as exc:
        name = exc.filename if exc.filename is not None else path
        return f"{name} cannot be read ({(exc.strerror or '').lower()})"


def _gitdir(path: Path) -> tuple[Path | None, str]:
    """The git directory of `path` and the prefix faults in it are named with, or None and why."""
    dotgit = path / ".git"
    if not os.path.lexists(dotgit):
        # Bare, or no repository at all: then libgit2 says so without reading anything.
        return (path, "") if os.path.lexists(path / "HEAD") else (None, "")
    st = os.stat(dotgit)
    if stat.S_ISDIR(st.st_mode):
        return dotgit, ".git/"
    if not stat.S_ISREG(st.st_mode):
        return None, f".git is {_kind(st.st_mode)}"
    line = _read_line(dotgit)
    if not line.startswith("gitdir:"):
        return None, ".git is a file that names no git directory"
    gitdir = path / line.removeprefix("gitdir:").strip()
    found = _dir(gitdir, f"the git directory {gitdir}", required=True)
    return (None, found) if found else (gitdir, f"{gitdir}/")


def _kinds(base: Path, names: tuple[str, ...], where: str) -> str | None:
    for name in names:
        found = _file(base / name, f"{where}{name}")
        if found:
            return found
    return None


def _file(path: Path, shown: str) -> str | None:
    """None for a regular file (through symlinks) or for none at all; else what it is."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    return None if stat.S_ISREG(mode) else f"{shown} is {_kind(mode)}, not a regular file"


def _dir(path: Path, shown: str, *, required: bool) -> str | None:
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return f"{shown} is missing" if required else None
    return None if stat.S_ISDIR(mode) else f"{shown} is {_kind(mode)}, not a directory"


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISLNK(mode):
        return "a symlink"
    return "a regular file" if stat.S_ISREG(mode) else "of an unknown kind"


def _read_line(path: Path) -> str:
    """The first line of a small regular file (checked to be one before)."""
    with open(path, "rb") as f:
        return f.read(_SMALL_FILE).decode("utf-8", "replace").partition("\n")[0].strip()


def _pseudo_refs(gitdir: Path, where: str) -> str | None:
    """ORIG_HEAD, FETCH_HEAD and the like: read when a ref is resolved by their name."""
    for entry in os.scandir(gitdir):
        if _PSEUDO_REF.match(entry.name):
            found = _file(Path(entry.path), f"{where}{entry.name}")
            if found:
                return found
    return None


def _objects(objects: Path, where: str) -> str | None:
    """The object database's own files: objects/pack and each entry in it (libgit2 opens every
    index listed there), and every loose object, objects/ab/cdef…, read when its id is asked
    for. Each must be a real folder or a regular file, not a symlink: objects come from the
    repository's own folders, or from those its alternates name. One scandir per folder; the
    kinds come from the directory entries, with no stat each where the filesystem gives them."""
    if not os.path.isdir(objects):
        return None
    for entry in os.scandir(objects):
        if entry.name == "pack" or _FANOUT.match(entry.name):
            found = _real_files(entry, f"{where}/{entry.name}")
            if found:
                return found
    return None


def _real_files(folder: os.DirEntry[str], where: str) -> str | None:
    st = folder.stat(follow_symlinks=False)
    if not stat.S_ISDIR(st.st_mode):
        return f"{where} is {_kind(st.st_mode)}, not a directory"
    # Adding, removing or replacing an entry changes the folder's ctime, which no one can set
    # back; a folder seen clean with the same inode and ctime is clean still.
    seen = (st.st_dev, st.st_ino, st.st_ctime_ns)
    if _clean_folders.get(folder.path) == seen:
        return None
    for entry in os.scandir(folder.path):
        if not entry.is_file(follow_symlinks=False):
            mode = entry.stat(follow_symlinks=False).st_mode
            return f"{where}/{entry.name} is {_kind(mode)}, not a regular file"
    if time.time_ns() - st.st_ctime_ns > _SETTLED_NS:
        _clean_folders[folder.path] = seen
    return None


def _alternates(objects: Path, where: str, depth: int) -> str | None:
    """The object directories objects/info/alternates borrows from, and theirs in turn."""
    listing = objects / "info" / "alternates"
    if depth > _DEPTH_MAX or not os.path.isfile(listing):
        return None
    with open(listing, "rb") as f:
        lines = f.read(_SMALL_FILE).decode("utf-8", "replace").splitlines()
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        other = objects / line  # an absolute line replaces `objects` whole
        shown = f"the alternate object directory {other}"
        found = (
            _dir(other, shown, required=False)
            or _file(other / "info" / "alternates", f"{other}/info/alternates")
            or _objects(other, str(other))
            or _alternates(other, where, depth + 1)
        )
        if found:
            return found
    return None


def _includes(config: Path, shown: str, depth: int) -> str | None:
    """The files a config includes (include.path, includeIf.*.path), and theirs in turn; a
    missing one is skipped as git does. `~/` is the user's home, a relative path the config's
    own folder."""
    if depth > _DEPTH_MAX or not os.path.isfile(config):
        return None
    with open(config, "rb") as f:
        lines = f.read(_SMALL_FILE).decode("utf-8", "replace").splitlines()
    in_include = False
    for line in lines:
        if _SECTION.match(line):
            in_include = bool(_INCLUDE_SECTION.match(line))
            continue
        value = _PATH_KEY.match(line) if in_include else None
        if value is None:
            continue
        target = Path(value.group(1).rstrip().strip('"')).expanduser()
        target = config.parent / target  # an absolute path replaces the folder whole
        found = _file(target, f"{target}, which {shown} includes,") or _includes(
            target, str(target), depth + 1
        )
        if found:
            return found
    return None


def _refs(common: Path, where: str) -> str | None:
    """Every entry under refs/ (through symlinked folders, as libgit2 reads them): a folder or a
    regular file. One stat each, by scandir; up to _REFS_MAX entries, which also ends a loop."""
    stack, seen = [os.path.join(common, "refs")], 0
    while stack and seen <= _REFS_MAX:
        try:
            entries = list(os.scandir(stack.pop()))
        except (FileNotFoundError, NotADirectoryError):
            continue
        seen += len(entries)
        for entry in entries:
            try:
                mode = entry.stat().st_mode
            except FileNotFoundError:  # a dangling symlink: no ref, as libgit2 sees it
                continue
            if stat.S_ISDIR(mode):
                stack.append(entry.path)
            elif not stat.S_ISREG(mode):
                rel = os.path.relpath(entry.path, common)
                return f"{where}{rel} is {_kind(mode)}, not a regular file"
    return None
