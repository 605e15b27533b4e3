"""Which ref a spec names: the branch or tag among a remote's heads or a local repository's refs."""

from __future__ import annotations

import difflib
from collections.abc import Collection
from typing import Any

import pygit2

from codeask.errors import BadInput, first_line
from codeask.mirror.spec import RepoSpec, damaged_local, redact_url

# A tag's commit is kept under a local branch of this prefix, so one code path serves both.
TAG_PREFIX = "tags/"
# What a repository read in place is shown under when its HEAD is on no branch.
DETACHED = "detached HEAD"


def local_head(repo: pygit2.Repository, branch: str) -> pygit2.Oid | None:
    """The commit the repository's own branch `branch` points at, if it has one."""
    ref = repo.references.get(f"refs/heads/{branch}")
    if ref is None:
        return None
    target = ref.target
    return target if isinstance(target, pygit2.Oid) else None


def pick_ref(spec: RepoSpec, heads: list[Any]) -> tuple[str, str, pygit2.Oid]:
    """(local key, remote ref, commit) for the spec's branch or tag, or the remote's default."""
    branches: dict[str, pygit2.Oid] = {}
    tags: dict[str, pygit2.Oid] = {}
    head = None
    for h in heads:
        if h.name == "HEAD":
            head = h
        elif h.name and h.name.startswith("refs/heads/"):
            branches[h.name[len("refs/heads/") :]] = h.oid
        elif h.name and h.name.startswith("refs/tags/"):
            name = h.name[len("refs/tags/") :]
            if name.endswith("^{}"):
                tags[name[:-3]] = h.oid  # the commit an annotated tag points at wins
            else:
                tags.setdefault(name, h.oid)
    shown = redact_url(spec.url)
    if spec.branch is not None:
        if spec.branch in branches:
            return spec.branch, f"refs/heads/{spec.branch}", branches[spec.branch]
        if spec.branch in tags:
            return f"{TAG_PREFIX}{spec.branch}", f"refs/tags/{spec.branch}", tags[spec.branch]
        raise BadInput(
            f"no branch or tag {spec.branch!r} was found on {shown}; {_some(branches, spec)}"
        )
    if head is not None:
        target = head.symref_target or ""
        if target.startswith("refs/heads/") and target[len("refs/heads/") :] in branches:
            name = target[len("refs/heads/") :]
            return name, target, branches[name]
        # Servers that do not advertise the symref: the branch HEAD points at by commit.
        same = sorted(b for b, oid in branches.items() if oid == head.oid)
        for preferred in ("main", "master"):
            if preferred in same:
                return preferred, f"refs/heads/{preferred}", branches[preferred]
        if same:
            return same[0], f"refs/heads/{same[0]}", branches[same[0]]
    raise BadInput(
        f"{shown} has no default branch (its HEAD is not on a branch, or it is empty); "
        f"name a branch. {_some(branches)}"
    )


def resolve_local(repo: pygit2.Repository, spec: RepoSpec, shown: str) -> tuple[str, pygit2.Oid]:
    """(label, commit) in a repository on this machine: the branch or tag the spec names, else
    what HEAD is on; a branch only a remote has ("origin/x") counts when no local one does."""
    if spec.branch is not None:
        name = spec.branch
        wanted = [(f"refs/heads/{name}", name), (f"refs/tags/{name}", f"{TAG_PREFIX}{name}")]
        wanted += [(f"refs/remotes/{r}/{name}", f"{r}/{name}") for r in repo.remotes.names()]
        for refname, label in wanted:
            ref = repo.references.get(refname)
            if ref is not None:
                return label, _commit_of(ref, refname, shown)
        raise BadInput(
            f"no branch or tag {name!r} was found in {shown}; "
            f"{_some(list(repo.branches.local), spec, where='the repository')}"
        )
    if repo.head_is_unborn:
        # HEAD names a branch that does not exist (deleted, an orphan checkout, or a bare repo made
        # with master that was pushed main): reading another branch would answer about code the
        # repository does not say is current. Refused, as `pick_ref` and the doctor refuse it.
        target = repo.references["HEAD"].target
        missing = str(target).removeprefix("refs/heads/")
        raise BadInput(
            f"{shown} has no commits on branch {missing!r}, which its HEAD names (there is no "
            f"such branch); name a branch to read. "
            f"{_some(list(repo.branches.local), where='the repository')}"
        )
    head = repo.head
    label = DETACHED if repo.head_is_detached else head.shorthand
    return label, _commit_of(head, label, shown)


def _commit_of(ref: pygit2.Reference, name: str, shown: str) -> pygit2.Oid:
    try:
        return ref.peel(pygit2.Commit).id
    except ValueError:  # it names a tree or a blob
        raise BadInput(f"{name!r} in {shown} does not point at a commit") from None
    except pygit2.GitError as exc:  # the object it names is missing or unreadable
        raise damaged_local(shown, f"{name!r} cannot be read: {first_line(exc)}") from None


def _some(
    branches: Collection[str],
    spec: RepoSpec | None = None,
    limit: int = 8,
    where: str = "the remote",
) -> str:
    if not branches:
        return f"{where} has no branches"
    names = sorted(branches)
    close = difflib.get_close_matches(spec.branch, names, n=3) if spec and spec.branch else []
    pick = close + [n for n in names if n not in close]
    more = len(names) - limit
    listed = ", ".join(pick[:limit]) + (f" and {more} more" if more > 0 else "")
    return f"branches there include: {listed}"
