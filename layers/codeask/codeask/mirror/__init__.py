"""Bare shallow mirrors of remote repos, kept current with pygit2 alone, and immutable snapshots."""

from codeask.mirror.refs import TAG_PREFIX, pick_ref
from codeask.mirror.result import StaleNote, SyncResult
from codeask.mirror.spec import CallbacksFactory, RepoSpec, redact_url, token_callbacks
from codeask.mirror.store import MirrorStore

__all__ = [
    "TAG_PREFIX",
    "CallbacksFactory",
    "MirrorStore",
    "RepoSpec",
    "StaleNote",
    "SyncResult",
    "pick_ref",
    "redact_url",
    "token_callbacks",
]
