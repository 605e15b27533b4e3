"""Secret-shaped paths that are never materialised, searched, listed or read."""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from codeask.pathglob import parse_glob

# Where a snapshot keeps its own manifest (codeask.mirror.manifest): denied like `.git`, so no
# tool shows it and no repository can put a file of that name into a snapshot.
SNAPSHOT_MANIFEST = ".codeask-snapshot"

BUILTIN_DENY: tuple[str, ...] = (
    ".git",
    SNAPSHOT_MANIFEST,
    ".env",
    ".env.*",
    "*.env",
    ".envrc",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.kdbx",
    "*.ppk",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "*.tfstate",
    "*.tfstate.*",
    "*.tfvars",
    "credentials",
    "credentials.*",
    ".aws",
    ".ssh",
    ".netrc",
    ".pgpass",
    ".pypirc",
    ".npmrc",
    ".git-credentials",
    ".docker/config.json",
    "service-account*.json",
)


@dataclass(frozen=True)
class DenyList:
    """Built-in secret-shaped globs plus the directories and globs a deployment configures."""

    extra: tuple[str, ...] = ()

    @classmethod
    def from_settings(cls, extra: Iterable[str]) -> DenyList:
        return cls(tuple(extra))

    @property
    def globs(self) -> tuple[str, ...]:
        return BUILTIN_DENY + self.extra

    @functools.cached_property
    def _regex(self) -> re.Pattern[bytes]:
        # A deny-list entry covers the path and everything below it; one that names directories
        # only (`secrets/`) is taken to cover a file of that name too: denying more is safe.
        either = "|".join(f"(?:{parse_glob(g).tree_pattern()})" for g in self.globs)
        return re.compile(either.encode(), re.DOTALL)

    def is_denied(self, path: str) -> bool:
        return self._regex.match(path.strip("/").encode("utf-8", "surrogateescape")) is not None

    def rg_globs(self) -> list[str]:
        """Exclusions for ripgrep's --glob, so denied files never reach a search (they go last: last wins)."""
        return ["!" + g for g in self.globs]

    def fingerprint(self) -> str:
        """Changes whenever the list changes, so snapshots made under another list are not reused."""
        return hashlib.sha256("\n".join(self.globs).encode()).hexdigest()[:12]
