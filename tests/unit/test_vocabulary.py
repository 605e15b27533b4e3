"""The words of code and questions: identifiers split into words, and one stem for a word's forms."""

from __future__ import annotations

import pytest

from codeask.search import vocabulary
from codeask.search.vocabulary import compound, split_identifier, stem, synonyms, tokens
from conftest import record_calls


@pytest.mark.parametrize(
    "forms",
    [
        ("number", "numbers", "numbered", "numbering"),
        ("header", "headers"),
        ("retry", "retries", "retried", "retrying"),
        ("validate", "validates", "validated", "validating", "validation", "validations"),
        ("configure", "configured", "configuration"),
        ("cache", "caches", "cached", "caching"),
        ("skip", "skips", "skipped", "skipping"),
        ("use", "uses", "used", "using"),
        ("name", "names", "named", "naming"),
        ("parse", "parses", "parsed", "parsing"),
        ("connect", "connects", "connected", "connection"),
        ("expire", "expires", "expired", "expiration"),
        ("status", "statuses"),
        ("class", "classes"),
        ("format", "formats", "formatted", "formatting"),
        ("create", "created", "creation"),
        ("index", "indexes", "indexed"),
        ("run", "runs", "running", "runner", "runners"),
        ("handle", "handled", "handler", "handlers"),
        ("parse", "parser"),
        ("discover", "discovers", "discovered"),
        ("log", "logging", "logger"),
        ("time", "timer", "timing"),
    ],
)
def test_a_words_forms_share_one_stem(forms: tuple[str, ...]) -> None:
    assert len({stem(w) for w in forms}) == 1, {w: stem(w) for w in forms}


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("header", "head"),  # a header is not one who heads
        ("number", "numb"),
        ("order", "ord"),
        ("user", "use"),
        ("format", "form"),  # 'formatted' is not a derived -ate word
        ("string", "str"),
        ("redis", "red"),
        ("this", "thi"),
    ],
)
def test_different_words_keep_different_stems(a: str, b: str) -> None:
    assert stem(a) != stem(b)


def test_short_words_and_case() -> None:
    assert stem("API") == stem("api") == "api"
    assert stem("ttl") == "ttl"


def test_identifiers_split_into_words() -> None:
    assert split_identifier("should_strip_auth") == ["should", "strip", "auth"]
    assert split_identifier("getHTTPProxy") == ["get", "http", "proxy"]
    assert split_identifier("_IO_switch_to_get_mode") == ["io", "switch", "to", "get", "mode"]
    assert split_identifier("sha256 über-cache") == ["sha256", "ber", "cache"]
    assert tokens("MAX_RETRIES numbered") == ["max", "retry", "number"]


def test_synonyms_are_found_by_any_member_of_their_group() -> None:
    assert "backoff" in synonyms(stem("retries"))
    assert stem("configure") in synonyms(stem("config"))
    assert synonyms(stem("number")) and stem("count") in synonyms(stem("numbers"))
    assert synonyms("zebra") == ()
    # a password is what auth code handles (`redact_auth_from_url` masks user:password)
    assert stem("auth") in synonyms(stem("password"))
    # choosing what comes next is ranking by preference (`get_preference`)
    assert stem("preference") in synonyms(stem("chooses"))
    # what a question calls extra, code calls extended or additional (`extendedConfiguration`)
    assert stem("extended") in synonyms(stem("extra"))
    # the class a node sits in is the one wrapping it (`node_frame_class`)
    assert stem("wrapping") in synonyms(stem("enclosing"))


def test_a_compound_splits_only_into_words_the_question_says() -> None:
    wanted = {stem(w) for w in "count failed tests against the max".split()}
    assert compound("testsfailed", wanted) == ("test", "fail")
    assert compound("maxfail", wanted) == ("max", "fail")
    # one half a wanted word is not enough, nor are halves shorter than three letters
    assert compound("testcase", wanted) == ()
    assert compound("maxed", {"max", "ed"}) == ()
    assert compound("failed", wanted) == ()  # a word is not a compound of itself and nothing


def test_british_spellings_stem_as_the_american_ones_code_is_written_in() -> None:
    for british, american in [("licence", "LICENSE"), ("initialised", "initialize"),
                              ("colours", "color"), ("behaviour", "behavior"),
                              ("analyse", "analyze"), ("cancelled", "canceled")]:  # fmt: skip
        assert stem(british) == stem(american)
    # words that only end like a British spelling keep their own stems
    for word, other in [("four", "for"), ("promise", "promize"), ("silence", "silense")]:
        assert stem(word) != stem(other)


def test_a_long_token_is_not_tried_as_a_compound(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a minified or generated token of ten thousand letters in a body
    calls = record_calls(monkeypatch, vocabulary, "stem")
    # When it is read against the question's words
    got = compound("max" + "q" * 10_000 + "fail", {"max", "fail"})
    # Then no slice of it is stemmed (each split would stem two slices of it: quadratic)
    assert got == () and calls == []
    assert compound("maxfail", {"max", "fail"}) == ("max", "fail")
