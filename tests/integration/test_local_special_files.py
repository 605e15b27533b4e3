"""A local repository with a FIFO, socket or device where git keeps a file: a clear exit 3, never a hang."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import GitWorkTree, cli_env, run_git
from conftest import run_codeask as codeask
from conftest import tree_state as state
from fakes.damage import replace


@pytest.fixture
def work(git_repo: Callable[..., GitWorkTree]) -> GitWorkTree:
    w = git_repo("work")
    w.commit({"README.md": "hello\n", "src/app.py": "print('v1')\n"}, message="first")
    w.git("branch", "feature")
    w.git("tag", "v1")
    return w


def plant(path: Path, kind: str) -> None:
    """Put a `kind` ("fifo", "socket", "devnull") at `path`, replacing what was there."""
    replace(path, "link:/dev/null" if kind == "devnull" else kind)


def include(git: Path, section: str, target: str) -> None:
    with open(git / "config", "a") as f:
        f.write(f"{section}\n\tpath = {target}\n")


def loose_object(work: Path) -> Path:
    """One of the work tree's loose objects, .git/objects/ab/cdef…: the commit's blobs and trees."""
    return next(p for p in sorted((work / ".git/objects").glob("??/*")) if p.is_file())


# Each place: where to plant, given the work tree and tmp_path; the path to read is the work tree.
PLACES: dict[str, Callable[[Path, Path], Path]] = {
    "HEAD": lambda w, t: w / ".git/HEAD",
    "config": lambda w, t: w / ".git/config",
    "packed-refs": lambda w, t: w / ".git/packed-refs",
    "loose branch": lambda w, t: w / ".git/refs/heads/feature",
    "loose tag": lambda w, t: w / ".git/refs/tags/v1",
    "ref folder": lambda w, t: w / ".git/refs/remotes",
    "pseudo-ref": lambda w, t: w / ".git/ORIG_HEAD",
    "index": lambda w, t: w / ".git/index",
    "alternates": lambda w, t: w / ".git/objects/info/alternates",
    "pack entry": lambda w, t: w / ".git/objects/pack/pack-x.idx",
    "loose object": lambda w, t: loose_object(w),
    "info/exclude": lambda w, t: w / ".git/info/exclude",
    ".git itself": lambda w, t: w / ".git",
}


def place_with_include(work: Path, tmp: Path, how: str) -> Path:
    git = work / ".git"
    if how == "include relative":
        include(git, "[include]", "extra.cfg")
        return git / "extra.cfg"
    if how == "includeIf absolute":
        include(git, '[includeIf "gitdir:/"]', str(tmp / "elsewhere.cfg"))
        return tmp / "elsewhere.cfg"
    # An include of a regular file that itself includes the special one.
    (tmp / "middle.cfg").write_text(f"[include]\n\tpath = {tmp / 'inner.cfg'}\n")
    include(git, "[include]", str(tmp / "middle.cfg"))
    return tmp / "inner.cfg"


def assert_refused(repo: Path, tmp: Path, shown: str) -> None:
    done = codeask("tool", "list_files", "--repo", str(repo), "{}", env=cli_env(tmp))
    assert done.returncode == 3, (done.stdout, done.stderr)
    message = done.stderr.strip()
    assert "\n" not in message and "Traceback" not in message, message
    assert shown in message and "damaged" in message, message


@pytest.mark.parametrize("place", sorted(PLACES))
def test_a_fifo_where_git_reads_a_file_exits_3_and_writes_nothing(
    work: GitWorkTree, tmp_path: Path, place: str
) -> None:
    # Given a FIFO where libgit2 would read (and block forever)
    if place == "alternates":
        (work.path / ".git/objects/info").mkdir(parents=True, exist_ok=True)
    where = PLACES[place](work.path, tmp_path)
    plant(where, "fifo")
    before = state(work.path)

    # When it is read, then it is refused in one line naming the FIFO, and nothing is written
    assert_refused(work.path, tmp_path, "FIFO")
    assert state(work.path) == before


@pytest.mark.parametrize("how", ["include relative", "includeIf absolute", "nested include"])
@pytest.mark.parametrize("kind", ["fifo", "socket", "devnull"])
def test_a_config_including_a_special_file_exits_3(
    work: GitWorkTree, tmp_path: Path, how: str, kind: str
) -> None:
    plant(place_with_include(work.path, tmp_path, how), kind)
    before = state(work.path)
    assert_refused(work.path, tmp_path, "includes")
    assert state(work.path) == before


@pytest.mark.parametrize("kind", ["socket", "devnull"])
@pytest.mark.parametrize("place", ["loose branch", "alternates", "packed-refs", "HEAD"])
def test_a_socket_or_device_where_git_reads_a_file_exits_3(
    work: GitWorkTree, tmp_path: Path, place: str, kind: str
) -> None:
    if place == "alternates":
        (work.path / ".git/objects/info").mkdir(parents=True, exist_ok=True)
    plant(PLACES[place](work.path, tmp_path), kind)
    assert_refused(work.path, tmp_path, "a socket" if kind == "socket" else "a device")


@pytest.mark.parametrize("file", ["commondir", "gitdir", "HEAD", ".git file"])
def test_a_fifo_in_a_worktrees_git_files_exits_3(
    work: GitWorkTree, tmp_path: Path, file: str
) -> None:
    # Given a second worktree, whose git files live in the main repository's .git/worktrees
    wt = tmp_path / "wt"
    work.git("worktree", "add", "-q", "-b", "other", str(wt))
    where = wt / ".git" if file == ".git file" else work.path / ".git/worktrees/wt" / file
    plant(where, "fifo")
    assert_refused(wt, tmp_path, "FIFO")


def test_a_fifo_in_the_alternates_of_an_alternate_exits_3(
    work: GitWorkTree, tmp_path: Path
) -> None:
    # Given a clone borrowing the objects of a repository that itself names a FIFO as alternates
    clone = tmp_path / "borrower"
    run_git("clone", "-q", "--shared", work.path, clone)
    plant(work.path / ".git/objects/info/alternates", "fifo")
    assert_refused(clone, tmp_path, "FIFO")


def test_a_symlink_to_a_regular_file_is_still_read(work: GitWorkTree, tmp_path: Path) -> None:
    # Given a config include and a branch that are symlinks to regular files
    (tmp_path / "real.cfg").write_text("[core]\n\tabbrev = 9\n")
    include(work.path / ".git", "[include]", "linked.cfg")
    (work.path / ".git/linked.cfg").symlink_to(tmp_path / "real.cfg")
    ref = work.path / ".git/refs/heads/feature"
    (tmp_path / "feature.ref").write_text(ref.read_text())
    ref.unlink()
    ref.symlink_to(tmp_path / "feature.ref")

    # When it is read, then it is read as before
    done = codeask("tool", "list_files", "--repo", str(work.path), "{}", env=cli_env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "README.md" in done.stdout.split() and "src/app.py" in done.stdout.split()


def test_a_fifo_in_a_symlinked_ref_folder_exits_3(work: GitWorkTree, tmp_path: Path) -> None:
    # Given a folder of branches that is a symlink to a folder elsewhere holding a FIFO
    team = tmp_path / "team-refs"
    team.mkdir()
    (work.path / ".git/refs/heads/team").symlink_to(team)
    plant(team / "topic", "fifo")
    assert_refused(work.path, tmp_path, "refs/heads/team/topic is a FIFO")


@pytest.mark.parametrize(
    "what", ["loose object", "loose object folder", "pack folder", "pack file"]
)
def test_a_symlinked_object_file_or_folder_exits_3(
    work: GitWorkTree, tmp_path: Path, what: str
) -> None:
    # Given a hostile repository whose objects, or the folders that hold them, are symlinks to
    # copies outside it (which libgit2 would read as the repository's own)
    objects = work.path / ".git/objects"
    if what.startswith("pack"):
        work.git("repack", "-a", "-d", "-q")
    if what == "pack folder":
        target = objects / "pack"
    elif what == "pack file":
        target = next((objects / "pack").glob("pack-*.pack"))
    elif what == "loose object folder":
        target = loose_object(work.path).parent
    else:
        target = loose_object(work.path)
    outside = tmp_path / "outside" / target.name
    outside.parent.mkdir()
    target.rename(outside)
    target.symlink_to(outside)
    before = state(work.path)

    # When it is read, then it is refused in one line naming the symlink, and nothing is written
    shown = f".git/objects/{target.relative_to(objects)} is a symlink"
    assert_refused(work.path, tmp_path, shown)
    assert state(work.path) == before


def test_loose_objects_and_packs_in_real_folders_are_read(
    work: GitWorkTree, tmp_path: Path
) -> None:
    # Given a repository with both loose objects and a pack (a second commit after a repack)
    work.git("repack", "-a", "-d", "-q")
    work.commit({"src/app.py": "print('v2')\n"}, message="second")
    assert loose_object(work.path).is_file() and any((work.path / ".git/objects/pack").iterdir())

    # When it is read, then every file is there
    done = codeask("tool", "read_file", "--repo", str(work.path), '{"path": "src/app.py"}',
                   env=cli_env(tmp_path))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "print('v2')" in done.stdout
