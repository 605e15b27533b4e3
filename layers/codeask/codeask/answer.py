"""One question end to end: sync the repo, answer from its snapshot, verify every cited path."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from codeask import search_only
from codeask.mirror import MirrorStore, RepoSpec, StaleNote, redact_url
from codeask.permalinks import commit_link
from codeask.redact import RedactionGate
from codeask.settings import Settings
from codeask.snapshot import Snapshot
from codeask.tools import Toolbox
from codeask.verify import Verification, verify_answer, warning_text


@dataclass
class Answer:
    question: str
    text: str  # the answer as written, before warnings are added
    mode: str  # "claude" or "search-only"
    snapshot: Snapshot
    branch: str
    verification: Verification
    searches: list[str]
    tool_calls: int
    timings_ms: dict[str, float]
    usage: dict[str, Any] = field(default_factory=dict)
    stale: StaleNote | None = None
    redactions: dict[str, int] = field(default_factory=dict)

    @property
    def warning(self) -> str | None:
        return warning_text(self.verification, self.searches)

    def to_json(self) -> dict[str, Any]:
        repo = self.snapshot.repo
        return {
            "question": self.question,
            "answer": self.text,
            "mode": self.mode,
            "repos": [
                {
                    "name": repo.name,
                    "url": repo.url,  # credentials already stripped
                    "branch": self.branch,
                    "sha": self.snapshot.sha,
                    "commit_url": commit_link(repo.url, self.snapshot.sha),
                }
            ],
            "citations": [
                {
                    "repo": repo.name,
                    "path": m.path,
                    "start_line": m.start_line,
                    "end_line": m.end_line,
                    "url": m.url,
                    "verified": m.verified,
                }
                for m in self.verification.mentions
            ],
            "unverified": [
                {"text": m.text, "path": m.path, "reason": m.reason}
                for m in self.verification.unverified
            ],
            "warning": self.warning,
            "stale": self.stale.message() if self.stale else None,
            "searches": self.searches,
            "tool_calls": self.tool_calls,
            "timings_ms": {k: round(v, 1) for k, v in self.timings_ms.items()},
            "usage": self.usage,
            "redactions": self.redactions,
        }


def ask(
    question: str,
    spec: RepoSpec,
    settings: Settings,
    *,
    store: MirrorStore | None = None,
    on_event: Callable[[str], None] | None = None,
) -> Answer:
    """Answer `question` about `spec` at the remote's current head (or the last good mirror)."""
    started = time.monotonic()
    store = store or MirrorStore.from_settings(settings)
    notify = on_event or (lambda _msg: None)
    notify(f"syncing {spec.name} ({redact_url(spec.url)})")
    synced = store.sync(spec)
    t_sync = time.monotonic()
    notify(
        f"{'fetched' if synced.fetched else 'up to date'} at {synced.sha[:7]} "
        f"[{(t_sync - started) * 1000:.0f} ms]"
    )
    if synced.stale:
        notify(synced.stale.message())
    toolbox = Toolbox(
        synced.snapshot,
        gate=RedactionGate(),
        rg_path=settings.rg_path,
        search_timeout_s=settings.search_timeout_s,
        on_event=on_event,
    )
    reason = (
        "no model key is configured"
        if not settings.anthropic_api_key
        else "the model loop is not enabled in this build"
    )
    result = search_only.answer(question, toolbox, reason=reason)
    t_answer = time.monotonic()
    verification = verify_answer(result.text, synced.snapshot)
    t_verify = time.monotonic()
    return Answer(
        question=question,
        text=result.text,
        mode="search-only",
        snapshot=synced.snapshot,
        branch=synced.branch,
        verification=verification,
        searches=list(toolbox.searches),
        tool_calls=len(result.searches) + len(toolbox.calls),
        timings_ms={
            "sync": (t_sync - started) * 1000,
            "answer": (t_answer - t_sync) * 1000,
            "verify": (t_verify - t_answer) * 1000,
            "total": (t_verify - started) * 1000,
            **{f"sync_{k}": v for k, v in synced.timings_ms.items()},
        },
        usage={
            "input_tokens": 0,
            "output_tokens": 0,
            "cache_read_tokens": 0,
            "cache_write_tokens": 0,
            "cost_usd": 0.0,
        },  # fmt: skip
        stale=synced.stale,
        redactions=toolbox.redactions,
    )
