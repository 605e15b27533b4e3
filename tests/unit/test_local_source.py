"""Local repositories read in place: which commit, what is left out, and nothing written into them."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from codeask.denylist import DenyList
from codeask.errors import BadInput
from codeask.mirror import LocalSource, MirrorStore, RepoSpec, inplace
from conftest import GitWorkTree, run_git
from conftest import tree_state as state


@pytest.fixture
def store(tmp_path: Path) -> MirrorStore:
    return MirrorStore(tmp_path / "mirrors", tmp_path / "snapshots", DenyList())


@pytest.fixture
def work(git_repo: Callable[..., GitWorkTree]) -> GitWorkTree:
    w = git_repo("work")
    w.commit({"README.md": "hello\n", "src/app.py": "print('v1')\n"}, message="first")
    w.commit({"src/app.py": "print('v2')\n"}, message="second")
    return w


def test_a_work_tree_is_read_in_place_at_its_head(store: MirrorStore, work: GitWorkTree) -> None:
    # Given a work tree with two commits
    spec = RepoSpec.parse(str(work.path))

    # When synced
    result = store.sync(spec)

    # Then the snapshot is HEAD's branch at its commit, and no mirror was made of it
    assert (result.sha, result.branch, result.fetched) == (work.head(), "main", False)
    assert (result.snapshot.root / "src/app.py").read_text() == "print('v2')\n"
    assert result.uncommitted is None
    assert not store.mirror_root.exists()
    assert isinstance(store.source(spec), LocalSource)


def test_a_question_writes_nothing_into_the_repository(
    store: MirrorStore, work: GitWorkTree
) -> None:
    # Given a work tree with a tag, another branch, and an uncommitted change
    old = work.git("rev-parse", "HEAD~1")
    work.git("tag", "v1", old)
    work.git("branch", "feature", old)
    (work.path / "README.md").write_text("edited\n")
    before = state(work.path)
    spec = RepoSpec.parse(str(work.path))

    # When every kind of read is made of it
    store.sync(spec)
    store.sync(RepoSpec.parse(str(work.path), branch="v1"))
    store.sync(RepoSpec.parse(str(work.path), branch="feature"))
    store.snapshot_at(spec, old[:8])
    store.fetch_commit(spec, old)
    store.warm(spec)

    # Then no file under it (the index, refs, config, locks) was created, removed or touched
    assert state(work.path) == before


def test_a_new_commit_is_read_by_the_next_question_in_the_same_process(
    store: MirrorStore, work: GitWorkTree
) -> None:
    # Given a repository already read once
    spec = RepoSpec.parse(str(work.path))
    first = store.sync(spec)

    # When a commit lands, and then the repository is repacked, between questions
    sha = work.commit({"new.py": "x = 1\n"})
    second = store.sync(spec)
    work.git("gc", "-q", "--prune=now")
    third = store.sync(spec)

    # Then each question reads the commit the branch is at now
    assert first.sha != sha and second.sha == third.sha == sha
    assert "new.py" in second.snapshot.files


def test_uncommitted_changes_are_counted_and_said_to_be_left_out(
    store: MirrorStore, work: GitWorkTree
) -> None:
    # Given a work tree with a modified file, a staged new file and an untracked one
    (work.path / "src/app.py").write_text("print('dirty')\n")
    (work.path / "staged.py").write_text("s = 1\n")
    work.git("add", "staged.py")
    (work.path / "scratch.txt").write_text("notes\n")
    (work.path / ".gitignore").write_text("")  # untracked too

    # When synced
    result = store.sync(RepoSpec.parse(str(work.path)))

    # Then the committed state is read, and the note says what it leaves out
    assert (result.snapshot.root / "src/app.py").read_text() == "print('v2')\n"
    assert "staged.py" not in result.snapshot.files
    note = result.uncommitted
    assert note is not None and (note.changed, note.untracked, note.sha) == (2, 2, work.head())
    assert note.message() == (
        f"work: uncommitted changes in the working tree (2 changed files, 2 untracked) are not "
        f"included; this reads commit {work.head()[:7]}"
    )


def test_ignored_files_are_not_uncommitted_changes(store: MirrorStore, work: GitWorkTree) -> None:
    # Given a build directory the repository ignores
    work.commit({".gitignore": "build/\n"})
    (work.path / "build").mkdir()
    (work.path / "build" / "out.o").write_text("obj\n")

    # When synced  Then nothing is said to be left out
    assert store.sync(RepoSpec.parse(str(work.path))).uncommitted is None


def test_reading_another_ref_than_head_says_nothing_of_the_working_tree(
    store: MirrorStore, work: GitWorkTree
) -> None:
    # Given a dirty work tree and a tag on an older commit
    old = work.git("rev-parse", "HEAD~1")
    work.git("tag", "-a", "v1.0", "-m", "release", old)
    (work.path / "README.md").write_text("edited\n")

    # When the tag is read
    result = store.sync(RepoSpec.parse(str(work.path), branch="v1.0"))

    # Then the annotated tag's commit is read, and the working tree is not its business
    assert (result.sha, result.branch, result.uncommitted) == (old, "tags/v1.0", None)


def test_named_branches_tags_and_remote_only_branches(
    store: MirrorStore, work: GitWorkTree, tmp_path: Path
) -> None:
    # Given a clone that has a branch only as origin/release, and a local branch and tag
    work.git("branch", "release", "HEAD~1")
    clone = tmp_path / "clone"
    run_git("clone", "-q", work.path, clone)
    run_git("branch", "topic", "HEAD~1", cwd=clone)
    run_git("tag", "light", "HEAD~1", cwd=clone)
    older = work.git("rev-parse", "HEAD~1")

    # When each is asked for by name
    read = {
        b: store.sync(RepoSpec.parse(str(clone), branch=b)) for b in ("topic", "light", "release")
    }

    # Then each resolves to its commit, labelled as what it is
    assert {b: (r.branch, r.sha) for b, r in read.items()} == {
        "topic": ("topic", older),
        "light": ("tags/light", older),
        "release": ("origin/release", older),
    }

    # And an unknown name is bad input naming what exists, closest first
    with pytest.raises(BadInput, match=r"'topc'.*include: topic, main"):
        store.sync(RepoSpec.parse(str(clone), branch="topc"))


def test_a_bare_repository_is_read_at_its_head_branch(
    store: MirrorStore, work: GitWorkTree, tmp_path: Path
) -> None:
    # Given a bare clone
    bare = tmp_path / "bare.git"
    run_git("clone", "-q", "--bare", work.path, bare)

    # When synced
    result = store.sync(RepoSpec.parse(str(bare)))

    # Then it reads main's commit, with nothing said about a working tree it does not have
    assert (result.branch, result.sha, result.uncommitted) == ("main", work.head(), None)


@pytest.mark.parametrize("bare", [False, True])
def test_a_head_naming_a_branch_that_does_not_exist_is_refused_unless_a_branch_is_named(
    store: MirrorStore, work: GitWorkTree, tmp_path: Path, bare: bool
) -> None:
    # Given a repository (a work tree, or a bare one made with master and pushed main) whose
    # HEAD names a branch it does not have, beside main and another branch
    older = work.git("rev-parse", "HEAD~1")
    work.git("branch", "feature", older)
    path = work.path
    if bare:
        path = tmp_path / "odd.git"
        run_git("clone", "-q", "--bare", work.path, path)
    run_git("symbolic-ref", "HEAD", "refs/heads/gone", cwd=path)

    # When synced without a branch, it fails naming the missing branch and what exists
    with pytest.raises(BadInput, match=r"no commits on branch 'gone'.*include: feature, main"):
        store.sync(RepoSpec.parse(path.as_uri()))

    # And a branch named in the spec is read as usual
    named = store.sync(RepoSpec.parse(str(path), branch="feature"))
    assert (named.branch, named.sha) == ("feature", older)


def test_an_empty_repository_is_bad_input(
    store: MirrorStore, git_repo: Callable[..., GitWorkTree]
) -> None:
    empty = git_repo("empty")
    with pytest.raises(BadInput, match="no commits"):
        store.sync(RepoSpec.parse(str(empty.path)))


def test_a_worktree_reads_its_own_branch_and_its_own_changes(
    store: MirrorStore, work: GitWorkTree, tmp_path: Path
) -> None:
    # Given a second worktree on a new branch with a commit and an edit of its own
    wt = tmp_path / "wt"
    work.git("worktree", "add", "-q", "-b", "feature", str(wt))
    run_git("commit", "-q", "--allow-empty", "-m", "on feature", cwd=wt)
    feature = run_git("rev-parse", "HEAD", cwd=wt)
    (wt / "README.md").write_text("edited in the worktree\n")
    before = state(work.path)

    # When the worktree and the main work tree are read
    in_wt = store.sync(RepoSpec.parse(str(wt)))
    in_main = store.sync(RepoSpec.parse(str(work.path)))

    # Then each reads its own HEAD, and only the worktree's edit is noted
    assert (in_wt.branch, in_wt.sha) == ("feature", feature)
    assert in_wt.uncommitted is not None and in_wt.uncommitted.changed == 1
    assert (in_main.branch, in_main.sha, in_main.uncommitted) == ("main", work.head(), None)
    assert state(work.path) == before


@pytest.mark.parametrize("how", ["--shared", "--reference"])
def test_a_clone_borrowing_objects_through_alternates_is_read(
    store: MirrorStore, work: GitWorkTree, tmp_path: Path, how: str
) -> None:
    # Given a clone whose objects live in the repository it was cloned from
    clone = tmp_path / "borrower"
    args = [how] if how == "--shared" else [how, str(work.path)]
    run_git("clone", "-q", *args, work.path, clone)
    assert (clone / ".git/objects/info/alternates").is_file()
    run_git("commit", "-q", "--allow-empty", "-m", "own commit", cwd=clone)
    sha = run_git("rev-parse", "HEAD", cwd=clone)

    # When it is read
    result = store.sync(RepoSpec.parse(str(clone)))

    # Then its commit and the borrowed files are there
    assert result.sha == sha
    assert (result.snapshot.root / "src/app.py").read_text() == "print('v2')\n"


def test_a_detached_head_is_read_and_labelled_so(store: MirrorStore, work: GitWorkTree) -> None:
    # Given a work tree whose HEAD is detached at the first commit
    old = work.git("rev-parse", "HEAD~1")
    work.git("checkout", "-q", "--detach", old)

    # When synced
    result = store.sync(RepoSpec.parse(str(work.path)))

    # Then that commit is read and shown as a detached HEAD
    assert (result.sha, result.branch) == (old, "detached HEAD")
    assert (result.snapshot.root / "src/app.py").read_text() == "print('v1')\n"


def test_any_commit_in_the_history_is_read_by_full_or_short_sha(
    store: MirrorStore, work: GitWorkTree
) -> None:
    # Given a repository never read before, and its first commit
    spec = RepoSpec.parse(str(work.path))
    old = work.git("rev-parse", "HEAD~1")

    # When a thread pinned to it follows up, or a question names it
    pinned = store.snapshot_at(spec, old[:7])
    named = store.fetch_commit(spec, old)

    # Then that commit is read from the repository's own objects, shown under HEAD's branch
    assert pinned.sha == named.sha == old
    assert pinned.repo.branch == "main"
    assert (pinned.root / "src/app.py").read_text() == "print('v1')\n"

    # And a commit it does not hold is bad input
    with pytest.raises(BadInput, match="is not in"):
        store.snapshot_at(spec, "0" * 40)


def test_a_local_repository_is_always_as_current_as_itself(
    store: MirrorStore, work: GitWorkTree
) -> None:
    synced = store.last_synced_at(RepoSpec.parse(str(work.path)))
    assert synced is not None and datetime.now(UTC) - synced < timedelta(minutes=1)


def test_an_object_folder_seen_clean_is_checked_again_once_it_changes(
    work: GitWorkTree, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a repository whose object folders were found clean (and are remembered so, though
    # they changed just now)
    monkeypatch.setattr(inplace, "_SETTLED_NS", -(10**12))
    assert inplace.fault(work.path) is None
    assert any(p.startswith(str(work.path)) for p in inplace._clean_folders)
    loose = next(p for p in sorted((work.path / ".git/objects").glob("??/*")) if p.is_file())
    folder_times = os.stat(loose.parent)

    # When a loose object is then swapped for a symlink, its folder's mtime set back as it was
    outside = tmp_path / loose.name
    loose.rename(outside)
    loose.symlink_to(outside)
    os.utime(loose.parent, ns=(folder_times.st_atime_ns, folder_times.st_mtime_ns))

    # Then the next check finds it
    found = inplace.fault(work.path)
    assert (
        found == f".git/objects/{loose.parent.name}/{loose.name} is a symlink, not a regular file"
    )
