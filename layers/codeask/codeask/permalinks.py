"""Links to a file, a line range or a commit on GitHub, GitLab or Bitbucket, from a remote URL."""

from __future__ import annotations

import re
from typing import Literal
from urllib.parse import quote, urlsplit

HostKind = Literal["github", "gitlab", "bitbucket"]

# scp-like syntax (`git@host:owner/repo.git`); git itself treats `x:y` as scp-like only when the
# colon comes before any slash, which is also what keeps `./a:b` and `/srv/a:b` local.
_SCP = re.compile(r"(?:[^@/\s]+@)?(?P<host>[^:/\s]+):(?P<path>[^\s]*)")
_HOSTNAME = re.compile(r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*")
# The three hosts only allow these characters in owner, group and repository names; anything
# else means the URL is not what we think it is, and a wrong link is worse than none.
_SEGMENT = re.compile(r"[A-Za-z0-9_.-]+")
_REMOTE_SCHEMES = frozenset({"https", "http", "ssh", "git", "git+ssh", "ssh+git"})
# Hosts that serve git over SSH on port 443 under a different name than their web UI.
_SSH_ALIASES = {
    "ssh.github.com": "github.com",
    "altssh.gitlab.com": "gitlab.com",
    "altssh.bitbucket.org": "bitbucket.org",
}


def _kind(host: str) -> HostKind | None:
    if "github" in host:
        return "github"
    if "gitlab" in host:
        return "gitlab"
    if host in ("bitbucket.org", "www.bitbucket.org"):
        return "bitbucket"
    return None


def web_base(remote_url: str) -> tuple[HostKind, str] | None:
    """The host kind and `https://host/owner/repo` for a remote, never carrying its credentials."""
    url = remote_url.strip()
    if not url:
        return None
    scheme = "https"
    port: int | None = None
    if "://" in url:
        parts = urlsplit(url)
        if parts.scheme.lower() not in _REMOTE_SCHEMES:
            return None
        try:
            port = parts.port
        except ValueError:
            return None
        host = parts.hostname or ""
        path = parts.path
        if parts.scheme.lower() == "http":
            scheme = "http"
        elif parts.scheme.lower() != "https":
            port = None  # an SSH or git:// port says nothing about where the web UI listens
    else:
        m = _SCP.fullmatch(url)
        if m is None:
            return None
        host, path = m["host"].lower(), m["path"]
    host = _SSH_ALIASES.get(host, host)
    if not _HOSTNAME.fullmatch(host):
        return None
    kind = _kind(host)
    if kind is None:
        return None
    path = path.strip("/")
    path = path.removesuffix(".git").rstrip("/")
    segments = path.split("/")
    # `-` separates a GitLab project from its pages (`/-/tree/main`): a page URL, not a remote.
    if any(not _SEGMENT.fullmatch(s) or s in (".", "..", "-") for s in segments):
        return None
    if len(segments) < 2 or (kind != "gitlab" and len(segments) != 2):
        return None
    netloc = (
        host if port is None or port == (443 if scheme == "https" else 80) else f"{host}:{port}"
    )
    return kind, f"{scheme}://{netloc}/{'/'.join(segments)}"


def _check_lines(start: int | None, end: int | None) -> None:
    if start is None:
        if end is not None:
            raise ValueError("an end line needs a start line")
        return
    if start < 1:
        raise ValueError(f"line numbers start at 1, got {start}")
    if end is not None and end < start:
        raise ValueError(f"reversed line range {start}-{end}")


def _fragment(kind: HostKind, start: int | None, end: int | None) -> str:
    if start is None:
        return ""
    if end is None or end == start:
        return f"#lines-{start}" if kind == "bitbucket" else f"#L{start}"
    if kind == "github":
        return f"#L{start}-L{end}"
    if kind == "gitlab":
        return f"#L{start}-{end}"
    return f"#lines-{start}:{end}"


def permalink(
    remote_url: str, sha: str, path: str, start: int | None = None, end: int | None = None
) -> str | None:
    """A link to `path` (optionally lines start..end) at `sha`, or None if the host is unknown."""
    _check_lines(start, end)
    base = web_base(remote_url)
    if base is None:
        return None
    kind, root = base
    rel = path.strip("/")
    if not rel:
        raise ValueError("path is empty")
    where = f"{quote(sha, safe='')}/{quote(rel.encode('utf-8', 'surrogateescape'), safe='/')}{_fragment(kind, start, end)}"
    if kind == "github":
        return f"{root}/blob/{where}"
    if kind == "gitlab":
        return f"{root}/-/blob/{where}"
    return f"{root}/src/{where}"


def commit_link(remote_url: str, sha: str) -> str | None:
    """A link to the commit `sha`, or None if the host is unknown."""
    base = web_base(remote_url)
    if base is None:
        return None
    kind, root = base
    ref = quote(sha, safe="")
    if kind == "github":
        return f"{root}/commit/{ref}"
    if kind == "gitlab":
        return f"{root}/-/commit/{ref}"
    return f"{root}/commits/{ref}"


def cite_label(path: str, start: int | None, end: int | None, short_sha: str) -> str:
    """The plain-text citation used where no link can be made: `path:10-20 @ a3f9c21`."""
    if start is None:
        where = path
    elif end is None or end == start:
        where = f"{path}:{start}"
    else:
        where = f"{path}:{start}-{end}"
    return f"{where} @ {short_sha}"
