"""Secrets given in prose (docs, READMEs, comments, docstrings): the value masked, the sentence kept."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeask.redact import assignments, scan
from codeask.redact.assignments import prose_spans
from codeask.redact.scanner import lowercase
from codeask.snapshot import RepoRef, Snapshot
from codeask.tools import Toolbox
from conftest import write_tree

KEY = "7f3Kq9ZtX2mPw8RvL4nB6yHc1dJ0sGaE"
PASSWORD = "Xk9mQ2vL7pRwZ4aa"
MARK = "[REDACTED:secret-assignment]"


@pytest.mark.parametrize(
    "sentence",
    [
        "To call the API, use the token {v} in the header.",
        "The password is {v} for staging.",
        "The shared secret for the webhook is {v}.",
        "Set the API key to {v} before the first deploy.",
        "the access token was {v}, rotated since",
        "Credentials: ask ops; the credential for the build bot is `{v}`",
        "    # the passphrase of our signing key is {v}",
        '    """Call with the token {v} as bearer."""',
        "* **Token** {v}",
        "> secret {v}",
        "Tokens {v} and more",
        "password {v}",
    ],
)
@pytest.mark.parametrize("value", [KEY, PASSWORD])
def test_a_secret_in_a_sentence_is_masked_and_the_sentence_kept(sentence: str, value: str) -> None:
    # Given a line of prose that gives a secret after its name
    text = "intro\n" + sentence.format(v=value) + "\noutro\n"
    # When it is scanned
    masked, counts = scan(text)
    # Then only the value is replaced, on its own line, and the words around it stay
    assert value not in masked
    assert masked == "intro\n" + sentence.format(v=MARK) + "\noutro\n"
    assert counts == {"secret-assignment": 1}


@pytest.mark.parametrize(
    "sentence",
    [
        "The token expires after an hour and is refreshed by the client.",
        "The password is hashed with bcrypt before it is stored.",
        "Token refresh is handled in auth/refresh.py since 1a3e64c6c4a6.",
        "the token is 123e4567-e89b-12d3-a456-426614174000 for this request",  # a UUID: an id
        "kubectl create secret generic NAME --from-literal=smtp-password=SMTP_PASSWORD",
        "## @param redis.auth.password Redis&reg; password for trivy service",
        "the sort key is created_at then id",
        "a key x7Kp2Lm9Qr4Tz8Wn is not a secret's name without its qualifier",
        "tokenizer abc9DEF2ghi4JKL6 reads words",  # a longer word, not the name
        "my_token X7kP2mL9qR4tZ8wN",  # a name: the assignment rules judge names
        "$password X7kP2mL9qR4tZ8wN",
        "the password file is /etc/app/password.txt",
        "Your token is <YOUR_TOKEN_HERE> until you make one.",
        "the secret of it is simplicity itself",
        "password prompt:\\n timed out",
    ],
)
def test_prose_about_secrets_is_left_as_it_is(sentence: str) -> None:
    # Given prose that names a secret without giving one
    text = sentence + "\n"
    # When it is scanned, then nothing is masked
    assert scan(text) == (text, {})


def test_prose_masks_nothing_the_other_rules_mask() -> None:
    # Given a key assigned in config, and a sentence that gives the same key
    text = f"api_key: {KEY}\nThe API key is {KEY}.\n"
    # When it is scanned, then both are masked once each
    masked, counts = scan(text)
    assert masked == f"api_key: {MARK}\nThe API key is {MARK}.\n"
    assert counts == {"secret-assignment": 2}


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "the",
                "token",
                "tokens",
                "password",
                "passphrase",
                "secret",
                "credential",
                "api",
                "key",
                "keys",
                "for",
                "is",
                " ",
                "\t",
                "\n",
                "-",
                "_",
                "$",
                "(",
                "`",
                "*",
                ".",
                ":",
                '"',
                "'",
                "=",
                "s",
                "x",
                "Tokenizer",
                "KEY",
                "é",
                KEY,
            ]
        ),  # fmt: skip
        max_size=30,
    )
)
def test_a_name_is_found_wherever_it_stands_as_a_word(pieces: list[str]) -> None:
    # Given any text of the pieces the rule reads
    low = lowercase("".join(pieces))
    # When the names are found by their literals, then they are every offset where a name stands
    # after a sentence's character and before a space (a plural, closing quotes or a colon between)
    every = [
        at
        for at in range(len(low))
        if (at == 0 or low[at - 1] in assignments._PROSE_BEFORE)
        and any(
            low.startswith(word, at)
            and low[at + len(word) :].removeprefix("s").lstrip("*`'\":")[:1] in (" ", "\t")
            for word in assignments.PROSE_NAMES
        )
    ]
    assert [at for at, _, _ in assignments.prose_starts(low)] == every


def test_a_key_reads_back_only_as_far_as_its_qualifier(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a long text of keys, each of which looks back for its qualifier
    seen: list[int] = []
    real = assignments._WORD_BEFORE

    class Recording:
        def search(self, text: str, pos: int, endpos: int) -> object:
            seen.append(endpos - pos)
            return real.search(text, pos, endpos)

    monkeypatch.setattr(assignments, "_WORD_BEFORE", Recording())
    text = "the api key abc and " * 5000
    # When it is scanned
    list(prose_spans(text, lowercase(text)))
    # Then each look-back reads a bounded window, not the text before it
    assert len(seen) == 5000
    assert max(seen) <= assignments._QUALIFIER_CHARS


def test_a_search_for_a_secret_given_in_a_readme_finds_it_nowhere(tmp_path: Path) -> None:
    # Given a README that gives a token in a sentence, and a file with a decoy of its shape
    pattern, decoy = KEY[1:11], "g8Lr2YuW4n"  # the same shape: letter, digit, capitals
    root = write_tree(
        tmp_path / "repo",
        {"README.md": f"# Setup\n\nUse the token {KEY} in the header.\n",
         "src/app.py": "def call():\n    return 1\n"},
    )  # fmt: skip
    box = Toolbox(Snapshot(root, "d" * 40, RepoRef("acme", str(root))))
    # When the model reads the README and searches for the value and for the decoy
    read = box.run("read_file", {"path": "README.md"})
    shown = box.run("search_code", {"pattern": pattern})
    expected = box.run("search_code", {"pattern": decoy})
    # Then the read shows the sentence with the value masked, and the search answers as one for
    # text in no file
    assert KEY not in read.text and f"Use the token {MARK} in the header." in read.text
    assert shown.text.replace(pattern, decoy) == expected.text
    assert shown.text.startswith("No matches for")
