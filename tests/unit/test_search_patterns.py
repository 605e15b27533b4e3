"""What a pattern means: smart case as rg reads it, top-level alternatives, plain words, word fit."""

from __future__ import annotations

import pytest

from codeask.search.patterns import Pattern, split_alternatives, word_fit


@pytest.mark.parametrize(
    ("pattern", "parts"),
    [
        ("a|b|c", ["a", "b", "c"]),
        ("def (a|b)", ["def (a|b)"]),
        (r"a\|b|c", [r"a\|b", "c"]),
        ("[|]x|y", ["[|]x", "y"]),
        ("[]|]x|y", ["[]|]x", "y"]),
        ("send_request", ["send_request"]),
    ],
)
def test_split_alternatives(pattern: str, parts: list[str]) -> None:
    assert split_alternatives(pattern) == parts


@pytest.mark.parametrize(
    ("pattern", "ignore_case"),
    [("retry_job", True), ("RetryPolicy", False), (r"\bretry\S+", True), (r"\p{Lu}x", True)],
)
def test_smart_case_counts_only_literal_capitals(pattern: str, ignore_case: bool) -> None:
    assert Pattern.smart(pattern).ignore_case is ignore_case


def test_plain_words_and_the_alternative_that_matched() -> None:
    assert Pattern.smart("redis|memcached").plain_words == ["redis", "memcached"]
    assert Pattern.smart(r"redis\.conf").plain_words == []
    p = Pattern.smart("common_fn|rare_fn")
    assert p.alternative_of("x = rare_fn(common_fn())") == 1
    assert Pattern.smart("one").alternative_of("one") is None


@pytest.mark.parametrize(
    ("text", "word", "fit"),
    [
        ("use redis here", "redis", "whole"),
        ("redis_client = 1", "redis", "part"),
        ("RedisClient()", "Redis", "part"),
        ("getRedisClient()", "Redis", "part"),
        ("redistribute it", "redis", "edge"),
        ("signatures", "signatur", "edge"),
        ("predistribute", "redis", "inside"),
    ],
)
def test_word_fit(text: str, word: str, fit: str) -> None:
    start = text.index(word)
    assert word_fit(text, start, start + len(word)) == fit
