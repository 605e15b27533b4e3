"""Several repositories seen as one tree: each repo is a top-level directory named after it."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from pathlib import Path

from codeask.errors import ToolRefused
from codeask.scope import PathScope
from codeask.snapshot import RepoRef, Snapshot


class Workspace(Snapshot):
    """The snapshots a channel may read, under their repo names: `billing/src/app.py` is
    `src/app.py` in billing at billing's SHA. Nothing outside these repos can be named."""

    def __init__(self, snapshots: Iterable[Snapshot]) -> None:
        self._parts: dict[str, Snapshot] = {s.repo.name: s for s in snapshots}
        if len(self._parts) < 2:
            raise ValueError("a workspace joins two or more repositories")
        first = next(iter(self._parts.values()))
        # Snapshot's own fields, for code that only reads them: no real tree lives at this root.
        self.root = Path("/nonexistent-workspace")
        self.sha = ",".join(s.sha for s in self.parts.values())
        self.repo = RepoRef(name="+".join(self.parts), url="", branch=None)
        self.deny = first.deny
        self.scope = PathScope()  # each repo's own scope holds in its part
        self._line_counts = {}

    @property
    def parts(self) -> Mapping[str, Snapshot]:
        return self._parts

    @property
    def short_sha(self) -> str:
        return ", ".join(f"{name}@{s.short_sha}" for name, s in self.parts.items())

    @functools.cached_property
    def files(self) -> tuple[str, ...]:
        return tuple(f"{name}/{f}" for name, s in self.parts.items() for f in s.files)

    def locate(self, rel: str) -> tuple[Snapshot, str]:
        name, _, rest = rel.partition("/")
        part = self.parts.get(name)
        if part is None:
            raise ToolRefused(
                f"{rel!r} is not in any repository here; paths start with one of: "
                + ", ".join(f"{n}/" for n in self.parts)
            )
        return part, rest

    def normalise(self, path: str) -> str:
        rel = Snapshot.normalise(self, path)
        if not rel:
            return ""
        part, rest = self.locate(rel)
        inner = part.normalise(rest)
        return f"{part.repo.name}/{inner}" if inner else part.repo.name

    def resolve(self, path: str) -> tuple[str, Path]:
        rel = self.normalise(path)
        if not rel:
            raise ToolRefused(
                "give a path inside one of the repositories: " + ", ".join(self.parts)
            )
        part, rest = self.locate(rel)
        if not rest:
            return rel, part.root
        inner, real = part.resolve(rest)
        return f"{part.repo.name}/{inner}", real

    def line_count(self, rel: str) -> int | None:
        try:
            part, rest = self.locate(rel)
        except ToolRefused:
            return None
        return part.line_count(rest)

    def link(self, rel: str, start: int | None = None, end: int | None = None) -> str | None:
        part, rest = self.locate(rel)
        return part.link(rest, start, end)
