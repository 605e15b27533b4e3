"""Which part of a repository a channel may read: gitignore-style globs, narrowed grant by grant."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass

from codeask.errors import ConfigError
from codeask.pathglob import Glob, parse_glob

_META = frozenset("*?[{")


@dataclass(frozen=True)
class PathScope:
    """Paths a reader may see. Each layer is a list of globs (`!glob` excludes; as in gitignore,
    the last glob that matches a path decides); a path is in scope when every layer admits it.
    The repository's own `paths` make one layer and a channel's grant another, so a grant can
    only narrow what the repository allows. No layers: the whole repository."""

    layers: tuple[tuple[str, ...], ...] = ()

    @property
    def whole(self) -> bool:
        return not self.layers

    def narrow(self, globs: Iterable[str]) -> PathScope:
        """This scope further limited to `globs` (nothing changes for none)."""
        layer = tuple(globs)
        return PathScope((*self.layers, layer)) if layer else self

    @functools.cached_property
    def _compiled(self) -> tuple[tuple[Glob, ...], ...]:
        return tuple(tuple(parse_glob(g) for g in layer) for layer in self.layers)

    def admits(self, path: str) -> bool:
        """Whether the file `path` is in scope (directories: may_hold)."""
        rel = path.strip("/")
        for layer in self._compiled:
            verdict = False
            for glob in layer:
                # A glob naming a directory covers everything below it, as in .gitignore.
                if glob.matches_tree(rel):
                    verdict = not glob.negated
            if not verdict:
                return False
        return True

    def may_hold(self, directory: str) -> bool:
        """Whether anything below `directory` can be in scope (a cheap over-estimate, so a walk
        of the tree skips only the directories that cannot hold anything in scope)."""
        rel = directory.strip("/")
        return all(
            any(not glob.negated and _glob_may_hold(glob.text, rel) for glob in layer)
            for layer in self._compiled
        )

    def fingerprint(self) -> str:
        """Empty for the whole repository; otherwise changes whenever the globs do."""
        if self.whole:
            return ""
        return hashlib.sha256(json.dumps(self.layers).encode()).hexdigest()[:12]

    def covers(self, fingerprint: str) -> bool:
        """Whether everything read under the scope with `fingerprint` is still readable here."""
        return self.whole or fingerprint == self.fingerprint()

    def describe(self) -> str:
        """The globs for a person: `services/payments/**, libs/billing/**`."""
        return " within ".join(", ".join(layer) for layer in reversed(self.layers))


def _glob_may_hold(glob: str, directory: str) -> bool:
    g = glob.strip().rstrip("/")
    if "/" not in g:
        return True  # a bare name matches at any depth
    parts = g.lstrip("/").split("/")
    literal: list[str] = []
    for part in parts:
        if _META & set(part):
            break
        literal.append(part)
    prefix = "/".join(literal)
    if not directory or not prefix:
        return True
    return (
        directory == prefix
        or directory.startswith(prefix + "/")
        or prefix.startswith(directory + "/")
    )


def parse_paths(value: object, where: str) -> tuple[str, ...]:
    """A `paths` value from CODEASK_CONFIG: a non-empty list of globs, or a ConfigError naming
    `where` it was found and what is wrong with it."""
    if not isinstance(value, list) or not value:
        raise ConfigError(
            f'CODEASK_CONFIG: {where} "paths" must be a non-empty list of globs such as '
            '["services/payments/**", "libs/billing/**"]; leave it out to give the whole repository'
        )
    out: list[str] = []
    for glob in value:
        if not isinstance(glob, str) or not glob.strip() or not glob.strip().removeprefix("!"):
            raise ConfigError(f"CODEASK_CONFIG: {where} has an empty or non-string glob {glob!r}")
        g = glob.strip()
        body = g.removeprefix("!").strip("/")
        if "\x00" in g or ".." in body.split("/") or g.startswith("~"):
            raise ConfigError(
                f"CODEASK_CONFIG: {where} glob {glob!r} must be a path inside the repository "
                "(no '..', '~' or NUL)"
            )
        try:
            parse_glob(g)
        except ValueError as e:
            raise ConfigError(f"CODEASK_CONFIG: {where} glob {glob!r} is not valid: {e}") from None
        out.append(g)
    if all(g.startswith("!") for g in out):
        raise ConfigError(
            f'CODEASK_CONFIG: {where} "paths" only excludes; add a glob that includes paths, '
            'e.g. ["services/**", "!services/legacy/**"]'
        )
    return tuple(out)
