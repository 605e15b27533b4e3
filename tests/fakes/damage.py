"""Damage done to a bare mirror's files, as bad luck or an attacker would, for the repair tests."""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from conftest import run_git


@dataclass(frozen=True)
class Damage:
    """One way a mirror's files go bad."""

    name: str
    apply: Callable[[Path], object]  # given the mirror's directory; what it returns is unused
    prepare: str | None = None  # "loose" (objects unpacked) or "packed-refs" (refs packed) first
    # Whether a process that opens the mirror afresh must rebuild it to answer: damage that
    # nothing a sync reads is hurt by (a garbage FETCH_HEAD, say) needs no rebuild.
    rebuilt: bool = True

    def __str__(self) -> str:
        return self.name


def git(mdir: Path, *args: str) -> str:
    return run_git("--git-dir", str(mdir), *args)


def prepare(mdir: Path, how: str | None) -> None:
    """Reshape a healthy mirror the way some damage needs it: loose objects or packed refs."""
    if how == "loose":
        packs = sorted((mdir / "objects" / "pack").glob("pack-*.pack"))
        aside = mdir.parent / f"{mdir.name}-packs"
        aside.mkdir()
        for pack in packs:
            for part in pack.parent.glob(pack.stem + ".*"):
                shutil.move(str(part), aside / part.name)
        for pack in sorted(aside.glob("*.pack")):
            with pack.open("rb") as f:
                git_in(mdir, f, "unpack-objects", "-q")
        shutil.rmtree(aside)
    elif how == "packed-refs":
        git(mdir, "pack-refs", "--all", "--prune")


def git_in(mdir: Path, stdin: IO[bytes], *args: str) -> None:
    import subprocess

    from conftest import GIT_ENV

    subprocess.run(
        ["git", "--git-dir", str(mdir), *args], stdin=stdin, env=GIT_ENV, check=True, timeout=120
    )


def pack(mdir: Path, ext: str = "pack") -> Path:
    found = sorted((mdir / "objects" / "pack").glob(f"pack-*.{ext}"))
    assert len(found) == 1, found
    return found[0]


def loose(mdir: Path, rev: str) -> Path:
    sha = git(mdir, "rev-parse", rev)
    return mdir / "objects" / sha[:2] / sha[2:]


def truncate(path: Path, size: int | None = None) -> None:
    """Replace the file by a copy cut short, as a partial copy or write leaves it. (Cut in place
    instead, a file a running process has mapped kills that process with SIGBUS on its next
    read: libgit2 maps packs into memory. The next process then rebuilds the mirror.)"""
    data = path.read_bytes()
    cut = path.with_name(path.name + ".cut")
    cut.write_bytes(data[: len(data) // 2 if size is None else size])
    os.replace(cut, path)


def flip(path: Path, at: int) -> None:
    """Flip every bit of one byte; a negative offset counts from the end."""
    os.chmod(path, 0o644)
    with path.open("r+b") as f:
        where = at if at >= 0 else path.stat().st_size + at
        f.seek(where)
        byte = f.read(1)
        f.seek(where)
        f.write(bytes([byte[0] ^ 0xFF]))


def replace(path: Path, by: str, content: bytes = b"") -> None:
    """Put something else at `path`: a file with `content`, a directory, a FIFO, a socket, or a
    symlink (dangling, or to the file named after the colon: "link:/etc/hostname")."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)
    if by == "file":
        path.write_bytes(content)
    elif by == "dir":
        path.mkdir()
        (path / "inside").write_text("x\n")
    elif by == "fifo":
        os.mkfifo(path)
    elif by == "socket":
        here = os.getcwd()
        os.chdir(path.parent)  # a socket's path must be short: bind it by its name alone
        try:
            s = socket.socket(socket.AF_UNIX)
            s.bind(path.name)
            s.close()
        finally:
            os.chdir(here)
    elif by.startswith("link:"):
        os.symlink(by[len("link:") :], path)
    else:
        raise ValueError(by)


def _ref(mdir: Path) -> Path:
    return mdir / "refs" / "heads" / "main"


def _info(mdir: Path) -> Path:
    (mdir / "objects" / "info").mkdir(exist_ok=True)
    return mdir / "objects" / "info"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _include(mdir: Path, what: str) -> None:
    """Make the config include another file: a FIFO beside it, or the path `what`."""
    if what == "fifo":
        os.mkfifo(mdir / "included")
        what = "included"
    with (mdir / "config").open("a") as f:
        f.write(f"[include]\n\tpath = {what}\n")


def _move_and_link(path: Path) -> None:
    os.rename(path, path.with_name(path.name + "-moved"))
    os.symlink(path.name + "-moved", path)


MIRROR_DAMAGE: list[Damage] = [
    # packs
    Damage("pack deleted", lambda m: os.unlink(pack(m))),
    Damage("pack truncated", lambda m: truncate(pack(m))),
    Damage("pack zero bytes", lambda m: truncate(pack(m), 0)),
    Damage("pack byte flipped mid-file", lambda m: flip(pack(m), pack(m).stat().st_size // 2)),
    Damage("pack first object header flipped", lambda m: flip(pack(m), 12)),
    Damage("pack trailing checksum flipped", lambda m: flip(pack(m), -1)),
    # pack indexes
    Damage("idx deleted", lambda m: os.unlink(pack(m, "idx"))),
    Damage("idx truncated", lambda m: truncate(pack(m, "idx"))),
    Damage("idx zero bytes", lambda m: truncate(pack(m, "idx"), 0)),
    Damage("idx fan-out flipped", lambda m: flip(pack(m, "idx"), 8 + 4 * 255)),
    Damage("idx object names flipped", lambda m: flip(pack(m, "idx"), 8 + 4 * 256 + 3)),
    # libgit2 does not check an index's own checksum: its entries still find the right objects
    Damage("idx trailing checksum flipped", lambda m: flip(pack(m, "idx"), -1), rebuilt=False),
    # loose objects
    Damage("loose commit deleted", lambda m: os.unlink(loose(m, "main")), prepare="loose"),
    Damage("loose commit zero bytes", lambda m: truncate(loose(m, "main"), 0), prepare="loose"),
    Damage("loose tree truncated", lambda m: truncate(loose(m, "main^{tree}")), prepare="loose"),
    Damage("loose blob flipped", lambda m: flip(loose(m, "main:README.md"), 5), prepare="loose"),
    Damage("loose blob deleted", lambda m: os.unlink(loose(m, "main:README.md")), prepare="loose"),
    # the branch's ref
    Damage("ref garbage", lambda m: _ref(m).write_text("garbage\n")),
    Damage("ref empty", lambda m: _ref(m).write_text("")),
    Damage("ref binary", lambda m: _ref(m).write_bytes(b"\xff\xfe\x00\x01" * 20)),
    Damage("ref names a missing commit", lambda m: _ref(m).write_text("1" * 40 + "\n")),
    Damage("ref names itself", lambda m: _ref(m).write_text("ref: refs/heads/main\n")),
    # a ref that names some other object than the remote's head: the fetch itself puts it right
    Damage(
        "ref names a blob",
        lambda m: _ref(m).write_text(git(m, "rev-parse", "main:README.md")),
        rebuilt=False,
    ),
    Damage("ref is a directory", lambda m: replace(_ref(m), "dir")),
    Damage("ref is a FIFO", lambda m: replace(_ref(m), "fifo")),
    Damage("refs/heads is a file", lambda m: replace(m / "refs" / "heads", "file", b"x\n")),
    Damage("refs deleted", lambda m: shutil.rmtree(m / "refs")),
    # packed refs
    Damage(
        "packed-refs garbage",
        lambda m: (m / "packed-refs").write_text("garbage\n"),
        prepare="packed-refs",
    ),
    Damage(  # the branch is just gone, so the fetch writes it again
        "packed-refs cut mid-line",
        lambda m: truncate(m / "packed-refs", (m / "packed-refs").stat().st_size - 20),
        prepare="packed-refs",
        rebuilt=False,
    ),
    Damage(
        "packed-refs names a missing commit",
        lambda m: (m / "packed-refs").write_text(f"{'2' * 40} refs/heads/main\n"),
        prepare="packed-refs",
    ),
    Damage("packed-refs is a FIFO", lambda m: replace(m / "packed-refs", "fifo")),
    # HEAD
    Damage("HEAD garbage", lambda m: (m / "HEAD").write_text("garbage\n")),
    Damage("HEAD empty", lambda m: (m / "HEAD").write_text("")),
    Damage("HEAD binary", lambda m: (m / "HEAD").write_bytes(b"\x00\xff" * 300)),
    Damage("HEAD deleted", lambda m: os.unlink(m / "HEAD")),
    Damage("HEAD is a directory", lambda m: replace(m / "HEAD", "dir")),
    Damage("HEAD is a FIFO", lambda m: replace(m / "HEAD", "fifo")),
    # shallow
    Damage("shallow garbage", lambda m: (m / "shallow").write_text("garbage\n")),
    Damage("shallow cut mid-line", lambda m: truncate(m / "shallow", 17)),
    Damage("shallow is a directory", lambda m: replace(m / "shallow", "dir")),
    Damage("shallow is a FIFO", lambda m: replace(m / "shallow", "fifo")),
    # config
    Damage("config garbage", lambda m: (m / "config").write_text("[[[garbage\n")),
    Damage("config deleted", lambda m: os.unlink(m / "config")),
    Damage("config says not bare", lambda m: git(m, "config", "core.bare", "false")),
    Damage(
        "config of a future format",
        lambda m: git(m, "config", "core.repositoryformatversion", "99"),
    ),
    Damage("config is a FIFO", lambda m: replace(m / "config", "fifo")),
    # folders and the mirror itself
    Damage("objects deleted", lambda m: shutil.rmtree(m / "objects")),
    Damage("objects/pack is a file", lambda m: replace(m / "objects" / "pack", "file", b"x")),
    Damage("pack index is a FIFO", lambda m: replace(pack(m, "idx"), "fifo")),
    Damage("pack is a socket", lambda m: replace(pack(m), "socket")),
    Damage("mirror is a file", lambda m: replace(m, "file", b"not a repository\n")),
    Damage("mirror is a dangling symlink", lambda m: replace(m, "link:/nonexistent/mirror")),
    Damage("mirror is a symlink elsewhere", lambda m: replace(m, f"link:{m.parent}")),
    # files that make libgit2 read elsewhere, which no mirror has (a FIFO there would hang it)
    Damage("alternates is a FIFO", lambda m: replace(_info(m) / "alternates", "fifo")),
    Damage("alternates name the root", lambda m: (_info(m) / "alternates").write_text("/\n")),
    Damage("commondir garbage", lambda m: (m / "commondir").write_text("/nonexistent\n")),
    Damage("config includes a FIFO", lambda m: _include(m, "fifo")),
    Damage("config includes a file elsewhere", lambda m: _include(m, "/etc/hostname")),
    # symlinks where a file or folder belongs
    Damage("HEAD links to /dev/zero", lambda m: replace(m / "HEAD", "link:/dev/zero")),
    Damage("ref links elsewhere", lambda m: replace(_ref(m), "link:/etc/hostname")),
    Damage("objects/pack is a symlink", lambda m: _move_and_link(m / "objects" / "pack")),
    # left over, harmless to a sync: nothing to rebuild, only the answer must be right
    Damage(
        "ref lock is a directory",
        lambda m: replace(m / "refs/heads/main.lock", "dir"),
        rebuilt=False,
    ),
    Damage(
        "tracking ref garbage",
        lambda m: _write(m / "refs" / "remotes" / "origin" / "main", "garbage\n"),
        rebuilt=False,
    ),
    Damage(
        "FETCH_HEAD garbage", lambda m: (m / "FETCH_HEAD").write_text("\x00garbage"), rebuilt=False
    ),
    Damage("description deleted", lambda m: os.unlink(m / "description"), rebuilt=False),
]
