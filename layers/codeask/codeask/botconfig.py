"""CODEASK_CONFIG: which repositories exist and which Slack channels may ask about which."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from codeask.errors import ConfigError

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


@dataclass(frozen=True)
class BotConfig:
    """Repos by name, and for each allowed channel the repos it may see. Unlisted channels are refused."""

    repos: dict[str, RepoEntry] = field(default_factory=dict)
    channels: dict[str, tuple[str, ...]] = field(default_factory=dict)
    team_id: str | None = None  # the workspace askers must belong to; None accepts the app's own

    def repos_for(self, channel: str) -> list[RepoEntry] | None:
        names = self.channels.get(channel)
        return None if names is None else [self.repos[n] for n in names]

    def readable(self, channel: str, names: Iterable[str]) -> list[RepoEntry]:
        """The repos among `names` that `channel` may read now, in the order given.

        The one access check for every place that reads code on a channel's behalf: a queued job,
        a thread's earlier turns, an exported vote. What a message claims is never trusted to
        widen what the channel's current permission allows.
        """
        allowed = set(self.channels.get(channel, ()))
        out: list[RepoEntry] = []
        for name in names:
            if name in allowed and name in self.repos and self.repos[name] not in out:
                out.append(self.repos[name])
        return out

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
        repos: dict[str, RepoEntry] = {}
        for name, spec in raw_repos.items():
            if not _NAME_RE.fullmatch(str(name)):
                raise ConfigError(
                    f"CODEASK_CONFIG: repo name {name!r} must be letters, digits, . _ -"
                )
            if (
                not isinstance(spec, dict)
                or not isinstance(spec.get("url"), str)
                or not spec["url"]
            ):
                raise ConfigError(f'CODEASK_CONFIG: repo {name!r} needs a "url"')
            branch = spec.get("branch")
            if branch is not None and (not isinstance(branch, str) or not branch.strip()):
                raise ConfigError(
                    f"CODEASK_CONFIG: repo {name!r} has an empty or non-string branch"
                )
            repos[name] = RepoEntry(name=name, url=spec["url"], branch=branch)
        channels: dict[str, tuple[str, ...]] = {}
        for channel, names in raw_channels.items():
            if not _CHANNEL_RE.fullmatch(str(channel)):
                raise ConfigError(
                    f"CODEASK_CONFIG: {channel!r} is not a Slack channel ID (like C0123ABCD); "
                    "DMs cannot be configured"
                )
            if isinstance(names, str):
                names = [names]
            if (
                not isinstance(names, list)
                or not names
                or not all(isinstance(n, str) for n in names)
            ):
                raise ConfigError(f"CODEASK_CONFIG: channel {channel} needs a list of repo names")
            unknown = [n for n in names if n not in repos]
            if unknown:
                raise ConfigError(
                    f"CODEASK_CONFIG: channel {channel} names unknown repos {unknown}; "
                    f"known: {sorted(repos)}"
                )
            channels[channel] = tuple(names)
        team = data.get("team_id")
        if team is not None and not isinstance(team, str):
            raise ConfigError("CODEASK_CONFIG: team_id must be a string like T0123ABCD")
        return cls(repos=repos, channels=channels, team_id=team)
