"""Repositories as read-only snapshots at a commit: local ones read in place, remote ones mirrored."""

from codeask.mirror.local import LocalSource
from codeask.mirror.refs import TAG_PREFIX, pick_ref
from codeask.mirror.remote import RemoteMirror
from codeask.mirror.result import OnRepair, Repair, StaleNote, SyncResult, UncommittedNote
from codeask.mirror.source import Source
from codeask.mirror.spec import CallbacksFactory, RepoSpec, redact_url, token_callbacks
from codeask.mirror.store import MirrorStore

__all__ = [
    "TAG_PREFIX",
    "CallbacksFactory",
    "LocalSource",
    "MirrorStore",
    "OnRepair",
    "RemoteMirror",
    "Repair",
    "RepoSpec",
    "Source",
    "StaleNote",
    "SyncResult",
    "UncommittedNote",
    "pick_ref",
    "redact_url",
    "token_callbacks",
]
