"""One question end to end: sync the repo, answer from its snapshot, verify every cited path."""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from codeask import search_only
from codeask.agent import Budget, StopReason, Turn, run_loop
from codeask.errors import BadInput
from codeask.holdback import AnswerSink, HoldBack
from codeask.mirror import TAG_PREFIX, MirrorStore, RepoSpec, StaleNote, UncommittedNote, redact_url
from codeask.mirror.spec import is_local
from codeask.model import ModelClient, ModelUnavailable, Usage, make_client, price_for, prices
from codeask.ops import span
from codeask.permalinks import commit_link
from codeask.redact import RedactionGate
from codeask.settings import Settings
from codeask.snapshot import Snapshot
from codeask.tools import Toolbox
from codeask.verify import Verification, verify_answer, warning_text
from codeask.workspace import Workspace


class Mode(StrEnum):
    """Who wrote the answer: the model, or the search-only fallback (goes out in JSON and logs)."""

    CLAUDE = "claude"
    SEARCH_ONLY = "search-only"


@dataclass
class Answer:
    question: str
    text: str  # the answer as written, before warnings are added
    mode: Mode
    snapshot: Snapshot
    branch: str
    verification: Verification
    searches: list[str]
    tool_calls: int
    timings_ms: dict[str, float]
    usage: dict[str, Any] = field(default_factory=dict)
    stale: StaleNote | None = None
    redactions: dict[str, int] = field(default_factory=dict)
    stopped_early: StopReason | None = None
    model: str | None = None
    fetched: bool = False  # the sync fetched new commits
    model_fallback: bool = False  # the model was unavailable and search-only stood in
    # Local work trees read at their last commit while holding changes the answer does not see.
    uncommitted: list[UncommittedNote] = field(default_factory=list)

    @property
    def search_only(self) -> bool:
        """Whether the search-only fallback wrote it (no model, or the model was unavailable)."""
        return self.mode == Mode.SEARCH_ONLY

    @property
    def warning(self) -> str | None:
        return warning_text(self.verification, self.searches)

    def to_json(self) -> dict[str, Any]:
        parts = self.snapshot.parts

        def where(path: str) -> tuple[str, str]:
            if len(parts) == 1:
                return self.snapshot.repo.name, path
            name, _, rest = path.partition("/")
            return (name, rest) if name in parts else ("", path)

        return {
            "question": self.question,
            "answer": self.text,
            "mode": self.mode,
            "model": self.model,
            "stopped_early": self.stopped_early,
            "repos": [
                {
                    "name": name,
                    "url": snap.repo.url,  # credentials already stripped
                    "branch": self.branch,
                    "sha": snap.sha,
                    "commit_url": commit_link(snap.repo.url, snap.sha),
                }
                for name, snap in parts.items()
            ],
            "citations": [
                {
                    "repo": where(m.path)[0],
                    "path": where(m.path)[1],
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
            "uncommitted": [
                {
                    "repo": n.repo,
                    "sha": n.sha,
                    "changed": n.changed,
                    "untracked": n.untracked,
                    "message": n.message(),
                }
                for n in self.uncommitted
            ],  # fmt: skip
            "searches": self.searches,
            "tool_calls": self.tool_calls,
            "timings_ms": {k: round(v, 1) for k, v in self.timings_ms.items()},
            "usage": self.usage,
            "redactions": self.redactions,
        }


_LATEST_RE = re.compile(
    r"\b(latest|newest|most recent|up[- ]to[- ]date|current (?:main|master|head|code|version)|"
    r"(?:on|at|from) (?:main|master|head)|now)\b",
    re.IGNORECASE,
)


_REF_PATTERNS = (
    ("commit", re.compile(r"\b(?:as of|at|in) (?:commit )?([0-9a-f]{7,40})\b", re.IGNORECASE)),
    (
        "branch",
        re.compile(r"\b(?:on|in|from|at) (?:the )?branch ([\w][\w./-]*[\w])", re.IGNORECASE),
    ),
    (
        "tag",
        re.compile(
            r"\b(?:at|in|as of) (?:tag |version |release )?(v\d+(?:\.\d+)+[\w.-]*|\d+\.\d+(?:\.\d+)*)\b",
            re.IGNORECASE,
        ),
    ),
)


def ref_in_question(question: str) -> tuple[str, str] | None:
    """("commit"|"branch"|"tag", name) when the question names what to read, e.g. "… at v2.3"."""
    for kind, rx in _REF_PATTERNS:
        m = rx.search(question)
        if m:
            return kind, m.group(1).rstrip(".?,")
    return None


def wants_latest(question: str) -> bool:
    """Whether a follow-up asks to re-read the newest code rather than the commit the thread read."""
    return _LATEST_RE.search(question) is not None


@dataclass
class _Read:
    """What one question reads of a repo (or several): the snapshot, its label and notes."""

    snapshot: Snapshot
    label: str  # the branch, "tag v2.3" or "commit 3f9c21a"
    stale: StaleNote | None = None
    fetched: bool = False
    timings: dict[str, float] = field(default_factory=dict)
    uncommitted: list[UncommittedNote] = field(default_factory=list)


def _checkout(
    ref_notes: list[str],
    spec: RepoSpec,
    store: MirrorStore,
    pinned: str | None,
    question: str,
    notify: Callable[[str], None],
    *,
    refs: bool = True,
) -> _Read:
    """The snapshot to read: a ref the question names, the thread's commit for a follow-up, else
    the branch head (the remote's, or the local repository's own)."""
    ref = ref_in_question(question) if refs else None
    if ref is not None:
        kind, name = ref
        try:
            if kind == "commit":
                notify(f"reading commit {name[:12]}")
                snap = store.fetch_commit(spec, name)
                return _Read(snap, f"commit {snap.sha[:7]}")
            notify(f"reading {kind} {name}")
            synced = store.sync(dataclasses.replace(spec, branch=name))
            label = f"tag {name}" if synced.branch.startswith(TAG_PREFIX) else synced.branch
            return _Read(synced.snapshot, label, synced.stale, synced.fetched, synced.timings_ms)
        except BadInput as e:
            # "stops at 3.5 seconds" is not a tag: say so, and read the usual branch instead.
            notify(f"{e}; reading the default branch")
            ref_notes.append(
                f"_I could not read {kind} `{name}` ({e}); this answer reads the default branch._"
            )
    if pinned and not wants_latest(question):
        sha = pinned
        try:
            snap = store.snapshot_at(spec, sha)
            notify(f"follow-up: reading the thread's commit {sha[:7]}")
            return _Read(snap, spec.branch or "(pinned)")
        except BadInput:
            notify(f"the thread's commit {sha[:7]} can no longer be read; reading the latest")
    synced = store.sync(spec)
    if synced.uncommitted is not None:
        notify(synced.uncommitted.message())
    return _Read(
        synced.snapshot,
        synced.branch,
        synced.stale,
        synced.fetched,
        synced.timings_ms,
        [synced.uncommitted] if synced.uncommitted else [],
    )


def _checkout_all(
    ref_notes: list[str],
    specs: list[RepoSpec],
    store: MirrorStore,
    history: list[Turn],
    question: str,
    notify: Callable[[str], None],
) -> _Read:
    """One repo as before; several synced in parallel and joined into one workspace."""
    shas = history[-1].sha.split(",") if history else []
    if len(specs) == 1:
        return _checkout(ref_notes, specs[0], store, shas[0] if shas else None, question, notify)
    pins = shas if len(shas) == len(specs) else [None] * len(specs)
    # A tag or commit named in a question about several repos belongs to none in particular.
    with ThreadPoolExecutor(max_workers=min(4, len(specs))) as pool:
        done = list(pool.map(
            lambda sp_pin: _checkout(ref_notes, sp_pin[0], store, sp_pin[1], question, notify, refs=False),
            zip(specs, pins, strict=True),
        ))  # fmt: skip
    return _Read(
        Workspace([d.snapshot for d in done]),
        ", ".join(f"{sp.name}: {d.label}" for sp, d in zip(specs, done, strict=True)),
        next((d.stale for d in done if d.stale is not None), None),
        any(d.fetched for d in done),
        {
            f"{sp.name}_{k}": v
            for sp, d in zip(specs, done, strict=True)
            for k, v in d.timings.items()
        },
        [note for d in done for note in d.uncommitted],
    )


def ask(
    question: str,
    spec: RepoSpec | list[RepoSpec],
    settings: Settings,
    *,
    store: MirrorStore | None = None,
    on_event: Callable[[str], None] | None = None,
    history: list[Turn] | None = None,
    deadline: float | None = None,
    client: ModelClient | None = None,
    sink: AnswerSink | None = None,
) -> Answer:
    """Answer `question` about `spec`; `deadline` is a time.monotonic() value (Lambda's, minus a margin).

    The model's answer streams into `sink` as it is written, each path in it held back until it
    is complete and checked (holdback.HoldBack). A search-only answer is never streamed."""
    started = time.monotonic()
    if deadline is None and settings.deadline_s is not None:
        deadline = started + settings.deadline_s
    store = store or MirrorStore.from_settings(settings)
    notify = on_event or (lambda _msg: None)
    history = list(history or [])
    ref_notes: list[str] = []
    specs = [spec] if isinstance(spec, RepoSpec) else list(spec)
    if not specs:
        raise BadInput("no repository to read")
    for sp in specs:
        how = "reading in place" if is_local(sp.url) else "syncing"
        notify(f"{how} {sp.name} ({redact_url(sp.url)})")
    with span("sync"):
        read = _checkout_all(ref_notes, specs, store, history, question, notify)
    snapshot, branch, stale, fetched = read.snapshot, read.label, read.stale, read.fetched
    t_sync = time.monotonic()
    notify(
        f"{'fetched' if fetched else 'up to date'} at {snapshot.sha[:7]} "
        f"[{(t_sync - started) * 1000:.0f} ms]"
    )
    if stale:
        notify(stale.message())
    toolbox = Toolbox(
        snapshot,
        gate=RedactionGate(),
        rg_path=settings.rg_path,
        search_timeout_s=settings.search_timeout_s,
        on_event=on_event,
    )
    mode = Mode.SEARCH_ONLY
    usage = Usage()
    rounds = 0
    stopped: StopReason | None = None
    loop_timings: dict[str, float] = {}
    reason = "no model key is configured"
    text: str | None = None
    if settings.has_model:
        hold = HoldBack(snapshot, sink)
        if ref_notes:
            hold.preface("\n".join(ref_notes))
        try:
            result = run_loop(
                client or make_client(settings),
                settings.model,
                toolbox,
                question,
                branch=branch,
                history=history,
                budget=Budget(
                    max_rounds=settings.max_rounds,
                    max_output_tokens=settings.max_output_tokens,
                    deadline=deadline,
                    max_cost_usd=settings.max_cost_usd,
                ),
                price=price_for(prices(settings), settings.model),
                on_event=on_event,
                tap=hold,
            )
            mode, usage, rounds, stopped = (
                Mode.CLAUDE,
                result.usage,
                result.rounds,
                result.stopped_early,
            )
            loop_timings = {f"loop_{k}": v for k, v in result.timings_ms.items()}
            # What was streamed is the answer: the ref notes, any stop note and the model's text.
            text = hold.finish()
        except ModelUnavailable as e:
            notify(str(e))
            reason = f"the model was unavailable: {e}"
    if text is None:
        result_so = search_only.answer(question, toolbox, reason=reason, deadline=deadline)
        text = result_so.text
        if ref_notes:
            text = "\n".join(ref_notes) + "\n\n" + text
    t_answer = time.monotonic()
    verification = verify_answer(text, snapshot)
    t_verify = time.monotonic()
    return Answer(
        question=question,
        text=text,
        mode=mode,
        snapshot=snapshot,
        branch=branch,
        verification=verification,
        searches=list(toolbox.searches),
        tool_calls=len(toolbox.calls) + (len(toolbox.searches) if mode == Mode.SEARCH_ONLY else 0),
        timings_ms={
            "sync": (t_sync - started) * 1000,
            "answer": (t_answer - t_sync) * 1000,
            "verify": (t_verify - t_answer) * 1000,
            "total": (t_verify - started) * 1000,
            **{f"sync_{k}": v for k, v in read.timings.items()},
            **loop_timings,
        },
        usage={**usage.as_dict(), "rounds": rounds},
        stale=stale,
        redactions=toolbox.redactions,
        stopped_early=stopped,
        model=settings.model if mode == Mode.CLAUDE else None,
        fetched=fetched,
        model_fallback=settings.has_model and mode == Mode.SEARCH_ONLY,
        uncommitted=read.uncommitted,
    )
