"""What a pattern means: smart case as rg reads it, top-level alternatives, plain words, word fit."""

from __future__ import annotations

import pytest

from codeask.search.patterns import Pattern, is_identifier, split_alternatives, word_fit


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
    mixed = Pattern.smart(r"_IO_cleanup|lock\(")
    assert mixed.plain_words == ["_IO_cleanup"]
    assert mixed.plain_word_of(0) == "_IO_cleanup" and mixed.plain_word_of(1) is None
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


@pytest.mark.parametrize(
    ("text", "word", "fit"),
    [
        ("_IO_cleanup ();", "_IO_cleanup", "whole"),
        ("_IO_cleanup_region_start (fp);", "_IO_cleanup", "edge"),
        ("include commonEnvVars", "commonEnv", "edge"),
        ("xx_IO_cleanup_region", "_IO_cleanup", "inside"),
        ("freeClusterNode(n)", "ClusterNode", "part"),
        ("do_set_arena_max (v)", "set_arena_max", "part"),
    ],
)
def test_a_name_inside_a_longer_name_is_another_name(text: str, word: str, fit: str) -> None:
    assert is_identifier(word)
    start = text.index(word)
    assert word_fit(text, start, start + len(word), identifier=True) == fit


def test_english_words_are_not_names() -> None:
    assert not is_identifier("redis") and not is_identifier("Redis")
    assert is_identifier("redis_client") and is_identifier("maxTasks")
