"""LocalSource: a repository on this machine, read in place from its own object database."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pygit2
from pygit2.enums import FileStatus

from codeask.errors import BadInput, first_line
from codeask.mirror.refs import resolve_local
from codeask.mirror.result import UncommittedNote
from codeask.mirror.source import Head, elapsed_ms, find_commit, open_repo
from codeask.mirror.spec import RepoSpec, damaged_local, local_path


class LocalSource:
    """A work tree, bare repository or worktree on this machine; a Source that copies nothing.

    Its refs are read afresh for every question, so a new commit there is the next answer's;
    nothing is ever written into it (no lock, ref, config or index), and uncommitted changes in
    its working tree are named in the answer as not included.
    """

    def __init__(self, spec: RepoSpec, key: str) -> None:
        self.spec = spec
        self.key = key
        self.path = local_path(spec.url)

    def head(self, timings: dict[str, float], *, strict: bool) -> Head:
        # `strict` changes nothing here: a repository read in place is never stale.
        mark = time.perf_counter()
        repo = self.objects()
        try:
            label, oid = resolve_local(repo, self.spec, str(self.path))
            timings["resolve"] = elapsed_ms(mark)
            uncommitted = None
            on_head = not repo.is_bare and not repo.head_is_unborn
            if on_head and repo.head.peel(pygit2.Commit).id == oid:
                mark = time.perf_counter()
                uncommitted = self._uncommitted(repo, str(oid))
                timings["status"] = elapsed_ms(mark)
        except pygit2.GitError as exc:  # a ref file or HEAD that cannot be parsed
            raise damaged_local(str(self.path), first_line(exc)) from None
        return Head(str(oid), label, uncommitted=uncommitted)

    def repair(self, reason: str) -> Head:
        """Never: the repository is the user's, and only they may decide to change it."""
        raise damaged_local(str(self.path), reason)

    def commit(self, sha: str, *, fetch: bool = False) -> str:
        found = find_commit(self.objects(), sha)
        if found is None:
            raise BadInput(f"commit {sha} is not in {self.path}")
        return found

    def objects(self) -> pygit2.Repository:
        try:
            return open_repo(self.path)
        except pygit2.GitError as exc:
            raise damaged_local(str(self.path), first_line(exc)) from None

    def default_branch(self) -> str | None:
        repo = self.objects()
        try:
            if repo.head_is_unborn or repo.head_is_detached:
                return None
            return repo.head.shorthand
        except pygit2.GitError:
            return None

    def last_synced_at(self) -> datetime | None:
        return datetime.now(UTC)  # read in place: always as current as the repository itself

    def _uncommitted(self, repo: pygit2.Repository, sha: str) -> UncommittedNote | None:
        """What the working tree holds beyond HEAD; libgit2 only reads here, the index included."""
        try:
            status = repo.status(untracked_files="normal")
        except pygit2.GitError as exc:
            return UncommittedNote(self.spec.name, sha, 0, 0, error=first_line(exc))
        untracked = sum(1 for flags in status.values() if flags == FileStatus.WT_NEW)
        changed = sum(
            1 for flags in status.values() if flags & ~(FileStatus.WT_NEW | FileStatus.IGNORED)
        )
        if not changed and not untracked:
            return None
        return UncommittedNote(self.spec.name, sha, changed, untracked)
