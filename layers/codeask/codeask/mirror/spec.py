"""Which repository to answer about: parsing a path or URL into a RepoSpec, and its credentials."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pygit2
from pygit2.enums import RepositoryOpenFlag

from codeask.errors import BadInput, RepoUnavailable, first_line
from codeask.scope import PathScope
from codeask.snapshot import RepoRef

CallbacksFactory = Callable[["RepoSpec"], pygit2.RemoteCallbacks | None]

_SCHEMES = ("https", "http", "ssh", "git", "file")
# user@host:path as git understands it; a colon before any slash is what makes it remote.
_SCP_RE = re.compile(
    r"^(?:[A-Za-z0-9._~+-]+@)?(?P<host>[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):(?P<path>.+)$"
)


def redact_url(url: str) -> str:
    """The URL without credentials, safe for messages, state files and permalinks."""
    if "://" not in url:
        return url
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    userinfo, host = parts.netloc.rsplit("@", 1)
    # A bare user (ssh://git@host) is not a secret; https userinfo is usually a token.
    if ":" not in userinfo and parts.scheme not in ("http", "https"):
        return url
    return parts._replace(netloc=f"***@{host}").geturl()


def token_callbacks(token: str) -> CallbacksFactory:
    """Credentials for private https remotes: the token as the password (GitHub, GitLab, Bitbucket)."""

    def factory(spec: RepoSpec) -> pygit2.RemoteCallbacks | None:
        if not spec.url.lower().startswith("https://"):
            return None
        return pygit2.RemoteCallbacks(credentials=pygit2.UserPass("x-access-token", token))

    return factory


def is_local(url: str) -> bool:
    """Whether the URL is a repository on this machine (a path or file://), read in place."""
    return url.startswith("/") or url.lower().startswith("file://")


def local_path(url: str) -> Path:
    """The directory a local path or file:// URL names."""
    if url.lower().startswith("file://"):
        return Path(unquote(urlsplit(url).path))
    return Path(url)


def _name_from(path: str) -> str:
    tail = path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    if tail.endswith(".git"):
        tail = tail[:-4]
    return tail or "repo"


def damaged_local(shown: str, detail: str) -> RepoUnavailable:
    """The error for a repository read in place that cannot give what a question needs."""
    return RepoUnavailable(
        f"the repository at {shown} is damaged ({detail}); codeask reads it in place and never "
        "repairs it: `git fsck` there shows what is wrong"
    )


def _open_local_repo(path: Path, shown: str) -> None:
    if not path.exists():
        raise BadInput(
            f"{shown!r} is not an existing local path or a URL; give a path to a git repository "
            "or a URL (https://, http://, ssh://, git://, file:// or git@host:org/repo.git)"
        )
    try:
        pygit2.Repository(str(path), flags=RepositoryOpenFlag.NO_SEARCH)
    except pygit2.GitError as exc:
        if (path / ".git").exists() or ((path / "HEAD").exists() and (path / "objects").exists()):
            # A repository that cannot be opened is damaged, which is not the asker's mistake.
            raise damaged_local(shown, first_line(exc)) from None
        raise BadInput(
            f"{shown!r} is not a git repository (work tree or bare): {first_line(exc)}"
        ) from None


@dataclass(frozen=True)
class RepoSpec:
    """Which repository to answer about: a name for humans, where to fetch it, which branch,
    and which part of it may be read (the asker's channel's scope; the whole repo by default)."""

    name: str
    url: str
    branch: str | None = None  # None = the remote's default branch (its HEAD symref)
    scope: PathScope = PathScope()  # the mirror is one per repo; snapshots one per scope

    @classmethod
    def parse(cls, value: str, branch: str | None = None, name: str | None = None) -> RepoSpec:
        """Accept a local path (work tree or bare repo) or a fetchable URL, or say what is wrong."""
        raw = (value or "").strip()
        if not raw:
            raise BadInput("no repository given; give a local path or a URL")
        if "://" in raw:
            url, derived = cls._parse_url(raw)
        elif (m := _SCP_RE.match(raw)) and not Path(raw).expanduser().exists():
            if m["path"].strip("/") in ("", ".git"):
                raise BadInput(f"{raw!r} has no repository path after the ':'")
            url, derived = raw, _name_from(m["path"])
        else:
            path = Path(raw).expanduser().resolve()
            _open_local_repo(path, raw)
            url, derived = str(path), _name_from(str(path))
        return cls(name=cls._clean_name(name, derived), url=url, branch=cls._clean_branch(branch))

    @staticmethod
    def _parse_url(raw: str) -> tuple[str, str]:
        try:
            parts = urlsplit(raw)
            parts.port  # noqa: B018 -- raises on a malformed port
        except ValueError as exc:
            raise BadInput(f"{redact_url(raw)!r} is not a valid URL: {exc}") from None
        scheme = parts.scheme.lower()
        if scheme not in _SCHEMES:
            raise BadInput(
                f"{redact_url(raw)!r}: unsupported URL scheme {parts.scheme!r}; "
                f"use one of {', '.join(s + '://' for s in _SCHEMES)}"
            )
        if scheme == "file":
            if parts.netloc not in ("", "localhost"):
                raise BadInput(f"{raw!r}: file:// URLs must name a local path (file:///path)")
            _open_local_repo(local_path(raw), raw)
            return raw, _name_from(unquote(parts.path))
        if not parts.hostname:
            raise BadInput(f"{redact_url(raw)!r} has no host name")
        if parts.path.strip("/") in ("", ".git"):
            raise BadInput(f"{redact_url(raw)!r} has no repository path after the host")
        return raw, _name_from(parts.path)

    @staticmethod
    def _clean_name(name: str | None, derived: str) -> str:
        if name is None:
            return derived
        if not name.strip():
            raise BadInput("repository name must not be empty")
        return name.strip()

    @staticmethod
    def _clean_branch(branch: str | None) -> str | None:
        if branch is None:
            return None
        b = branch.strip().removeprefix("refs/heads/")
        if not b or not pygit2.reference_is_valid_name(f"refs/heads/{b}"):
            raise BadInput(f"{branch!r} is not a valid branch name")
        return b

    def ref(self, resolved_branch: str | None = None) -> RepoRef:
        return RepoRef(
            name=self.name, url=redact_url(self.url), branch=resolved_branch or self.branch
        )
