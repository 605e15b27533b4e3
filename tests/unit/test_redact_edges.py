"""Redaction at the edges mutation testing found unguarded: a backslash that is escaped rather than
a continuation, the lines a continued value spans, a Terraform block's name, a template's string
literal, the first body line of a key whose BEGIN a read cut off."""

from __future__ import annotations

import base64
import random
import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from codeask.redact import REDACTED, mask_file, scan
from codeask.redact import templates as redact_templates
from conftest import shown_by_tools as shown

# Fake secrets are assembled at runtime so this file holds no secret-shaped literal.
HUMAN = "Hd7Fj2" + "Kl5Zx9Cv"
RANDOM = "Bn4Vc7" + "Xz2Lk9Jh"
MARK = REDACTED.format(kind="secret-assignment")
KEY_MARK = REDACTED.format(kind="private-key")


# --- A backslash at a line's end: a continuation, or an escaped backslash ----------------------

# `\\` at a line's end is an escaped backslash: the value ends there and the next line is its own.
ESCAPED = [
    (".env", f"DB_PASSWORD={HUMAN}\\\\\nLOG_LEVEL=debug"),
    ("deploy/run.sh", f"export API_TOKEN={RANDOM}\\\\\nLOG_LEVEL=debug"),
    ("conf/app.properties", f"db.password={HUMAN}\\\\\nlog.level=debug"),
    ("docs/setup.md", f"DB_PASSWORD={HUMAN}\\\\\n  then restart the service"),
]


@pytest.mark.parametrize(("path", "text"), ESCAPED)
def test_a_value_ending_in_an_escaped_backslash_does_not_run_into_the_next_line(
    path: str, text: str
) -> None:
    # Given a secret whose value ends in an escaped backslash, then an ordinary line
    out = shown(path, text)

    # Then the secret is masked on its line and the next line is shown as it is
    first, rest = text.split("\n", 1)
    assert MARK in out[0] and HUMAN not in out[0] and RANDOM not in out[0]
    assert out[1:] == rest.split("\n")


# `\\\` is an escaped backslash and then a continuation: the value goes on on the next line.
CONTINUED_AFTER_ESCAPE = [
    (".env", f"DB_PASSWORD=a\\\\\\\n    {HUMAN}\nLOG_LEVEL=debug"),
    ("deploy/run.sh", f"export API_TOKEN=x\\\\\\\n  {RANDOM}\nLOG_LEVEL=debug"),
    ("docs/setup.md", f"DB_PASSWORD=a\\\\\\\n    {HUMAN}\nthen restart the service"),
]


@pytest.mark.parametrize(("path", "text"), CONTINUED_AFTER_ESCAPE)
def test_a_continuation_after_an_escaped_backslash_carries_the_value_on(
    path: str, text: str
) -> None:
    out = shown(path, text)
    assert not any(HUMAN in line or RANDOM in line for line in out), out
    assert MARK in out[1]
    assert out[2] == text.split("\n")[2]


def test_masking_code_adds_only_the_lines_a_continued_value_spans() -> None:
    # Given code with a value continued over two lines between lines the gate judges alone
    lines = [
        'HEADER = "plain"',
        f'API_TOKEN = "{RANDOM}"',
        "DB_PASSWORD = \\",
        f'    "{HUMAN}"',
        'FOOTER = "plain"',
        f'OTHER_TOKEN = "{RANDOM}"',
    ]

    # When the file is masked as a whole
    out, counts = mask_file(lines, "src/settings.py")

    # Then only the continued value changes (one secret); every other line is left as it is
    # for the gate, which judges a line of code alone the same way
    assert [i for i, (a, b) in enumerate(zip(lines, out, strict=True)) if a != b] == [3]
    assert HUMAN not in "\n".join(out)
    assert counts == {"secret-assignment": 1}
    assert all(RANDOM not in scan(line)[0] for line in out)


# --- A Terraform block's name is the last quoted word before its `{` --------------------------


@pytest.mark.parametrize(
    ("header", "secret"),
    [
        ('variable "region" { # not "db_password"', False),
        ('variable "db_password" { # see "region"', True),
        ('variable "api_token" {', True),
        ('variable "api_token_name" {', False),
    ],
)
def test_a_terraform_default_is_judged_by_its_blocks_name_before_the_brace(
    header: str, secret: bool
) -> None:
    text = f'{header}\n  default = "{HUMAN}"\n}}'
    out = shown("vars.tf", text)
    assert (HUMAN not in out[1]) is secret
    assert out[0] == header and out[2] == "}"


# --- A template action whose only value is a string literal ------------------------------------


@pytest.mark.parametrize("literal", ["Zq7x", "hunter2x", HUMAN])
def test_a_string_literal_in_a_secrets_template_is_read_whole(literal: str) -> None:
    # Given a Helm Secret whose value is a literal passed through b64enc: a password of four
    # characters is a password (one fewer is not: a typed password needs four)
    text = (
        "apiVersion: v1\nkind: Secret\nstringData:\n"
        f'  password: {{{{ "{literal}" | b64enc }}}}\n'
        '  region: {{ "eu" | b64enc }}'
    )

    # When the template is shown
    out = shown("templates/secret.yaml", text)

    # Then the literal is masked and the short non-secret beside it is not
    assert literal not in out[3] and "[REDACTED:" in out[3]
    assert out[4] == text.split("\n")[4]


def test_a_three_character_literal_in_a_secrets_template_is_shown() -> None:
    text = 'apiVersion: v1\nkind: Secret\nstringData:\n  password: {{ "abc" | b64enc }}'
    assert shown("templates/secret.yaml", text) == text.split("\n")


# --- Key bodies whose BEGIN is not in the text read ---------------------------------------------


def key_body(lines: int = 6, seed: int = 3) -> list[str]:
    raw = random.Random(seed).randbytes(lines * 48 - 20)
    encoded = base64.b64encode(raw).decode()
    return [encoded[i : i + 64] for i in range(0, len(encoded), 64)]


END = "-----END RSA " + "PRIVATE KEY-----"


@pytest.mark.parametrize("before", [[], ["-----BEGIN CERTIFICATE-----"], ["notes:", ""]])
def test_a_read_starting_on_a_key_body_line_masks_it_from_its_first_line(
    before: list[str],
) -> None:
    # Given a read whose first key line is a body line, gutter-less (a raw file slice)
    lines = [*before, *key_body(), END, "after"]

    # When it is masked and scanned
    out = shown("certs/part.txt", "\n".join(lines))

    # Then every body line and the END line are masked, the first one too
    n = len(before)
    assert out[:n] == before
    assert out[n:-1] == [KEY_MARK] * (len(lines) - n - 1)
    assert out[-1] == "after"


def test_legacy_headers_right_at_the_start_of_a_read_are_masked_with_the_key() -> None:
    # Given a read that starts on a legacy encrypted key's header, a blank line, the body, END
    lines = ["DEK-Info: AES-128-CBC,3F17F5316E2BAC89", "", *key_body(), END, "after"]

    out = shown("certs/part.txt", "\n".join(lines))

    assert out[0] == KEY_MARK
    assert out[2:-1] == [KEY_MARK] * (len(lines) - 3)
    assert out[-1] == "after"


def test_a_key_body_in_numbered_output_keeps_its_gutter() -> None:
    # Given numbered output (read_file's gutter) starting on a body line
    body = key_body()
    lines = [f"{i + 10:>4}  {line}" for i, line in enumerate([*body, END])]

    out = scan("\n".join(lines))[0].split("\n")

    assert out[:-1] == [f"{i + 10:>4}  {KEY_MARK}" for i in range(len(body))]
    assert KEY_MARK in out[-1] and "END" not in out[-1]


# --- A Kubernetes Secret's data is judged by its own document's kind: line ---------------------


def test_a_secrets_indentation_in_one_document_admits_no_data_key_in_another() -> None:
    # Given a List holding a Secret (its kind: and data: one level in), then a document whose
    # Secret template sits at another indentation beside an ordinary `data:` mapping
    text = "\n".join(
        [
            "kind: List",
            "items:",
            "  - kind: Secret",
            "    data:",
            f"      token: {RANDOM}",
            "---",
            "kind: Bundle",
            "template:",
            "  kind: Secret",
            "  stringData:",
            f"    password: {HUMAN}",
            "settings:",
            "  cache:",
            "    data:",
            "      mode: fastest",
        ]
    )

    # When the manifest is shown
    out = shown("deploy/bundle.yaml", text)

    # Then both Secrets' values are masked and the other document's data is shown as written
    assert RANDOM not in out[4] and HUMAN not in out[10]
    assert out[14] == "      mode: fastest"
    assert out[11:14] == text.split("\n")[11:14]


def test_a_secret_with_both_data_and_string_data_has_every_value_masked() -> None:
    # Given one Secret with a data: mapping and then a stringData: mapping, under plain names
    data = "ZmFzdC1tb2Rl"  # base64, under a name that says nothing
    text = f"kind: Secret\ndata:\n  mode: {data}\nstringData:\n  region: eu-west-1"

    out = shown("deploy/secret.yaml", text)

    # Then the values of both mappings are masked, not only the last one's
    assert data not in out[2] and "[REDACTED:" in out[2]
    assert "eu-west-1" not in out[4]


@pytest.mark.parametrize("path", [".env", "deploy/.env", ".env.example", "prod.env", ".env.local"])
def test_a_dotenv_file_is_read_as_shell_so_a_typed_password_is_masked(path: str) -> None:
    # A password of letters only is masked where the file's language says every value is data
    text = "HOST=db\nDB_PASSWORD=" + "sunshine" + "lollipop"
    out = shown(path, text)
    assert out[0] == "HOST=db" and "lollipop" not in out[1] and "[REDACTED:" in out[1]


# --- PEM blocks in numbered output ------------------------------------------------------------

_KEY_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj"


def _legacy_key() -> list[str]:
    label = "RSA PRIVATE" + " KEY"
    return [
        f"-----BEGIN {label}-----",
        "Proc-Type: 4,ENCRYPTED",
        "DEK-Info: AES-128-CBC,ABCDEF0123456789ABCDEF0123456789",
        "",
        _KEY_BODY,
        _KEY_BODY[:20],
        f"-----END {label}-----",
        "after = 1",
    ]


@pytest.mark.parametrize("gutter", ["{n}  ", "{n:4} | ", "app.pem:{n}:"])
def test_the_end_line_of_a_key_in_numbered_output_keeps_its_gutter_whole(gutter: str) -> None:
    # `13  -----END …` read as rg's context gutter `13  -` left `-[REDACTED:private-key]`.
    lines = [gutter.format(n=n) + line for n, line in enumerate(_legacy_key(), start=10)]
    out = scan("\n".join(lines))[0].split("\n")
    assert out[6] == gutter.format(n=16) + "[REDACTED:private-key]"


def test_a_numbered_read_from_a_legacy_keys_header_masks_as_an_unnumbered_one() -> None:
    # The blank line between headers and body is a gutter alone in numbered output; the block
    # is found from its END up through it, as in the same lines without numbers.
    key = _legacy_key()
    for start in range(1, 4):
        plain = scan("\n".join(key[start:]))[0].split("\n")
        numbered = [f"{n}  {line}" for n, line in enumerate(key[start:], start=start + 1)]
        shown = scan("\n".join(numbered))[0].split("\n")
        assert [s.split("  ", 1)[1] for s in shown] == plain


# The regex the one-line action scanner replaced, kept as its model (it backtracked from each
# `{{` to the end of its line: a 40 KB Secret value of `{{` took 23 s to mask).
_ACTION_MODEL = re.compile(r"\{\{-?(.*?)-?\}\}")
_PIECES = ["{{", "}}", "{{-", "-}}", "-", "x", "\n", '"', "{", "}", " "]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=30).map("".join))
@example('{{ "a" }}{{- x -}}\n{{ y\n}} {{}} {{-}}')
def test_template_actions_on_a_line_are_what_the_regex_found(value: str) -> None:
    want = [(m.start(), m.end(), m.group(1)) for m in _ACTION_MODEL.finditer(value)]
    assert redact_templates.actions(value) == want


def test_a_secret_of_unclosed_template_actions_is_judged_in_one_pass() -> None:
    # Given Secret manifests whose data values are a million template openers, or closers
    # far below thousands of lines of openers
    for value in ("{{" * 1_000_000, "{{ x" * 300_000, "{{}}" * 500_000):
        lines = ["apiVersion: v1", "kind: Secret", "data:", f"  password: {value}"]
        # When masked: Then it is judged (a bare template is no typed-in secret) and kept
        out, _ = mask_file(lines, "k8s/secret.yaml")
        assert out == lines
    # ... lines of openers that close only far below are passed over a line at a time
    assert redact_templates.actions("{{\n" * 300_000 + "}}") == []
    # ... and values of a hundred thousand escaped quotes that never close (each quote had
    # opened a string read to the action's end), in a Secret, a ConfigMap and the gate's scan
    quotes = '{{ "' + '\\"' * 100_000 + " }}"
    for path in ("k8s/secret.yaml", "k8s/configmap.yaml"):
        lines = ["kind: Secret", "data:", "  password: " + quotes]
        assert mask_file(lines, path)[0] == lines
    assert scan('{"password": "' + quotes.replace('"', '\\"') + '"}')[1] == {}
    # ... and a literal typed into an action after a hundred thousand others is still masked
    key = "Zq8" + "x7Kp2" * 4 + "9vL"
    tail = f'{{{{ "{key}" | b64enc }}}}'
    lines = ["kind: Secret", "data:", "  password: " + "{{ .Values.x }}" * 100_000 + tail]
    out, _ = mask_file(lines, "k8s/secret.yaml")
    assert key not in "\n".join(out)


@pytest.mark.parametrize(
    "data",
    [
        "data: {pw: %s}",
        "data: {pw: %s,\n  user: YWRtaW4=}",
        'stringData: {"pw": "%s", "note": "a,b}c"}',
    ],
)
def test_a_secrets_data_in_flow_style_is_masked(data: str) -> None:
    # Given a Secret whose data is a flow mapping, which Kubernetes reads as well as a block one
    value = base64.b64encode(b"hunter22-but-longer-and-real").decode()
    text = "apiVersion: v1\nkind: Secret\n" + data % value + "\ntype: Opaque"
    out, _ = mask_file(text.split("\n"), "k8s/secret.yaml")
    # Then nothing inside the braces is shown, and the lines around stay
    assert value not in "\n".join(out) and "YWRtaW4" not in "\n".join(out)
    assert out[:2] == ["apiVersion: v1", "kind: Secret"] and out[-1] == "type: Opaque"
    # ... while a ConfigMap's flow data stays
    plain = text.replace("kind: Secret", "kind: ConfigMap").split("\n")
    assert mask_file(plain, "k8s/config.yaml")[0] == plain
