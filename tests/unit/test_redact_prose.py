"""Secrets given in sentences (docs, READMEs, comments, docstrings): the value masked, the sentence kept."""

from __future__ import annotations

import random
import string
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeask.redact import files, mask_file
from codeask.redact.confusables import fold
from codeask.redact.files import prose_spans
from codeask.redact.scanner import lowercase
from codeask.search.ripgrep import clean_text
from codeask.snapshot import RepoRef, Snapshot
from codeask.tools import Toolbox
from conftest import record_calls, write_tree

# Fake secrets are assembled at runtime so this file holds no secret-shaped literal.
KEY = "7f3Kq9ZtX2mP" + "w8RvL4nB6yHc1dJ0sGaE"
PASSWORD = "Xk9mQ2vL" + "7pRwZ4aa"
B64 = "c2VjcmV0dmFs" + "dWUxOTk5MjA="
MARK = "[REDACTED:secret-assignment]"


def masked(path: str, text: str) -> str:
    return "\n".join(mask_file(text.split("\n"), path)[0])


LEAKS = [
    "To call the API, use the token {v} in the header.",
    "The password is {v} for staging.",
    "The shared secret for the production webhook endpoint is {v}.",
    "The token we use in staging and in CI is {v}",
    "Set the API key to {v} before the first deploy.",
    "The API key, {v}, is for the sandbox.",
    "the access token was {v}, rotated since",
    "the credential for the build bot is `{v}`",
    "the passphrase of our signing key is {v}",
    "The token (see below) is {v}.",
    "The token is {v}[^1].",
    "The token is [{v}](https://dash.example.io).",
    "The token is <code>{v}</code>.",
    "The password is “{v}”.",
    "The token is _{v}_.",
    "The token is e.g. {v} or similar.",
    "* **Token** {v}",
    "<b>Token</b> {v}",
    "**API** key {v}",
    "Use the api_key {v} here.",
    "the token's value is {v}",
    "> secret {v}",
    "The secreт is {v}",  # a Cyrillic т
    "The 𝐩𝐚𝐬𝐬𝐰𝐨𝐫𝐝 is {v}",  # mathematical bold
    # found by a second review
    "Set `GITHUB_TOKEN` to {v} before running the release script.",
    "Set `spring.datasource.password` to {v} in staging.",
    "Set the `X-Auth-Token` header to {v} for the proxy.",
    "The token—{v}—must be rotated yearly.",
    "Token(s): {v}",
    "The admin password (case-sensitive; no spaces) is {v}",
    "The password (don't share!) is {v}",
    "The password is... {v}",
    "The token issued at 9 a.m. today is {v}",
    "The password for the admin account on the staging database server is {v}",
    "The root pwd is {v}",
    "The passcode is {v}",
    "Das Passwort lautet {v}",
]


@pytest.mark.parametrize("sentence", LEAKS)
@pytest.mark.parametrize("value", [KEY, PASSWORD, B64])
def test_a_secret_in_a_sentence_is_masked_and_the_sentence_kept(sentence: str, value: str) -> None:
    # Given a README line that gives a secret after its name
    text = "intro\n" + sentence.format(v=value) + "\noutro"
    # When the file is masked
    out = masked("README.md", text)
    # Then only the value is replaced, on its own line, and the words around it stay
    assert out == "intro\n" + sentence.format(v=MARK) + "\noutro"


@pytest.mark.parametrize(
    "value",
    ["/qLPv1GV3hdZxaJ6XoHdzw==", "Yb73qF4ECiN_TfYDEaP-T1W-RMDoTSKQ", "k7Qp2Xz9Lm4Vb8Nc3Rt6"],
)
def test_base64_and_base64url_values_are_read_whole(value: str) -> None:
    # a leading slash, dashes and underscores are a key's own characters
    text = f"The webhook secret is {value} for CI."
    assert masked("docs/setup.md", text) == f"The webhook secret is {MARK} for CI."


def test_every_value_of_a_sentence_is_masked() -> None:
    text = f"Tokens are {KEY} and {PASSWORD}; the rest is {B64}."
    assert masked("notes.txt", text) == f"Tokens are {MARK} and {MARK}; the rest is {B64}."


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("src/app.py", "def f():\n    # the password is {v}\n    return 1"),
        ("src/app.py", "def f():\n    return 1  # the token is {v}"),
        ("src/app.py", 'def f():\n    """Call with the token {v} as bearer."""'),
        ("src/main.go", "// The API key for the sandbox (rotate monthly) is {v}.\nfunc f() {{}}"),
        ("src/Main.java", "/**\n * The API key is {{@code {v}}}.\n */\nclass A {{}}"),
        ("deploy/app.conf", "; the secret (for staging) is {v}\nport 80"),
        ("deploy/values.yaml", "# the admin token is {v}\nport: 80"),
        ("deploy/values.yaml", "image: nginx  # the token is {v}\nport: 80"),
        ("deploy/app.properties", "! the staging password is {v}\nx=1"),
        ("src/a.go", "/* the password is {v} */\nfunc f() {{}}"),
        ("src/A.java", "int x = 1; /* the token is {v} */"),
        ("src/a.lua", "--[[ the token is {v} ]]\nx = 1"),
    ],
)
def test_a_sentence_in_a_comment_or_docstring_is_read_as_one(path: str, text: str) -> None:
    out = masked(path, text.format(v=KEY))
    assert KEY not in out and MARK in out
    assert out.count("\n") == text.count("\n")


@pytest.mark.parametrize(
    ("path", "text"),
    [
        # code is not a sentence, whatever words it uses
        ("src/auth.py", "def verify(token: str, tokens2Batch9x: bytes) -> bool:"),
        ("src/auth.py", "    for token in validTokens2Set4:"),
        ("src/auth.py", "    password = utf8_to_utf16_dup(v9k2m4)"),
        # names of algorithms, models, versions and things, near the words
        ("docs/security.md", "Passwords are hashed with Argon2id; legacy rows use pbkdf2_sha256."),
        ("docs/security.md", "The private key uses secp256k1, the session key ChaCha20Poly1305."),
        ("docs/security.md", "Access tokens are signed with SHA256withRSA by Base64Decoder2."),
        ("docs/models.rst", "The token limit for claude-3-5-sonnet-20241022 is 200k."),
        ("CHANGELOG.md", "- Token refresh fixed in v2.3.1b4 and later, see rotateKeys2Job."),
        ("docs/k8s.md", "The secret lives in deploy/k8s2/secret-v2.yaml for sec-team2@acme4u.com"),
        ("docs/k8s.md", "The token is stored in the X-Auth-Token2 header."),
        # hashes, commits and public keys
        ("CHANGELOG.md", "The token refresh fix was 9fceb02d0ae598e95dc970b74767f19372d61af8."),
        ("docs/api.md", "The token digest is e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("docs/ssh.md", "Add the deploy key ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl ops@ci"),
        # URLs and paths: a URL's password is the URL rule's, its path no secret
        ("CHANGELOG.md", "* Fix secret keys (#32882) ([05bd253](https://github.com/bitnami/charts/commit/05bd253ba79de4518ee665da2a9c6e8f5cd5b4f7))"),
        ("CHANGELOG.md", "* Fix secret keys, see github.com/bitnami/charts/commit/05bd253ba79de4518ee665da2a9c6e8f5cd5b4f7"),
        ("docs/install.md", "the token is in /releases/download/v1.2.3/tool-linux-amd64.tar.gz"),
        # public ids, generated names and data (a second review)
        ("docs/web3.md", "The USDC token contract on Ethereum is 0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48."),
        ("docs/api.md", "Authenticate with your API key, then retrieve the customer cus_9s6XKzkNRiz8i3 and invoice in_1MtHbELkdIwHu7ixl4OzzPMv"),
        ("docs/api.md", "The webhook secret is shown once; the endpoint is we_1Mr5jULkdIwHu7ix1ibLTM0x."),
        ("docs/k8s-client.md", "Load the service-account token, then call `AutoscalingV2beta2Api.listNamespaced()`."),
        ("docs/k8s-client.md", "The token review goes through AuthenticationV1beta1Api and IoK8sApiAdmissionregistrationV1beta1Api."),
        ("docs/misc.md", "![token flow](data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==)"),
        ("docs/api.json", '{"NextToken": "1w41l63U0xa8q7smH50vCxyTQqdxo69O3EmK28Bi5PcROI4wI/EyIJg==", "x": 1}'),
        ("docs/debug.md", "headers: {'x-shared-secret': 'shared-secret', 'server': 'envoy', 'via': '1.1 f752a4d41a2512ine9asfa.cloudfront.net'}"),
        # prose about secrets, ids and placeholders
        ("README.md", "The token expires after an hour and is refreshed by the client."),
        ("README.md", "The password is hashed with bcrypt before it is stored."),
        ("README.md", "the token is 123e4567-e89b-12d3-a456-426614174000 for this request"),
        ("README.md", "Your token is <YOUR_TOKEN_HERE> until you make one."),
        ("README.md", "a key x7Kp2Lm9Qr4Tz8Wn3 is not a secret's name without its qualifier"),
        ("README.md", "The token type is JWT_HS256 and the encoding cl100k_base."),
    ],
)  # fmt: skip
def test_words_that_are_no_secret_stay_as_written(path: str, text: str) -> None:
    assert masked(path, text) == text


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
                "passwort",
                "passcode",
                "pwd",
                "secret",
                "credential",
                "creds",
                "credss",
                "apikey",
                "api",
                "key",
                "contraseña",
                "for",
                "is",
                " ",
                "\t",
                "\n",
                "—",
                "\ufffd",
                "-",
                "_",
                "$",
                "(",
                ")",
                "(s)",
                "`",
                "*",
                ".",
                ":",
                ",",
                "'s",
                "’s",
                '"',
                "'",
                "</b>",
                "</",
                "=",
                "s",
                "x",
                "Tokenizer",
                "KEY",
                "é",
                "“",
                KEY,
            ]
        ),  # fmt: skip
        max_size=30,
    )
)
def test_a_name_is_found_wherever_it_stands_before_a_space(pieces: list[str]) -> None:
    # Given any text of the pieces the rule reads
    low = lowercase("".join(pieces))
    # When the names are found by their literals, then they are every offset where a name stands
    # before a space, a dash or a replaced byte (a plural, a possessive, closing markup, quotes, a
    # colon or a comma between)
    names = ("password", "passwd", "passphrase", "passwort", "passcode", "pwd", "token",
             "secret", "credential", "creds", "apikey", "key", "contraseña", "contrasena")  # fmt: skip

    def stands(at: int, word: str) -> bool:
        if not low.startswith(word, at):
            return False
        rest = low[at + len(word) :]
        if word == "creds" and rest.startswith("s"):
            return False  # `credss` is no name
        for suffix in ("'s", "’s", "(s)", "s"):
            if rest.startswith(suffix):
                rest = rest[len(suffix) :]
                break
        while True:
            if rest[:1] and rest[:1] in "*`'\"”’»:,":
                rest = rest[1:]
            elif rest.startswith("</") and ">" in rest and rest[2 : rest.index(">")].isalpha():
                rest = rest[rest.index(">") + 1 :]
            else:
                return rest[:1] != "" and rest[:1] in " \t—–\ufffd"

    every = sorted({at for at in range(len(low)) for w in names if stands(at, w)})
    assert [at for at, _, _ in files.prose_starts(low)] == every


def test_each_word_after_a_name_is_judged_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a long line of names, each followed by a word with digits
    judged = record_calls(monkeypatch, files, "_random_in_prose")
    text = "token a1b2c3 " * 5000
    # When it is scanned, then each word is judged once, not once per name before it
    prose_spans(text, lowercase(text))
    assert len(judged) == 5000


def test_a_key_reads_back_only_as_far_as_its_qualifier(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a long text of keys whose qualifier is in markup, which is read back by a pattern
    seen: list[int] = []
    real = files._WORD_BEFORE

    class Recording:
        def search(self, text: str, pos: int, endpos: int) -> object:
            seen.append(endpos - pos)
            return real.search(text, pos, endpos)

    monkeypatch.setattr(files, "_WORD_BEFORE", Recording())
    text = "the **api** key abc.\n" * 5000  # each key in a clause of its own: each judged
    # When it is scanned, then each look-back reads a bounded window, not the text before it
    prose_spans(text, lowercase(text))
    assert len(seen) == 5000
    assert max(seen) <= files._QUALIFIER_CHARS


def test_a_no_break_space_is_shown_as_a_space_not_dropped() -> None:
    # A dropped separator joins the words on either side: `tokenX`, read by no rule
    assert clean_text("Our token\u00a0X works\u2028and\u3000more".encode()) == (
        "Our token X works and more"
    )
    assert clean_text(b"a\x0bb\x0cc\xc2\x85d\x1fe\r") == "a b c d e"  # a CR ends a CRLF line


def test_a_replaced_byte_between_name_and_value_separates_them() -> None:
    # a Latin-1 no-break space (byte A0) in a UTF-8 reading is U+FFFD, shown as such
    text = f"The staging password\ufffdis {KEY}"
    assert masked("docs/legacy.txt", text) == f"The staging password\ufffdis {MARK}"


def test_look_alike_letters_of_more_scripts_fold_one_for_one() -> None:
    text = "secreт tokeո 𝐩𝐚𝐬𝐬𝐰𝐨𝐫𝐝 𝟕"
    assert fold(text) == "secret token password 7"
    assert len(fold(text)) == len(text)


def test_a_search_for_a_secret_given_in_prose_finds_it_nowhere(tmp_path: Path) -> None:
    # Given a README and a code comment that give a key in a sentence
    pattern, decoy = KEY[1:11], "g8Lr2YuW4n"  # the same shape: letter, digit, capitals
    root = write_tree(
        tmp_path / "repo",
        {"README.md": f"# Setup\n\nUse the token {KEY} in the header.\n",
         "src/app.py": f"def call():\n    # the staging token is {KEY}\n    return 1\n"},
    )  # fmt: skip
    box = Toolbox(Snapshot(root, "d" * 40, RepoRef("acme", str(root))))
    # When the model reads them and searches for the value and for the decoy
    readme = box.run("read_file", {"path": "README.md"})
    code = box.run("read_file", {"path": "src/app.py"})
    shown = box.run("search_code", {"pattern": pattern})
    expected = box.run("search_code", {"pattern": decoy})
    # Then the reads show the sentences with the value masked, and the search answers as one for
    # text in no file
    assert KEY not in readme.text and f"Use the token {MARK} in the header." in readme.text
    assert KEY not in code.text and f"# the staging token is {MARK}" in code.text
    assert shown.text.replace(pattern, decoy) == expected.text
    assert shown.text.startswith("No matches for")


def test_most_random_keys_in_a_sentence_are_masked() -> None:
    # Given 300 random 32-character keys (a fixed seed), each given in a sentence
    rng = random.Random(12)
    alphabet = string.ascii_letters + string.digits
    keys = ["".join(rng.choice(alphabet) for _ in range(32)) for _ in range(300)]
    lines = [f"The API token is {k} for staging." for k in keys]
    # When the file is masked, then at least 85 % of them are (92 % measured: a key whose digits
    # fall in one group reads as a name's)
    out = mask_file(lines, "docs/setup.md")[0]
    assert sum(k not in line for k, line in zip(keys, out, strict=True)) >= 0.85 * len(keys)
