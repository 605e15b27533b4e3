"""CODEASK_CONFIG: which repositories exist and which Slack channels may ask about which."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path

from codeask.errors import ConfigError
from codeask.scope import PathScope, parse_paths

# Used with fullmatch: "$" would also accept a trailing newline.
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_CHANNEL_RE = re.compile(r"[CG][A-Z0-9]{6,}")


class Refusal(StrEnum):
    """Why a question was not answered for who asked or where: the reply, and a metric's Reason."""

    DM = "dm"  # a direct or group message: not every reader may see the code
    SHARED = "shared"  # a Slack Connect channel, shared with another organisation
    TEAM = "team"  # the asker is not from the configured workspace
    CHANNEL = "channel"  # the channel is not in CODEASK_CONFIG
    REPOS = "repos"  # the channel may no longer read any repo the job names


@dataclass(frozen=True)
class RepoEntry:
    name: str
    url: str
    branch: str | None = None
    # What of the repo may be read: its own `paths`, narrowed by a channel's grant in repos_for()
    # and readable(). Everything outside is never written to disk, searched, listed, read or cited.
    scope: PathScope = PathScope()


@dataclass(frozen=True)
class BotConfig:
    """Repos by name, and for each allowed channel the repos it may see. Unlisted channels are refused."""

    repos: dict[str, RepoEntry] = field(default_factory=dict)
    channels: dict[str, tuple[str, ...]] = field(default_factory=dict)
    team_id: str | None = None  # the workspace askers must belong to; None accepts the app's own
    # (channel, repo) -> the globs that channel's grant narrows the repo to; absent: the whole repo.
    grant_paths: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)

    def repos_for(self, channel: str) -> list[RepoEntry] | None:
        names = self.channels.get(channel)
        return None if names is None else [self._granted(channel, n) for n in names]

    def readable(self, channel: str, names: Iterable[str]) -> list[RepoEntry]:
        """The repos among `names` that `channel` may read now, in the order given, each with
        the scope (part of the repo) the channel may read.

        The one access check for every place that reads code on a channel's behalf: a queued job,
        a thread's earlier turns, an exported vote. What a message claims is never trusted to
        widen what the channel's current permission allows.
        """
        allowed = set(self.channels.get(channel, ()))
        out: list[RepoEntry] = []
        for name in names:
            if name in allowed and name in self.repos and all(e.name != name for e in out):
                out.append(self._granted(channel, name))
        return out

    def may_reread(self, channel: str, names: Sequence[str], scopes: Sequence[str] | None) -> bool:
        """Whether something read earlier for `channel` (a thread's turn, an answer voted on) from
        the repos `names`, under the scopes with these fingerprints (None: read before scopes
        existed, so whole repos), may be shown to it again: every repo is still readable, and
        none of them through a narrower scope than it was read with."""
        if not names:
            return False
        recorded = list(scopes) if scopes is not None else [""] * len(names)
        if len(recorded) != len(names):
            return False
        now = {e.name: e.scope for e in self.readable(channel, names)}
        return all(n in now and now[n].covers(fp) for n, fp in zip(names, recorded, strict=True))

    def _granted(self, channel: str, name: str) -> RepoEntry:
        entry = self.repos[name]
        paths = self.grant_paths.get((channel, name))
        return replace(entry, scope=entry.scope.narrow(paths)) if paths else entry

    @classmethod
    def load(cls, raw: str) -> BotConfig:
        """Parse CODEASK_CONFIG: inline JSON, or a path to a JSON file."""
        text = raw.strip()
        if not text.startswith("{"):
            path = Path(text).expanduser()
            try:
                text = path.read_text(encoding="utf-8")
            except OSError as e:
                raise ConfigError(f"CODEASK_CONFIG names a file that cannot be read: {e}") from None
            except UnicodeDecodeError as e:
                raise ConfigError(
                    f"CODEASK_CONFIG names a file that is not UTF-8 text (byte {e.start}): {path}"
                ) from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ConfigError(f"CODEASK_CONFIG is not valid JSON: {e}") from None
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: object) -> BotConfig:
        if not isinstance(data, dict):
            raise ConfigError("CODEASK_CONFIG must be a JSON object with 'repos' and 'channels'")
        raw_repos = data.get("repos")
        raw_channels = data.get("channels")
        if not isinstance(raw_repos, dict) or not raw_repos:
            raise ConfigError(
                'CODEASK_CONFIG needs "repos": {"name": {"url": "...", "branch": "main"}}'
            )
        if not isinstance(raw_channels, dict):
            raise ConfigError('CODEASK_CONFIG needs "channels": {"C0123ABCD": ["name", ...]}')
        repos = {name: _repo(name, spec) for name, spec in raw_repos.items()}
        channels: dict[str, tuple[str, ...]] = {}
        grant_paths: dict[tuple[str, str], tuple[str, ...]] = {}
        for channel, grants in raw_channels.items():
            channels[channel] = _channel(channel, grants, repos, grant_paths)
        team = data.get("team_id")
        if team is not None and not isinstance(team, str):
            raise ConfigError("CODEASK_CONFIG: team_id must be a string like T0123ABCD")
        return cls(repos=repos, channels=channels, team_id=team, grant_paths=grant_paths)


def _repo(name: object, spec: object) -> RepoEntry:
    if not _NAME_RE.fullmatch(str(name)):
        raise ConfigError(f"CODEASK_CONFIG: repo name {name!r} must be letters, digits, . _ -")
    if not isinstance(spec, dict) or not isinstance(spec.get("url"), str) or not spec["url"]:
        raise ConfigError(f'CODEASK_CONFIG: repo {name!r} needs a "url"')
    branch = spec.get("branch")
    if branch is not None and (not isinstance(branch, str) or not branch.strip()):
        raise ConfigError(f"CODEASK_CONFIG: repo {name!r} has an empty or non-string branch")
    if "path" in spec:  # a typo here would silently give the whole repository
        raise ConfigError(f'CODEASK_CONFIG: repo {name!r} has "path"; did you mean "paths"?')
    scope = PathScope()
    if "paths" in spec:
        scope = scope.narrow(parse_paths(spec["paths"], f"repo {name!r}"))
    return RepoEntry(name=str(name), url=spec["url"], branch=branch, scope=scope)


def _channel(
    channel: object,
    grants: object,
    repos: dict[str, RepoEntry],
    grant_paths: dict[tuple[str, str], tuple[str, ...]],
) -> tuple[str, ...]:
    """A channel's repo names, in order; the paths of its scoped grants go into `grant_paths`."""
    if not _CHANNEL_RE.fullmatch(str(channel)):
        raise ConfigError(
            f"CODEASK_CONFIG: {channel!r} is not a Slack channel ID (like C0123ABCD); "
            "DMs cannot be configured"
        )
    channel = str(channel)
    if isinstance(grants, str | dict):
        grants = [grants]
    if not isinstance(grants, list) or not grants:
        raise ConfigError(
            f"CODEASK_CONFIG: channel {channel} needs a list of repo names (or "
            '{"repo": "name", "paths": [...]} for part of a repo)'
        )
    names: list[str] = []
    for grant in grants:
        name, paths = _grant(channel, grant)
        if name not in repos:
            raise ConfigError(
                f"CODEASK_CONFIG: channel {channel} names unknown repos {[name]}; "
                f"known: {sorted(repos)}"
            )
        if name in names:
            if paths == grant_paths.get((channel, name), ()):
                continue  # the same grant twice, as older configs may have it
            raise ConfigError(
                f"CODEASK_CONFIG: channel {channel} grants repo {name!r} twice with "
                "different paths; give it once, with all the paths it may read"
            )
        names.append(name)
        if paths:
            grant_paths[(channel, name)] = paths
    return tuple(names)


def _grant(channel: str, grant: object) -> tuple[str, tuple[str, ...]]:
    """One entry of a channel's list: a repo name, or {"repo": name, "paths": [globs]}."""
    if isinstance(grant, str):
        return grant, ()
    if not isinstance(grant, dict) or not isinstance(grant.get("repo"), str):
        raise ConfigError(
            f"CODEASK_CONFIG: channel {channel} needs a list of repo names (or "
            '{"repo": "name", "paths": [...]} for part of a repo)'
        )
    extra = sorted(set(grant) - {"repo", "paths"})
    if extra:  # a misspelt "paths" would silently give the whole repository
        raise ConfigError(
            f"CODEASK_CONFIG: channel {channel}'s grant of {grant['repo']!r} has unknown keys "
            f'{extra}; a grant takes "repo" and "paths"'
        )
    if "paths" not in grant:
        return grant["repo"], ()
    where = f"channel {channel}'s grant of {grant['repo']!r}"
    return grant["repo"], parse_paths(grant["paths"], where)
