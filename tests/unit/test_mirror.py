"""Mirror and snapshot behaviour: syncing, following the remote, staleness, locking, deny-list."""

from __future__ import annotations

import multiprocessing
import os
import re
import signal
import socket
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pygit2
import pytest

from codeask.denylist import DenyList
from codeask.errors import BadInput, RepoUnavailable, ToolRefused
from codeask.mirror import MirrorStore, RepoSpec, StaleNote, SyncResult
from codeask.settings import Settings
from codeask.snapshot import Snapshot
from conftest import GitDaemon, GitWorkTree, free_port, run_git

# Forking keeps children cheap and lets them share test-local callables; CI is Linux.
FORK = multiprocessing.get_context("fork")
WAIT_S = 90.0  # generous: a loaded 2-core CI box can be slow to start processes


# ---- helpers --------------------------------------------------------------------------------


@dataclass
class Upstream:
    """A repository tests change with git, reachable by the mirror at `url`."""

    work: GitWorkTree
    url: str
    publish: Callable[[], object]
    transport: str

    def commit(self, files: dict[str, str] | None = None, **kwargs: Any) -> str:
        sha = self.work.commit(files, **kwargs)
        self.publish()
        return sha

    def rewrite(self, files: dict[str, str]) -> str:
        sha = self.work.rewrite(files)
        self.publish()
        return sha


def make_upstream(
    transport: str,
    work: GitWorkTree,
    tmp_path: Path,
    daemon: GitDaemon | None = None,
) -> Upstream:
    if transport == "path":
        return Upstream(work, str(work.path), lambda: None, transport)
    if transport == "file":
        bare = tmp_path / "upstream-bare.git"
        run_git("clone", "-q", "--bare", work.path, bare)
        push = lambda: run_git("push", "-q", "--force", "--all", bare, cwd=work.path)  # noqa: E731
        return Upstream(work, bare.as_uri(), push, transport)
    assert daemon is not None
    url = daemon.publish(work, "upstream.git")
    return Upstream(work, url, lambda: daemon.publish(work, "upstream.git"), transport)


def files_on_disk(root: Path) -> set[str]:
    """Every path that physically exists under root (files, links, dirs), relative, POSIX."""
    out: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            out.add(os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/"))
    return out


def snapshot_dirs(store: MirrorStore, spec: RepoSpec) -> set[str]:
    """Everything in the repo's snapshot folder but the completion markers, which must each
    belong to a snapshot there."""
    repo_dir = store.snapshot_dir(spec)
    names = {p.name for p in repo_dir.iterdir()} if repo_dir.exists() else set()
    markers = {n for n in names if n.endswith(".complete")}
    rest = names - markers
    assert {m.removesuffix(".complete") for m in markers} <= rest, f"markers left: {markers}"
    return rest


def age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


@pytest.fixture
def store(tmp_path: Path) -> MirrorStore:
    return MirrorStore(
        tmp_path / "mirrors", tmp_path / "snapshots", DenyList(("secrets",)), lock_timeout_s=WAIT_S
    )


@pytest.fixture
def work(git_repo: Callable[..., GitWorkTree]) -> GitWorkTree:
    w = git_repo("work")
    w.commit({"README.md": "hello\n", "src/app.py": "print('v1')\n"}, message="first")
    return w


@pytest.fixture(params=["path", "file", "git"])
def upstream(request: pytest.FixtureRequest, work: GitWorkTree, tmp_path: Path) -> Upstream:
    daemon = request.getfixturevalue("git_daemon") if request.param == "git" else None
    return make_upstream(request.param, work, tmp_path, daemon)


@pytest.fixture
def served(work: GitWorkTree, tmp_path: Path, git_daemon: GitDaemon) -> Upstream:
    return make_upstream("git", work, tmp_path, git_daemon)


# ---- RepoSpec.parse -------------------------------------------------------------------------


def test_parse_absolute_and_relative_local_paths(
    work: GitWorkTree, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a work tree and a bare repository on disk
    bare = tmp_path / "billing.git"
    run_git("clone", "-q", "--bare", work.path, bare)
    monkeypatch.chdir(tmp_path)

    # When they are parsed by absolute and relative path
    by_abs = RepoSpec.parse(str(work.path))
    by_rel = RepoSpec.parse("work")
    by_bare = RepoSpec.parse("./billing.git", branch="main")

    # Then each becomes an absolute path with a derived name
    assert by_abs == by_rel == RepoSpec(name="work", url=str(work.path.resolve()))
    assert by_bare == RepoSpec(name="billing", url=str(bare.resolve()), branch="main")


@pytest.mark.parametrize(
    ("value", "name"),
    [
        ("https://github.com/acme/billing.git", "billing"),
        ("http://git.internal/acme/billing/", "billing"),
        ("ssh://git@git.internal:2222/acme/billing.git", "billing"),
        ("git://127.0.0.1:9418/billing.git", "billing"),
        ("git@github.com:acme/billing.git", "billing"),
        ("github.com:acme/billing", "billing"),
    ],
)
def test_parse_remote_urls_and_scp_like(value: str, name: str) -> None:
    # Given a remote location  When parsed  Then it is kept as the URL with a derived name
    spec = RepoSpec.parse(value)
    assert spec == RepoSpec(name=name, url=value)


def test_parse_file_url_name_and_branch_overrides(work: GitWorkTree) -> None:
    # Given a file:// URL, an explicit name and a fully qualified branch
    spec = RepoSpec.parse(work.path.as_uri(), branch="refs/heads/dev", name=" payments ")

    # Then the URL is kept, the name is used and the branch is short
    assert spec == RepoSpec(name="payments", url=work.path.as_uri(), branch="dev")


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("", "no repository"),
        ("   ", "no repository"),
        ("no such repo here", "not an existing local path"),
        ("./missing/dir", "not an existing local path"),
        ("ftp://host/acme/billing.git", "unsupported URL scheme"),
        ("https://", "no host"),
        ("https:///acme/billing.git", "no host"),
        ("https://github.com", "no repository path"),
        ("https://github.com:notaport/acme/x.git", "not a valid URL"),
        ("git@github.com:/", "no repository path"),
        ("file:///definitely/not/here.git", "not an existing local path"),
    ],
)
def test_parse_rejects_junk_with_a_clear_message(value: str, says: str) -> None:
    # Given junk  When parsed  Then BadInput says what is wrong
    with pytest.raises(BadInput, match=says):
        RepoSpec.parse(value)


def test_parse_rejects_a_directory_that_is_not_a_repository(tmp_path: Path) -> None:
    # Given a plain directory
    plain = tmp_path / "plain"
    plain.mkdir()

    # When parsed  Then BadInput says it is not a git repository
    with pytest.raises(BadInput, match="not a git repository"):
        RepoSpec.parse(str(plain))


def test_parse_rejects_invalid_branch_names_and_empty_names() -> None:
    with pytest.raises(BadInput, match="not a valid branch name"):
        RepoSpec.parse("https://github.com/acme/billing.git", branch="bad..name")
    with pytest.raises(BadInput, match="name must not be empty"):
        RepoSpec.parse("https://github.com/acme/billing.git", name="  ")


def test_ref_carries_branch_and_never_credentials() -> None:
    # Given a URL with a token in it
    spec = RepoSpec.parse("https://x-access-token:s3cret@github.com/acme/billing.git")

    # When turned into a RepoRef for permalinks
    ref = spec.ref("main")

    # Then the token is gone and the resolved branch is kept
    assert ref.url == "https://***@github.com/acme/billing.git"
    assert (ref.name, ref.branch) == ("billing", "main")


def test_stale_note_message_shape() -> None:
    note = StaleNote("abcdef0123456789", datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC), "refused")
    assert note.message() == "may be stale — as of abcdef0, 2024-05-06 07:08 UTC (refused)"


# ---- syncing --------------------------------------------------------------------------------


def test_first_sync_gives_a_snapshot_of_the_head(store: MirrorStore, upstream: Upstream) -> None:
    # Given a repository with two files
    spec = RepoSpec.parse(upstream.url)

    # When synced for the first time
    result = store.sync(spec)

    # Then the snapshot holds exactly those files at the upstream head
    assert isinstance(result, SyncResult)
    assert result.sha == upstream.work.head() == result.snapshot.sha
    assert (result.branch, result.stale) == ("main", None)
    assert result.snapshot.files == ("README.md", "src/app.py")
    assert (result.snapshot.root / "src/app.py").read_text() == "print('v1')\n"
    assert result.snapshot.repo.branch == "main"
    # And a remote was fetched into its mirror, while a local repository was read in place
    if upstream.transport == "git":
        assert result.fetched
        assert {"remote_head", "fetch", "snapshot", "total"} <= result.timings_ms.keys()
    else:
        assert not result.fetched and not store.mirror_root.exists()
        assert {"resolve", "snapshot", "total"} <= result.timings_ms.keys()


def test_unchanged_remote_is_not_fetched_again(store: MirrorStore, upstream: Upstream) -> None:
    # Given a synced repository
    spec = RepoSpec.parse(upstream.url)
    first = store.sync(spec)

    # When synced again with nothing new upstream
    second = store.sync(spec)

    # Then nothing is fetched and the same snapshot directory is reused
    assert second.fetched is False
    assert second.sha == first.sha
    assert second.snapshot.root == first.snapshot.root
    assert "fetch" not in second.timings_ms

    # And a new store in the same (warm Lambda) process reuses the snapshot and its file list
    again = MirrorStore(store.mirror_root, store.snapshot_root, store.deny).sync(spec)
    assert again.snapshot is first.snapshot


def test_new_commit_gives_a_new_snapshot_and_leaves_the_old_one(
    store: MirrorStore, upstream: Upstream
) -> None:
    # Given a synced repository
    spec = RepoSpec.parse(upstream.url)
    old = store.sync(spec)
    old_files = files_on_disk(old.snapshot.root)

    # When a commit lands upstream and we sync
    sha = upstream.commit({"src/app.py": "print('v2')\n", "docs/new.md": "new\n"})
    new = store.sync(spec)

    # Then it is read into a new snapshot (fetched, if remote) while the old one is untouched
    assert (new.fetched, new.sha) == (upstream.transport == "git", sha)
    assert new.snapshot.root != old.snapshot.root
    assert (new.snapshot.root / "src/app.py").read_text() == "print('v2')\n"
    assert "docs/new.md" in new.snapshot.files
    assert files_on_disk(old.snapshot.root) == old_files
    assert (old.snapshot.root / "src/app.py").read_text() == "print('v1')\n"


def test_force_push_is_followed(store: MirrorStore, upstream: Upstream) -> None:
    # Given a synced repository with a commit on top
    spec = RepoSpec.parse(upstream.url)
    upstream.commit({"extra.txt": "x\n"})
    store.sync(spec)

    # When its history is rewritten and force-pushed
    sha = upstream.rewrite({"only.txt": "rewritten\n"})
    result = store.sync(spec)

    # Then the new, unrelated history is followed
    assert (result.fetched, result.sha) == (upstream.transport == "git", sha)
    assert result.snapshot.files == ("only.txt",)


def test_mirror_over_git_protocol_is_shallow(store: MirrorStore, served: Upstream) -> None:
    # Given a remote with several commits, served over git://
    served.commit({"a.txt": "a\n"})
    served.commit({"b.txt": "b\n"})
    spec = RepoSpec.parse(served.url)

    # When synced, and synced again after another commit
    first = store.sync(spec)
    served.commit({"c.txt": "c\n"})
    second = store.sync(spec)

    # Then only the tip commits were fetched, one level deep each time
    mirror = pygit2.Repository(str(store.mirror_dir(spec)))
    assert mirror.is_shallow
    assert [str(c.id) for c in mirror.walk(pygit2.Oid(hex=second.sha))] == [second.sha]
    assert [str(c.id) for c in mirror.walk(pygit2.Oid(hex=first.sha))] == [first.sha]
    assert second.fetched and "c.txt" in second.snapshot.files


def test_explicit_and_default_branches(
    store: MirrorStore, git_repo: Callable[..., GitWorkTree], tmp_path: Path, git_daemon: GitDaemon
) -> None:
    # Given a remote whose default branch is "trunk" and which also has "feature/x"
    work = git_repo("trunky", branch="trunk")
    trunk = work.commit({"t.txt": "trunk\n"})
    work.git("checkout", "-q", "-b", "feature/x")
    feature = work.commit({"f.txt": "feature\n"})
    work.git("checkout", "-q", "trunk")
    url = git_daemon.publish(work, "trunky.git")

    # When synced without and with a branch
    default = store.sync(RepoSpec.parse(url))
    named = store.sync(RepoSpec.parse(url, branch="feature/x"))

    # Then each resolves to its own branch head
    assert (default.branch, default.sha) == ("trunk", trunk)
    assert (named.branch, named.sha) == ("feature/x", feature)
    assert "f.txt" in named.snapshot.files and "f.txt" not in default.snapshot.files


def test_unknown_branch_is_bad_input_listing_real_ones(
    store: MirrorStore, upstream: Upstream
) -> None:
    # Given a remote with branches main and develop
    upstream.work.git("branch", "develop")
    upstream.publish()

    # When asked for a branch that does not exist
    with pytest.raises(BadInput) as caught:
        store.sync(RepoSpec.parse(upstream.url, branch="devlop"))

    # Then the message names it and lists what does exist, closest first
    message = str(caught.value)
    assert "'devlop'" in message
    assert re.search(r"include: develop, main", message)


def test_same_name_different_urls_do_not_collide(
    store: MirrorStore, git_repo: Callable[..., GitWorkTree]
) -> None:
    # Given two different repositories that are both called "app"
    one, two = git_repo("one/app"), git_repo("two/app")
    one.commit({"one.txt": "1\n"})
    two.commit({"two.txt": "2\n"})
    spec_one, spec_two = RepoSpec.parse(str(one.path)), RepoSpec.parse(str(two.path))
    assert spec_one.name == spec_two.name == "app"

    # When both are synced
    r1, r2 = store.sync(spec_one), store.sync(spec_two)

    # Then each has its own snapshots
    assert store.snapshot_dir(spec_one) != store.snapshot_dir(spec_two)
    assert (r1.snapshot.files, r2.snapshot.files) == (("one.txt",), ("two.txt",))


def test_warm_updates_the_mirror_so_the_next_sync_needs_no_fetch(
    store: MirrorStore, served: Upstream
) -> None:
    # Given a remote with a new commit the mirror has not seen
    spec = RepoSpec.parse(served.url)
    store.sync(spec)
    sha = served.commit({"new.txt": "new\n"})

    # When the warmer runs, then a question syncs
    warmed = store.warm(spec)
    result = store.sync(spec)

    # Then the warmer fetched it and the question did not have to
    assert warmed == sha == result.sha
    assert result.fetched is False


def test_from_settings_applies_the_configured_deny_list(tmp_path: Path, work: GitWorkTree) -> None:
    # Given settings that deny a "private" directory
    work.commit({"private/notes.txt": "x\n"})
    settings = Settings(
        mirror_root=tmp_path / "m", snapshot_root=tmp_path / "s", deny_paths=("private",)
    )

    # When a store built from them syncs
    result = MirrorStore.from_settings(settings).sync(RepoSpec.parse(str(work.path)))

    # Then the directory is not in the snapshot
    assert not (result.snapshot.root / "private").exists()
    assert "README.md" in result.snapshot.files


# ---- unreachable remotes --------------------------------------------------------------------


def test_unreachable_remote_after_a_good_sync_serves_stale_content(
    store: MirrorStore, served: Upstream, git_daemon: GitDaemon
) -> None:
    # Given a mirror that synced successfully
    spec = RepoSpec.parse(served.url)
    before = datetime.now(UTC) - timedelta(seconds=1)
    good = store.sync(spec)
    after = datetime.now(UTC) + timedelta(seconds=1)

    # When the remote goes away and a question syncs
    git_daemon.stop()
    result = store.sync(spec)

    # Then the last good content is served with a note saying how old it is and why
    assert result.sha == good.sha
    assert result.snapshot.root == good.snapshot.root
    assert result.fetched is False
    assert result.stale is not None
    assert result.stale.sha == good.sha
    assert before <= result.stale.as_of <= after
    assert re.fullmatch(
        rf"may be stale — as of {good.sha[:7]}, \d{{4}}-\d\d-\d\d \d\d:\d\d UTC \(.+\)",
        result.stale.message(),
    )
    assert "refused" in result.stale.reason.lower() or "connect" in result.stale.reason.lower()

    # And the scheduled warmer reports the outage instead of pretending
    with pytest.raises(RepoUnavailable, match=re.escape(served.url)):
        store.warm(spec)


def test_unreachable_remote_without_a_mirror_is_unavailable(store: MirrorStore) -> None:
    # Given a git:// URL where nothing is listening
    url = f"git://127.0.0.1:{free_port()}/nothing.git"

    # When synced  Then RepoUnavailable names the URL
    with pytest.raises(RepoUnavailable, match=re.escape(url)):
        store.sync(RepoSpec.parse(url))


# ---- what lands on disk ---------------------------------------------------------------------


def test_deny_listed_paths_never_reach_the_snapshot_disk(
    store: MirrorStore, work: GitWorkTree
) -> None:
    # Given a repository with secret-shaped files and a configured "secrets" directory
    work.commit(
        {
            ".env": "API_KEY=1\n",
            "deploy/id_rsa": "-----BEGIN-----\n",
            "certs/server.pem": "pem\n",
            "app/.env.production": "X=1\n",
            "secrets/db.txt": "password\n",
            "app/main.py": "main\n",
            "certs/README.md": "how to make certs\n",
        }
    )

    # When synced
    result = store.sync(RepoSpec.parse(str(work.path)))

    # Then none of them exist on disk, while the ordinary files do
    on_disk = files_on_disk(result.snapshot.root)
    for denied in (".env", "deploy/id_rsa", "certs/server.pem", "app/.env.production", "secrets"):
        assert denied not in on_disk
    assert not any(p.startswith("secrets/") for p in on_disk)
    assert {"app/main.py", "certs/README.md", "README.md", "src/app.py"} <= on_disk


def test_symlinks_are_recreated_and_the_jail_refuses_escapes(
    store: MirrorStore, work: GitWorkTree
) -> None:
    # Given links pointing outside the repo, inside it, and at a denied file
    work.commit(
        {".env": "SECRET=1\n"},
        symlinks={"escape": "/etc/passwd", "up": "../../outside", "inner": "README.md"},
    )
    work.commit(symlinks={"cfg": ".env"})

    # When synced
    snapshot = store.sync(RepoSpec.parse(str(work.path))).snapshot

    # Then they are symlinks on disk, but only the inner one can be read
    assert os.readlink(snapshot.root / "escape") == "/etc/passwd"
    assert os.readlink(snapshot.root / "up") == "../../outside"
    for name in ("escape", "up", "cfg"):
        with pytest.raises(ToolRefused):
            snapshot.resolve(name)
    assert snapshot.resolve("inner")[1] == snapshot.root / "README.md"


def test_a_new_snapshot_lists_exactly_what_a_walk_of_its_tree_finds(
    store: MirrorStore, work: GitWorkTree
) -> None:
    # Given a tree with nested dirs, denied files and dirs, and links to files, dirs and outside
    work.commit(
        {"a/b/c.py": "c\n", "a/.env": "X=1\n", "secrets/k.txt": "k\n", "z.txt": "z\n"},
        symlinks={"a/link": "b", "top": "a/b/c.py", "out": "/etc"},
    )

    # When a snapshot is written (and its listing taken from the writer)
    snapshot = store.sync(RepoSpec.parse(str(work.path))).snapshot

    # Then the listing equals a fresh walk of the same directory
    walked = Snapshot(snapshot.root, snapshot.sha, snapshot.repo, deny=store.deny).files
    assert snapshot.files == walked
    assert {"a/b/c.py", "a/link", "top", "out", "z.txt"} <= set(walked)
    assert not {"a/.env", "secrets/k.txt"} & set(walked)


def test_submodules_are_skipped(store: MirrorStore, work: GitWorkTree) -> None:
    # Given a repository with a gitlink (submodule) entry
    work.git("update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},vendor/lib")
    work.git("commit", "-q", "-m", "submodule")

    # When synced  Then the submodule path is simply absent
    snapshot = store.sync(RepoSpec.parse(str(work.path))).snapshot
    assert not (snapshot.root / "vendor" / "lib").exists()
    assert snapshot.files == ("README.md", "src/app.py")


def test_snapshot_files_are_read_only_and_keep_the_executable_bit(
    store: MirrorStore, work: GitWorkTree
) -> None:
    # Given an executable script
    (work.path / "run.sh").write_text("#!/bin/sh\n")
    (work.path / "run.sh").chmod(0o755)
    work.commit()

    # When synced
    root = store.sync(RepoSpec.parse(str(work.path))).snapshot.root

    # Then nothing in the snapshot is writable, and the script is still executable
    for dirpath, _dirs, filenames in os.walk(root):
        for path in [dirpath, *(os.path.join(dirpath, f) for f in filenames)]:
            assert os.lstat(path).st_mode & 0o222 == 0, path
    assert os.stat(root / "run.sh").st_mode & stat.S_IXUSR
    assert not os.stat(root / "README.md").st_mode & stat.S_IXUSR


# ---- old commits ----------------------------------------------------------------------------


def test_snapshot_at_an_old_sha_still_in_the_mirror(store: MirrorStore, served: Upstream) -> None:
    # Given a thread answered at one SHA, and a newer commit since
    spec = RepoSpec.parse(served.url)
    old = store.sync(spec)
    served.commit({"src/app.py": "print('v2')\n"})
    store.sync(spec)

    # When the follow-up asks for the old SHA (in full or abbreviated)
    snapshot = store.snapshot_at(spec, old.sha)
    short = store.snapshot_at(spec, old.sha[:10])

    # Then it gets that commit's files
    assert snapshot.sha == short.sha == old.sha
    assert snapshot.root == old.snapshot.root == short.root
    assert (snapshot.root / "src/app.py").read_text() == "print('v1')\n"


def test_snapshot_at_rebuilds_a_missing_snapshot_dir(
    store: MirrorStore, work: GitWorkTree, tmp_path: Path
) -> None:
    # Given a commit in the mirror but a fresh local disk (another Lambda sandbox)
    spec = RepoSpec.parse(str(work.path))
    sha = store.sync(spec).sha
    other = MirrorStore(store.mirror_root, tmp_path / "fresh-disk", store.deny)

    # When a snapshot of it is asked for  Then it is materialised there
    snapshot = other.snapshot_at(spec, sha)
    assert snapshot.root.is_relative_to((tmp_path / "fresh-disk").resolve())
    assert snapshot.files == ("README.md", "src/app.py")


@pytest.mark.parametrize("sha", ["0" * 40, "deadbeef", "not-a-sha", ""])
def test_snapshot_at_an_absent_sha_is_bad_input(
    store: MirrorStore, work: GitWorkTree, sha: str
) -> None:
    spec = RepoSpec.parse(str(work.path))
    store.sync(spec)
    with pytest.raises(BadInput):
        store.snapshot_at(spec, sha)


def test_snapshot_at_without_a_mirror_is_bad_input(store: MirrorStore, served: Upstream) -> None:
    with pytest.raises(BadInput, match="no mirror"):
        store.snapshot_at(RepoSpec.parse(served.url), served.work.head())


# ---- pruning --------------------------------------------------------------------------------


def test_old_unused_snapshots_beyond_the_limit_are_pruned(
    tmp_path: Path, work: GitWorkTree
) -> None:
    # Given three snapshots that nobody has used for an hour or more
    store = MirrorStore(tmp_path / "m", tmp_path / "s", DenyList(), snapshots_keep=2)
    spec = RepoSpec.parse(str(work.path))
    roots = []
    for i in range(3):
        roots.append(store.sync(spec).snapshot.root)
        work.commit({f"f{i}.txt": "x\n"})
    for i, root in enumerate(roots):
        age(root, 4000 - i * 1000)

    # When a fourth commit is synced
    newest = store.sync(spec).snapshot.root

    # Then the current one and the most recently used other are kept
    assert snapshot_dirs(store, spec) == {roots[2].name, newest.name}
    assert all(os.access(r, os.R_OK) for r in (roots[2], newest))


def test_recently_used_snapshots_are_not_pruned(tmp_path: Path, work: GitWorkTree) -> None:
    # Given three snapshots used within the last ten minutes
    store = MirrorStore(tmp_path / "m", tmp_path / "s", DenyList(), snapshots_keep=1)
    spec = RepoSpec.parse(str(work.path))
    names = set()
    for i in range(3):
        names.add(store.sync(spec).snapshot.root.name)
        work.commit({f"f{i}.txt": "x\n"})

    # When another commit is synced
    names.add(store.sync(spec).snapshot.root.name)

    # Then none of them is removed, since someone may still be reading it
    assert snapshot_dirs(store, spec) == names


# ---- concurrency ----------------------------------------------------------------------------


def _sync_in_child(
    mirror_root: Path, snapshot_root: Path, url: str, barrier: Any, results: Any
) -> None:
    store = MirrorStore(mirror_root, snapshot_root, DenyList(), lock_timeout_s=WAIT_S)
    barrier.wait(timeout=WAIT_S)
    result = store.sync(RepoSpec.parse(url))
    results.put((result.sha, str(result.snapshot.root), result.fetched, result.stale))


class _HangDuringFetch(pygit2.RemoteCallbacks):
    """Stops a sync mid-fetch, i.e. while it holds the mirror lock, until the process dies."""

    def __init__(self, started: Any) -> None:
        super().__init__()
        self.started = started

    def transfer_progress(self, stats: Any) -> None:
        self.started.set()
        while True:
            time.sleep(0.05)


def _sync_and_hang(mirror_root: Path, snapshot_root: Path, url: str, started: Any) -> None:
    store = MirrorStore(
        mirror_root,
        snapshot_root,
        DenyList(),
        callbacks_factory=lambda _s: _HangDuringFetch(started),
    )
    store.sync(RepoSpec.parse(url))


def _start_hanging_sync(store: MirrorStore, url: str) -> multiprocessing.process.BaseProcess:
    started = FORK.Event()
    child = FORK.Process(
        target=_sync_and_hang, args=(store.mirror_root, store.snapshot_root, url, started)
    )
    child.start()
    assert started.wait(WAIT_S), "the child sync never reached its fetch"
    return child


def _kill(child: multiprocessing.process.BaseProcess) -> None:
    if child.pid is not None and child.is_alive():
        os.kill(child.pid, signal.SIGKILL)
    child.join(WAIT_S)


def test_two_processes_syncing_at_once_share_one_fetch_and_one_snapshot(
    store: MirrorStore, served: Upstream
) -> None:
    # Given two processes about to sync the same new repository at the same moment
    barrier, results = FORK.Barrier(2), FORK.Queue()
    args = (store.mirror_root, store.snapshot_root, served.url, barrier, results)
    children = [FORK.Process(target=_sync_in_child, args=args) for _ in range(2)]

    # When both run
    for child in children:
        child.start()
    got = [results.get(timeout=WAIT_S) for _ in children]
    for child in children:
        child.join(WAIT_S)

    # Then both succeed with the same snapshot, fetched once, with nothing left half-written
    assert [c.exitcode for c in children] == [0, 0]
    assert {(sha, root) for sha, root, _f, _s in got} == {(served.work.head(), got[0][1])}
    assert sorted(fetched for _sha, _root, fetched, _s in got) == [False, True]
    assert all(stale is None for *_rest, stale in got)
    assert snapshot_dirs(store, RepoSpec.parse(served.url)) == {Path(got[0][1]).name}


def test_a_sync_killed_while_holding_the_lock_does_not_block_the_next(
    store: MirrorStore, served: Upstream
) -> None:
    # Given a sync that was SIGKILLed in the middle of its fetch (e.g. a Lambda timeout)
    spec = RepoSpec.parse(served.url)
    child = _start_hanging_sync(store, served.url)
    _kill(child)
    assert child.exitcode == -signal.SIGKILL

    # When the next sync runs
    result = store.sync(spec)

    # Then it takes the lock and fetches (a lock still held would have made it serve the mirror
    # marked stale, "another sync held the lock")
    assert (result.fetched, result.stale, result.sha) == (True, None, served.work.head())


def test_lock_timeout_falls_back_to_the_current_mirror(
    tmp_path: Path, store: MirrorStore, served: Upstream
) -> None:
    # Given a synced mirror, a new upstream commit, and another sync stuck holding the lock
    spec = RepoSpec.parse(served.url)
    good = store.sync(spec)
    served.commit({"new.txt": "new\n"})
    child = _start_hanging_sync(store, served.url)
    try:
        impatient = MirrorStore(
            store.mirror_root, store.snapshot_root, DenyList(), lock_timeout_s=0.5
        )

        # When a sync cannot get the lock in time
        result = impatient.sync(spec)
    finally:
        _kill(child)

    # Then it serves the mirror's current content, marked stale for that reason
    assert result.sha == good.sha
    assert result.stale is not None
    assert result.stale.reason == "another sync held the lock"


def test_warming_while_another_sync_holds_the_lock_counts_as_success(
    store: MirrorStore, served: Upstream
) -> None:
    # Given a synced mirror, a new upstream commit, and another sync stuck holding the lock
    spec = RepoSpec.parse(served.url)
    good = store.sync(spec)
    served.commit({"new.txt": "new\n"})
    child = _start_hanging_sync(store, served.url)
    try:
        impatient = MirrorStore(
            store.mirror_root, store.snapshot_root, DenyList(), lock_timeout_s=0.5
        )

        # When the scheduled warmer cannot get the lock in time
        warmed = impatient.warm(spec)
    finally:
        _kill(child)

    # Then it reports the mirror's current commit instead of an outage: the other sync is fetching
    assert warmed == good.sha


def test_lock_timeout_without_a_mirror_is_unavailable(store: MirrorStore, served: Upstream) -> None:
    # Given a first-ever sync stuck holding the lock
    child = _start_hanging_sync(store, served.url)
    try:
        impatient = MirrorStore(
            store.mirror_root, store.snapshot_root, DenyList(), lock_timeout_s=0.5
        )

        # When another sync cannot get the lock  Then there is nothing to fall back on
        with pytest.raises(RepoUnavailable, match="held the lock"):
            impatient.sync(RepoSpec.parse(served.url))
    finally:
        _kill(child)


# ---- recovery -------------------------------------------------------------------------------


def test_ref_lock_files_left_by_a_killed_writer_do_not_wedge_the_mirror(
    store: MirrorStore, served: Upstream
) -> None:
    # Given a mirror where a killed process left git's own ref and shallow lock files behind
    spec = RepoSpec.parse(served.url)
    store.sync(spec)
    mirror = store.mirror_dir(spec)
    for leftover in ("refs/heads/main.lock", "shallow.lock", "packed-refs.lock"):
        (mirror / leftover).write_text("")
    sha = served.commit({"new.txt": "new\n"})

    # When the next sync has something to fetch
    result = store.sync(spec)

    # Then it still moves the branch forward
    assert (result.fetched, result.sha, result.stale) == (True, sha, None)


def test_a_mirror_that_cannot_be_opened_is_rebuilt(
    store: MirrorStore, served: Upstream, tmp_path: Path
) -> None:
    # Given a mirror directory that is not a repository any more
    spec = RepoSpec.parse(served.url)
    mirror = store.mirror_dir(spec)
    mirror.mkdir(parents=True)
    (mirror / "junk").write_text("not a repo\n")

    # When synced (by a process that has not opened it before)
    result = MirrorStore(store.mirror_root, store.snapshot_root, store.deny).sync(spec)

    # Then the mirror is rebuilt and the answer is current
    assert (result.fetched, result.sha) == (True, served.work.head())
    assert pygit2.Repository(str(mirror)).is_bare


@pytest.mark.timeout(120)
def test_a_remote_that_accepts_but_never_answers_times_out(tmp_path: Path) -> None:
    # Given a "git server" that accepts connections and then says nothing
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(5)
    held: list[object] = []
    threading.Thread(target=lambda: held.append(srv.accept()), daemon=True).start()
    store = MirrorStore(tmp_path / "m", tmp_path / "s", DenyList(), network_timeout_s=1.0)
    # When a sync needs it, then it gives up at the configured timeout rather than hanging on TCP
    # (a hang would be ended by the test's timeout mark and fail)
    with pytest.raises(RepoUnavailable, match="timed out"):
        store.sync(RepoSpec.parse(f"git://127.0.0.1:{srv.getsockname()[1]}/x.git"))
    srv.close()
