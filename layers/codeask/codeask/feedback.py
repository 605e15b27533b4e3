"""👍/👎 votes turned into evaluation cases, so a team can re-run what its people found wrong."""

from __future__ import annotations

from typing import Any

from codeask.botconfig import BotConfig


def export_cases(votes: list[dict[str, Any]], config: BotConfig) -> list[dict[str, Any]]:
    """One eval case per answer whose latest vote from someone was 👎, most-downvoted first.

    `expected` is left empty: the people who know the code fill in the right `path`/`line`;
    `codeask eval` still reports invented paths, tool calls and tokens for unfilled cases.
    An answer quotes the code it read, so it is exported only while its channel may still read
    every repo it was about, through a scope at least as wide (`config`, the one access
    policy); the others are left out.
    """
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for v in sorted(votes, key=lambda v: v["voted_at"]):
        latest[(v["key"], v["user"])] = v  # a changed mind counts once, as its last vote
    by_answer: dict[str, dict[str, Any]] = {}
    for (key, user), v in latest.items():
        if v["vote"] != "down":
            continue
        channel = key.partition(":")[0]
        repos = [r for r in str(v.get("repos", "")).split(",") if r]
        scopes = None if v.get("scopes") is None else str(v["scopes"]).split(",")
        if not config.may_reread(channel, repos, scopes):
            continue
        case = by_answer.setdefault(key, {
            "id": "feedback-" + key.replace(":", "-"),
            "repo": repos[0],
            "question": v.get("question", ""),
            "expected": [],
            "answer": v.get("answer", ""),
            "sha": v.get("sha", ""),
            "mode": v.get("mode", ""),
            "down_votes": 0,
            "voters": [],
        })  # fmt: skip
        case["down_votes"] += 1
        case["voters"].append(user)
    return sorted(by_answer.values(), key=lambda c: (-c["down_votes"], c["id"]))
