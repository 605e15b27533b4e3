"""The redaction gate on tool results: what is redacted, what is left alone, and failing closed."""

from __future__ import annotations

import base64
import json
import random
import threading
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeask.redact import (
    KINDS,
    REDACTED,
    Redaction,
    RedactionGate,
    count_markers,
    key_open_after,
    private_key_lines,
    scan,
)
from codeask.redact.confusables import fold
from codeask.redact.tokens import RULES
from conftest import examples

# Every fake secret is assembled at runtime so this file never holds a secret-shaped literal
# that a CI secret scanner would (rightly) flag.
AWS_ACCESS_KEY = "AKIA" + "IOSFODNN7" + "EXAMPLE"
# The 40-char secret access key, named so that this line is not itself an assignment.
AWS_KEY_40 = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
BODY36 = "a1B2c3D4e5F6g7H8i9J0" + "k1L2m3N4o5P6q7R8"
GITHUB_CLASSIC = "ghp_" + BODY36
GITHUB_FINE = "github_pat_" + "11ABCDEFG0123456789_" + "abcdefghijklmnopqrstuvwxyzABCDEF0123456789"
GITLAB = "glpat-" + "Ab3dEf6hIj9lMn2pQr5t"
SLACK_BOT = "xoxb-" + "1234567890-1234567890123-" + "AbCdEfGhIjKlMnOpQrStUvWx"
SLACK_USER = (
    "xoxp-" + "1234567890-1234567890123-1234567890123-" + "0123456789abcdef0123456789abcdef"
)
SLACK_APP = "xapp-" + "1-A0123456789-1234567890123-" + "0123456789abcdef0123456789abcdef"
SLACK_HOOK = (
    "https://hooks.slack.com/services/" + "T00000000/B00000000/" + "XXXXXXXXXXXXXXXXXXXXXXXX"
)
SLACK_WORKFLOW = (
    "https://hooks.slack.com/workflows/" + "T01234567/A01234567/" + "123456789012345678/AbCd"
)
SLACK_TRIGGER = (
    "https://hooks.slack.com/triggers/" + "T01234567/" + "1234567890123/0123456789abcdef"
)
ANTHROPIC = "sk-ant-" + "api03-" + "Xy9_" + BODY36 + "-" + BODY36 + "AA"
OPENAI_PROJECT = "sk-" + "proj-" + BODY36 + "_" + BODY36
OPENAI_SERVICE = "sk-" + "svcacct-" + BODY36 + "-" + BODY36
OPENAI_LEGACY = "sk-" + BODY36 + "T3Blbk" + "FJ" + "x1Y2z3W4"
GOOGLE = "AIza" + "SyA1234567890" + "abcdefghijklmnopqrstuv"
STRIPE_SECRET = "sk_" + "live_" + "4eC39HqLyjWDarjtT1zdp7dc"
STRIPE_RESTRICTED = "rk_" + "live_" + "51H8xYzAbCdEf2GhIjKlMn3o"
NPM = "npm_" + BODY36
PYPI = "pypi-" + "AgEIcHlwaS5vcmc" + "CJDk" + BODY36 + BODY36
JWT = (
    "eyJ" + "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    "." + "eyJ" + "zdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkphbmUifQ"
    "." + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)
RANDOM_VALUE = "Xk9f" + "j2Lq8mZp" + "4Rt7"
HEX_VALUE = "a8f5f167" + "f44f4964e6c998dee827110c"
HUMAN_PASSWORD = "hunter" + "22" + "!x"


def chars(alphabet: str, n: int, seed: int = 5) -> str:
    """A random run of `n` characters, with at least one upper, lower and digit when the
    alphabet has them (real keys mix every class)."""
    rng = random.Random(seed)
    while True:
        out = "".join(rng.choice(alphabet) for _ in range(n))
        if all(
            any(c in cls for c in out) for cls in (UPPER, LOWER, DIGITS) if set(cls) & set(alphabet)
        ):
            return out


UPPER, LOWER, DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz", "0123456789"
ALNUM = UPPER + LOWER + DIGITS
HEX = "0123456789abcdef"
AZURE_ACCOUNT_KEY = chars(ALNUM + "+/", 86) + "=="
AZURE_SIG = chars(ALNUM, 40) + "%3D"
TWILIO = "SK" + chars(HEX, 32)
SENDGRID = "SG." + chars(ALNUM + "_-", 22) + "." + chars(ALNUM + "_-", 43)
MAILGUN = "key-" + chars(HEX, 32)
HEROKU = "HRKU-AA" + chars(ALNUM + "_-", 58)
DIGITALOCEAN = "dop_" + "v1_" + chars(HEX, 64)
SHOPIFY = "shp" + "at_" + chars(HEX, 32)
VAULT = "hv" + "s." + chars(ALNUM + "_-", 95)
TERRAFORM = chars(LOWER + DIGITS, 14) + "." + "atlas" + "v1." + chars(ALNUM + "_-", 66)
SQUARE = "sq0" + "csp-" + chars(ALNUM + "_-", 43)
HUGGINGFACE = "hf" + "_" + chars(UPPER + LOWER, 34)
DATABRICKS = "dapi" + chars(HEX, 32)
GRAFANA = "glsa" + "_" + chars(ALNUM, 32) + "_" + chars(HEX, 8)
STRIPE_TEST = "sk_" + "test_" + chars(ALNUM, 24)
GITLAB_DEPLOY = "gl" + "dt-" + chars(ALNUM + "_-", 20)


def marker(kind: str) -> str:
    return REDACTED.format(kind=kind)


def pem_line(edge: str, label: str) -> str:
    return "-----" + edge + " " + label + "-----"


def private_label(algorithm: str) -> str:
    return algorithm + "PRIVATE" + " KEY"


def fake_key_body(lines: int = 8, seed: int = 7) -> list[str]:
    """Base64 body lines shaped like a real key (64 chars, short last line)."""
    raw = random.Random(seed).randbytes(lines * 48 - 20)
    encoded = base64.b64encode(raw).decode()
    return [encoded[i : i + 64] for i in range(0, len(encoded), 64)]


def pem_block(algorithm: str = "RSA ", body: list[str] | None = None) -> list[str]:
    label = private_label(algorithm)
    return [pem_line("BEGIN", label), *(body or fake_key_body()), pem_line("END", label)]


# --- Vendor tokens ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "before", "secret", "after"),
    [
        pytest.param("aws-access-key", "aws_access_key_id = ", AWS_ACCESS_KEY, "\n", id="aws-akia"),
        pytest.param("aws-access-key", "key: ", "ASIA" + AWS_ACCESS_KEY[4:], "", id="aws-asia"),
        pytest.param("aws-secret-key", "aws_secret_access_key = ", AWS_KEY_40, "", id="aws-ini"),
        pytest.param("aws-secret-key", "AWS_SECRET_ACCESS_KEY=", AWS_KEY_40, "", id="aws-env"),
        pytest.param("aws-secret-key", '"SecretAccessKey": "', AWS_KEY_40, '",', id="aws-json"),
        pytest.param("github-token", "export GITHUB_TOKEN=", GITHUB_CLASSIC, "", id="gh-classic"),
        pytest.param("github-token", "auth ", "gho_" + BODY36, " ok", id="gh-oauth"),
        pytest.param("github-token", "t = '", "ghs_" + BODY36, "'", id="gh-server"),
        pytest.param("github-token", "", GITHUB_FINE, "", id="gh-fine-grained"),
        pytest.param("gitlab-token", "GITLAB=", GITLAB, "", id="gitlab"),
        pytest.param("slack-token", 'SLACK_BOT_TOKEN="', SLACK_BOT, '"', id="slack-bot"),
        pytest.param("slack-token", "user token ", SLACK_USER, ".", id="slack-user"),
        pytest.param("slack-token", "app_token: ", SLACK_APP, "", id="slack-app"),
        pytest.param("slack-webhook", "post to ", SLACK_HOOK, " now", id="webhook-services"),
        pytest.param("slack-webhook", "url=", SLACK_WORKFLOW, "", id="webhook-workflows"),
        pytest.param("slack-webhook", "(", SLACK_TRIGGER, ")", id="webhook-triggers"),
        pytest.param("anthropic-key", "ANTHROPIC_API_KEY=", ANTHROPIC, "", id="anthropic"),
        pytest.param("openai-key", "OPENAI_API_KEY=", OPENAI_PROJECT, "", id="openai-project"),
        pytest.param("openai-key", "key = '", OPENAI_SERVICE, "'", id="openai-service"),
        pytest.param("openai-key", "", OPENAI_LEGACY, "", id="openai-legacy"),
        pytest.param("google-api-key", "maps?key=", GOOGLE, "&x=1", id="google"),
        pytest.param("stripe-key", "stripe.api_key = '", STRIPE_SECRET, "'", id="stripe-secret"),
        pytest.param("stripe-key", "", STRIPE_RESTRICTED, "", id="stripe-restricted"),
        pytest.param("npm-token", "//registry.npmjs.org/:_authToken=", NPM, "", id="npm"),
        pytest.param("pypi-token", "password = ", PYPI, "", id="pypi"),
        pytest.param("jwt", "Authorization: Bearer ", JWT, "", id="jwt-header"),
        pytest.param("jwt", '{"id_token": "', JWT, '"}', id="jwt-json"),
        pytest.param("url-password", "postgres://app:", "S3cr3t" + "Pa55", "@db:5432/x", id="url"),
        pytest.param("url-password", "redis://:", "S3cr3t" + "@Pa55", "@cache:6379", id="url-at"),
        pytest.param(
            "url-password", "mongodb+srv://u:", "S3cr3t" + "Pa55", "@c0.x.net/db", id="url-srv"
        ),
        pytest.param(
            "url-password", "http://ci:", "whywouldyou" + "sendthisinclear", "@x.io", id="url-lower"
        ),
        pytest.param("url-password", "http://ci:", "mellow" + "yello", "@x.io", id="url-11-lower"),
        pytest.param(
            "azure-storage-key",
            "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=",
            AZURE_ACCOUNT_KEY,
            ";EndpointSuffix=core.windows.net",
            id="azure-connection-string",
        ),
        pytest.param(
            "azure-sas-token",
            "https://acme.blob.core.windows.net/c?sv=2022-11-02&ss=b&sp=r&sig=",
            AZURE_SIG,
            "",
            id="azure-sas",
        ),
        pytest.param("twilio-key", "sid = '", TWILIO, "'", id="twilio"),
        pytest.param("sendgrid-key", "SENDGRID=", SENDGRID, "", id="sendgrid"),
        pytest.param("mailgun-key", "mg = Mailgun('", MAILGUN, "')", id="mailgun"),
        pytest.param("heroku-key", "heroku: ", HEROKU, "", id="heroku"),
        pytest.param("digitalocean-token", "do_token: ", DIGITALOCEAN, "", id="digitalocean"),
        pytest.param("shopify-token", "Shopify('", SHOPIFY, "')", id="shopify"),
        pytest.param("vault-token", "VAULT_TOKEN=", VAULT, "", id="vault"),
        pytest.param(
            "terraform-token",
            'credentials "app.terraform.io" { token = "',
            TERRAFORM,
            '" }',
            id="terraform-cloud",
        ),  # fmt: skip
        pytest.param("square-token", "client(", SQUARE, ")", id="square"),
        pytest.param("huggingface-token", "login('", HUGGINGFACE, "')", id="huggingface"),
        pytest.param("databricks-token", "host=x token=", DATABRICKS, "", id="databricks"),
        pytest.param("grafana-token", "Bearer ", GRAFANA, "", id="grafana"),
        pytest.param("stripe-key", "stripe.api_key = '", STRIPE_TEST, "'", id="stripe-test"),
        pytest.param("gitlab-token", "deploy token ", GITLAB_DEPLOY, "", id="gitlab-deploy"),
    ],
)
def test_vendor_token_is_replaced_by_marker_naming_its_kind(
    kind: str, before: str, secret: str, after: str
) -> None:
    # Given a tool result carrying a known secret format
    text = before + secret + after

    # When it is scanned
    out, counts = scan(text)

    # Then only the secret is replaced, by a marker that names its kind
    assert out == before + marker(kind) + after
    assert secret not in out
    assert counts == {kind: 1}


def test_anthropic_key_is_not_misnamed_as_openai() -> None:
    # Given an Anthropic key, which also starts with "sk-"
    # When it is scanned
    out, counts = scan("key=" + ANTHROPIC)

    # Then it is named as Anthropic's
    assert counts == {"anthropic-key": 1}
    assert marker("openai-key") not in out


def test_several_secrets_in_one_result_are_all_counted() -> None:
    # Given a result holding secrets of several kinds, one of them twice
    text = "\n".join([AWS_ACCESS_KEY, SLACK_BOT, "x = 1", JWT, SLACK_BOT])

    # When it is scanned
    out, counts = scan(text)

    # Then each is redacted and counted under its own kind, and lines are kept
    assert counts == {"aws-access-key": 1, "slack-token": 2, "jwt": 1}
    assert out.splitlines()[2] == "x = 1"
    assert out.count("\n") == text.count("\n")
    for secret in (AWS_ACCESS_KEY, SLACK_BOT, JWT):
        assert secret not in out


# --- Generic assignments ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "secret", "after"),
    [
        pytest.param("DB_PASSWORD=", HUMAN_PASSWORD, "", id="env"),
        pytest.param("export DB_PASSWORD=", RANDOM_VALUE, "", id="env-export"),
        pytest.param("DB_PASSWORD=", "hunter" + "22x", "  # prod", id="env-word-with-digits"),
        pytest.param('"api_key": "', HEX_VALUE, '",', id="json"),
        pytest.param("token: '", RANDOM_VALUE, "'", id="yaml-quoted"),
        pytest.param("password: ", RANDOM_VALUE, "", id="yaml-bare"),
        pytest.param('password = "', HUMAN_PASSWORD, '"', id="python"),
        pytest.param('self.secret_key = "', RANDOM_VALUE, '"', id="attribute"),
        pytest.param('password: str = "', HUMAN_PASSWORD, '"', id="annotated"),
        pytest.param('connect(host="db", password="', RANDOM_VALUE, '")', id="kwarg"),
        pytest.param("client_secret=", RANDOM_VALUE, "", id="client-secret"),
        pytest.param("X-Api-Key: ", HEX_VALUE, "", id="header"),
        pytest.param("Authorization: Bearer ", RANDOM_VALUE, "", id="bearer"),
        pytest.param("spring.datasource.password=", RANDOM_VALUE, "", id="properties"),
        pytest.param("mysql --password=", RANDOM_VALUE, " db", id="cli-flag"),
        pytest.param("'private_key' => '", RANDOM_VALUE, "',", id="php"),
        pytest.param('token := "', RANDOM_VALUE, '"', id="go"),
        pytest.param("  12 | ACCESS_KEY=", RANDOM_VALUE, "", id="numbered-line"),
        pytest.param('const authToken = "', RANDOM_VALUE, '";', id="js"),
        pytest.param('BASIC_AUTH = "', RANDOM_VALUE, '"', id="auth"),
    ],
)
def test_random_literal_assigned_to_secret_name_loses_only_its_value(
    before: str, secret: str, after: str
) -> None:
    # Given a random-looking literal assigned to a secret-named key
    text = before + secret + after

    # When it is scanned
    out, counts = scan(text)

    # Then the name and syntax stay and only the value is replaced
    assert out == before + marker("secret-assignment") + after
    assert secret not in out
    assert counts == {"secret-assignment": 1}


@pytest.mark.parametrize(
    ("text", "secret", "kind"),
    [
        pytest.param("aws-secret-access-key: ", AWS_KEY_40, "aws-secret-key", id="aws-hyphens"),
        pytest.param("aws --aws-secret-access-key=", AWS_KEY_40, "aws-secret-key", id="aws-flag"),
        pytest.param("PGPASSWORD=", "Hd7Fj2" + "Kl5Zx9Cv", "secret-assignment", id="env-word"),
        pytest.param("  env: [{name: DB_PASSWORD, value: ", HUMAN_PASSWORD, "secret-assignment",
                     id="flow-pair-bare"),
        pytest.param("  env: [{name: API_TOKEN, value: ", RANDOM_VALUE, "secret-assignment",
                     id="flow-pair-bare-word"),
    ],
)  # fmt: skip
def test_secret_shapes_in_running_text_are_named_for_their_kind(
    text: str, secret: str, kind: str
) -> None:
    # Given a secret in a shape whose syntax (not the file's name) says it is data: a hyphenated
    # AWS name, an environment word before a command, a name/value pair with a bare value
    line = text + secret + " psql -h db" if text.startswith("PG") else text + secret + "}]"

    # When it is scanned as a tool shows it
    out, counts = scan(line)

    # Then the value alone is replaced, by the marker of its kind
    assert out == line.replace(secret, marker(kind))
    assert counts == {kind: 1}


def test_a_dotted_capital_i_elsewhere_keeps_every_secret_in_place() -> None:
    # Given a text with U+0130 (lowercased to two code points) before a secret assignment
    # whose name is spelled with a Cyrillic capital О
    text = '# \u0130stanbul office\nAPI_T\u041eKEN = "' + RANDOM_VALUE + '"\nport = 1'

    # When it is scanned
    out, counts = scan(text)

    # Then exactly the value is replaced: the names are read at the right offsets
    assert out == text.replace(RANDOM_VALUE, marker("secret-assignment"))
    assert counts == {"secret-assignment": 1}


def test_look_alike_letters_fold_to_ascii_in_place_and_other_text_is_kept() -> None:
    # Given a text with Cyrillic, Greek and fullwidth look-alikes among letters that have none
    text = "p\u0430ssw\u03bfrd \uff50\uff57\uff44 \u00e9t\u00e9 \u2014 \u4e2d"

    # When it is folded
    out = fold(text)

    # Then each look-alike is its ASCII letter at the same position, everything else unchanged
    assert out == "password pwd \u00e9t\u00e9 \u2014 \u4e2d"
    assert fold("no look-alike here \u2014 caf\u00e9") == "no look-alike here \u2014 caf\u00e9"


def test_a_rejected_token_does_not_hide_the_next_one() -> None:
    # Given an access-key-shaped run glued to a word (not a key), then a real one
    text = "id: x" + AWS_ACCESS_KEY + "\nkey: " + AWS_ACCESS_KEY

    # When it is scanned
    out, counts = scan(text)

    # Then the glued one stays and the real one is redacted
    assert out == "id: x" + AWS_ACCESS_KEY + "\nkey: " + marker("aws-access-key")
    assert counts == {"aws-access-key": 1}


# --- Config shapes in tool output -----------------------------------------------------------


def read_file_rows(lines: list[str], first: int = 40) -> str:
    """What read_file prints: a header, then `NN  text` rows."""
    width = len(str(first + len(lines) - 1))
    rows = [f"{n:>{width}}  {line}" for n, line in enumerate(lines, start=first)]
    return "\n".join(
        [f"config/app.yaml lines {first}-{first + len(lines) - 1} of 90 at a3f9c21", *rows]
    )


def search_code_rows(lines: list[str], hit: int = 42) -> str:
    """What search_code prints: a header, the file, its scope, `>` on the hit, context around."""
    rows = [f"  {'>' if n == hit else ' '} {n:>5}  {line}"
            for n, line in enumerate(lines, start=hit - 1)]  # fmt: skip
    return "\n".join(["1 match in 1 file for `password`; complete list, ranked.", "",
                      "config/app.yaml [config] — 1 match", "  in db", *rows])  # fmt: skip


GATE_SHAPES = [
    pytest.param(["db:", "  password: " + HUMAN_PASSWORD, "  port: 5432"], id="yaml"),
    pytest.param(["  - DB_PASSWORD=" + HUMAN_PASSWORD], id="compose-env-list"),
    pytest.param(["ENV DB_PASSWORD=" + RANDOM_VALUE], id="dockerfile-env"),
    pytest.param(["ARG NPM_TOKEN=" + RANDOM_VALUE], id="dockerfile-arg"),
    pytest.param(["export X_TOKEN=" + RANDOM_VALUE + " \\"], id="shell-export-continued"),
    pytest.param(["spring.datasource.password=" + HUMAN_PASSWORD], id="properties"),
    pytest.param(['  password = "' + HUMAN_PASSWORD + '"'], id="hcl-quoted"),
    pytest.param(
        ["Server=db;Database=app;User Id=sa;Password=" + HUMAN_PASSWORD + ";"],
        id="connection-string",
    ),  # fmt: skip
    pytest.param(['{"name": "DB_PASSWORD", "value": "' + HUMAN_PASSWORD + '"}'], id="json-pair"),
    pytest.param(['<add key="DbPassword" value="' + HUMAN_PASSWORD + '" />'], id="xml-attribute"),
    pytest.param(["<password>" + HUMAN_PASSWORD + "</password>"], id="xml-element"),
    pytest.param(["callback: https://x.example/cb?token=" + RANDOM_VALUE + "&v=2"], id="query"),
]


@pytest.mark.parametrize("lines", GATE_SHAPES)
@pytest.mark.parametrize("render", [read_file_rows, search_code_rows], ids=["read", "search"])
def test_config_shapes_are_redacted_in_numbered_tool_output(
    lines: list[str], render: Callable[[list[str]], str]
) -> None:
    # Given a tool result that numbers its lines (and, for a search, adds headers and scopes)
    text = render(lines)
    secret = HUMAN_PASSWORD if HUMAN_PASSWORD in text else RANDOM_VALUE

    # When it passes the gate
    out, counts = scan(text)

    # Then the secret is gone, every line number and header is where it was
    assert secret not in out
    assert counts == {"secret-assignment": 1}
    before, after = text.split("\n"), out.split("\n")
    assert len(after) == len(before)
    for b, a in zip(before, after, strict=True):
        if secret in b:
            assert a == b.replace(secret, marker("secret-assignment"))
        else:
            assert a == b


@pytest.mark.parametrize(
    ("before", "credentials", "after"),
    [
        pytest.param("Authorization: Basic ", "admin:" + HUMAN_PASSWORD, "", id="header"),
        pytest.param("curl -H 'authorization: basic ", "ci:" + RANDOM_VALUE, "' https://x", id="curl-header"),
        pytest.param('{"auths": {"ghcr.io": {"auth": "', "bot:" + RANDOM_VALUE, '"}}}', id="docker-config"),
    ],
)  # fmt: skip
def test_basic_auth_credentials_are_recognised_by_decoding(
    before: str, credentials: str, after: str
) -> None:
    # Given user:password base64-encoded where basic auth is expected
    encoded = base64.b64encode(credentials.encode()).decode()

    # When it is scanned
    out, counts = scan(before + encoded + after)

    # Then it is redacted as basic auth
    assert out == before + marker("basic-auth") + after
    assert counts == {"basic-auth": 1}


def test_credentials_are_decoded_to_their_last_character() -> None:
    # Given basic auth whose base64 ends in `X` with no padding: the password is all in the
    # last group of four characters, which a decoder that drops that group would not see
    encoded = base64.b64encode(b"dev:pW").decode()
    assert encoded.endswith("X")

    # When it is scanned
    out, counts = scan("Authorization: Basic " + encoded)

    # Then it is read as the credentials it is
    assert out == "Authorization: Basic " + marker("basic-auth")
    assert counts == {"basic-auth": 1}


def test_curl_user_flag_password_is_redacted() -> None:
    out, counts = scan("curl -u deploy:" + HUMAN_PASSWORD + " https://ci.example/api")
    assert out == "curl -u deploy:" + marker("basic-auth") + " https://ci.example/api"
    assert counts == {"basic-auth": 1}


def test_base64_that_is_not_credentials_after_basic_is_left_alone() -> None:
    # "basic authentication" decodes to bytes without a colon: prose, not a credential
    text = "Configure basic authentication for the admin site."
    assert scan(text) == (text, {})


def test_a_base64_encoded_key_in_a_result_is_redacted() -> None:
    # Given a YAML line holding a base64-encoded private key, as read_file shows it
    key = "\n".join(pem_block()) + "\n"
    blob = base64.b64encode(key.encode()).decode()
    text = read_file_rows(["tls:", "  key: " + blob, "  crt: none"])

    # When it is scanned
    out, counts = scan(text)

    # Then the blob is gone and the numbered lines keep their places
    assert blob not in out
    assert out.split("\n")[2] == "41    key: " + marker("private-key")
    assert counts == {"private-key": 1}


# --- PEM private keys ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "algorithm", ["RSA ", "EC ", "DSA ", "OPENSSH ", "ENCRYPTED ", ""], ids=repr
)
def test_private_key_block_is_redacted_line_for_line(algorithm: str) -> None:
    # Given a file with a private key between ordinary lines
    block = pem_block(algorithm)
    text = "\n".join(["# settings", "x = 1", *block, "y = 2", ""])

    # When it is scanned
    out, counts = scan(text)

    # Then every line of the block, body included, is a marker and nothing else moved
    out_lines = out.split("\n")
    assert len(out_lines) == len(text.split("\n"))
    assert out_lines[:2] == ["# settings", "x = 1"]
    assert out_lines[2 : 2 + len(block)] == [marker("private-key")] * len(block)
    assert out_lines[2 + len(block) :] == ["y = 2", ""]
    assert counts == {"private-key": 1}
    assert not any(body_line in out for body_line in block[1:-1])


def test_pgp_private_key_block_is_redacted() -> None:
    # Given a PGP armored private key (blank line after BEGIN, checksum line before END)
    label = "PGP " + private_label("") + " BLOCK"
    block = [pem_line("BEGIN", label), "", *fake_key_body(), "=tW" + "To", pem_line("END", label)]

    # When it is scanned
    out, counts = scan("\n".join(block))

    # Then all key material is gone and the line count is unchanged
    assert counts == {"private-key": 1}
    assert out.count("\n") == len(block) - 1
    assert out.split("\n") == [marker("private-key")] * len(block)
    assert not any(line and line in out for line in block[2:-1])


def test_numbered_output_keeps_its_gutter_while_key_lines_are_redacted() -> None:
    # Given read_file-style numbered output of a key
    block = pem_block()
    text = "\n".join(f"{n:4} | {line}" for n, line in enumerate(block, start=10))

    # When it is scanned
    out, _ = scan(text)

    # Then line numbers survive and every line's content is the marker
    assert out.split("\n") == [
        f"{n:4} | {marker('private-key')}" for n in range(10, 10 + len(block))
    ]


def test_begin_without_end_is_redacted_to_the_end_of_the_text() -> None:
    # Given a result cut off in the middle of a key
    block = pem_block()
    text = "\n".join(["before", *block[:5]])

    # When it is scanned
    out, counts = scan(text)

    # Then everything from BEGIN on is redacted
    assert out.split("\n") == ["before", *[marker("private-key")] * 5]
    assert counts == {"private-key": 1}


@pytest.mark.parametrize("eol", ["\n", "\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("skip", [1, 4, 8], ids=lambda n: f"from-line-{n}")
def test_text_starting_inside_a_block_is_redacted_up_to_end(skip: int, eol: str) -> None:
    # Given a result that starts part way through a key's body (read_file with an offset)
    block = pem_block()
    tail = block[skip:]
    text = eol.join([*tail, "after = 1"])

    # When it is scanned
    out, counts = scan(text)

    # Then the body lines and the END line are redacted and what follows is untouched
    assert out.split(eol) == [*[marker("private-key")] * len(tail), "after = 1"]
    assert counts == {"private-key": 1}


def test_a_key_body_read_from_mid_block_below_a_blank_line_is_redacted_to_its_end() -> None:
    # Given a read that starts above a key's body: prose, a blank line, the body, END
    label = private_label("RSA ")
    lines = ["the key, as pasted:", "", *fake_key_body(), pem_line("END", label), "rest"]

    # When it is scanned
    out, counts = scan("\n".join(lines))

    # Then the body and END are gone; the prose, the blank line and what follows stay
    body = len(lines) - 4
    assert out.split("\n") == [*lines[:2], *[marker("private-key")] * (body + 1), "rest"]
    assert counts == {"private-key": 1}


@pytest.mark.parametrize("first", ["fragment", "one-line"])
def test_a_second_key_fragment_right_after_a_key_is_redacted_from_its_first_line(
    first: str,
) -> None:
    # Given a key (the end of one, or one escaped on one line), then at once the body of
    # another key whose BEGIN was cut off
    label = private_label("RSA ")
    if first == "fragment":
        before = [*fake_key_body()[5:], pem_line("END", label)]
    else:
        before = [json.dumps({"private_key": "\n".join(pem_block()) + "\n"})]
    lines = [*before, *fake_key_body(seed=11), pem_line("END", label)]

    # When it is scanned
    out, _ = scan("\n".join(lines))

    # Then no line of either key is left, the second key's first body line included
    out_lines = out.split("\n")
    assert len(out_lines) == len(lines)
    assert out_lines[len(before) :] == [marker("private-key")] * (len(lines) - len(before))
    assert not any(line in out for line in lines[len(before) :])
    assert private_key_lines(lines) == set(range(len(lines)))


def test_encrypted_legacy_key_seen_from_its_headers_is_redacted() -> None:
    # Given the middle of a legacy encrypted key: headers, a blank line, body, END
    label = private_label("RSA ")
    lines = ["Proc-Type: 4,ENCRYPTED", "DEK-Info: AES-128-CBC,3F17F5316E2BAC89", ""]
    lines += [*fake_key_body(), pem_line("END", label), "rest"]

    # When it is scanned
    out, _ = scan("\n".join(lines))

    # Then the body and END are gone, the line count is unchanged
    out_lines = out.split("\n")
    assert len(out_lines) == len(lines)
    assert out_lines[-1] == "rest"
    assert not any(line in out for line in fake_key_body())


def test_key_inside_string_literals_keeps_the_code_shape() -> None:
    # Given a key embedded in Python source as concatenated string literals
    block = pem_block()
    text = "KEY = (\n" + "\n".join(f'    "{line}\\n"' for line in block) + "\n)"

    # When it is scanned
    out, _ = scan(text)

    # Then each literal still opens and closes, holding only the marker
    assert out.split("\n")[1:-1] == [f'    "{marker("private-key")}\\n"'] * len(block)


def test_key_escaped_on_one_json_line_is_redacted_in_place() -> None:
    # Given a service-account style JSON file with the key on one line
    key = "\n".join(pem_block()) + "\n"
    text = json.dumps({"type": "service_account", "private_key": key, "client_email": "a@b.c"})

    # When it is scanned
    out, counts = scan(text)

    # Then the JSON keeps its shape and the key is gone
    assert json.loads(out)["private_key"] == marker("private-key") + "\n"
    assert json.loads(out)["client_email"] == "a@b.c"
    assert counts == {"private-key": 1}


def test_private_key_lines_covers_a_block_in_the_middle_of_a_file() -> None:
    # Given a whole file, read with line endings, with a key in the middle
    block = pem_block()
    lines = [line + "\n" for line in ["import os", "", *block, "", "def f():", "    pass"]]

    # When the key's lines are located
    found = private_key_lines(lines)

    # Then exactly the BEGIN, body and END lines are reported
    assert found == set(range(2, 2 + len(block)))


def test_private_key_lines_runs_an_unterminated_block_to_the_end() -> None:
    # Given a file whose key has no END line
    lines = ["a = 1", *pem_block()[:-1], "trailing"]

    # When the key's lines are located
    # Then the block is taken to run to the last line
    assert private_key_lines(lines) == set(range(1, len(lines)))


def test_private_key_lines_finds_nothing_in_ordinary_code() -> None:
    # Given code that only mentions the markers
    begin = pem_line("BEGIN", private_label("RSA "))
    end = pem_line("END", private_label("RSA "))
    lines = [f'if line == "{begin}":', "    inside = True", f'elif line == "{end}":', "    stop()"]

    # When the key's lines are located
    # Then there are none
    assert private_key_lines(lines) == set()


@pytest.mark.parametrize(
    "label", ["CERTIFICATE", "PUBLIC KEY", "RSA PUBLIC KEY", "CERTIFICATE REQUEST"]
)
def test_certificates_and_public_keys_are_left_alone(label: str) -> None:
    # Given a public PEM object, which is not a secret
    text = "\n".join([pem_line("BEGIN", label), *fake_key_body(), pem_line("END", label)])

    # When it is scanned
    # Then it comes back unchanged
    assert scan(text) == (text, {})


# --- Over-redaction --------------------------------------------------------------------------

LEAVE_ALONE = [
    "The quick brown fox jumps over the lazy dog; tokens are counted per request.",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b fixes abc1234 and 9fceb02d0ae5",
    'request_id = "550e8400-e29b-41d4-a716-446655440000"',
    '"ClientRequestToken": "a8ca07e4-61ec-4399-99f4-19853801bcd5",',
    '      "integrity": "sha512-v2kDEe57lecTulaDIuNTPy3Ry4gLGJ6Z1O3vE1krgXZNrsQ+LFTGHVxVjcXPs9GoWB'
    'i/vJNEC4RiqYQtJRUuT/Zw==",',
    "flask==2.0.1 \\\n    --hash=sha256:1c4c257b1f2b2c29d6c20c1b9a7d87b5bc1cb3ca2b0a8e11ab87b3cb8f93a4da",
    'checksum = "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2"',
    '    {file = "idna-3.4.tar.gz", hash = "sha256:814f528e8dead7d329833b91c5faa87d60bf71824cd3a12f'
    'ab1a66b00aaa3e2c"},',
    'LOGO = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5E'
    'rkJggg=="',
    'token_url = "https://oauth2.googleapis.com/token"',
    "password_field = forms.CharField(widget=forms.PasswordInput)",
    "tok = get_token()",
    "key = self.secret_key",
    "def verify_token(token: str) -> bool:",
    '  42 | token = request.headers["X-Token"]',
    'token = os.environ["SLACK_TOKEN"]',
    "token = settings.token",
    "password = get_secret('db')",
    "password = None",
    'password = ""',
    "token: ${SLACK_TOKEN}",
    "token: ${{ secrets.GITHUB_TOKEN }}",
    "api_key: <your-api-key>",
    "password: changeme",
    "password: xxxxxxxx",
    "token = 'your-token-here'",
    "password: '***'",
    'AUTH_BACKEND = "django.contrib.auth.backends.ModelBackend"',
    'token_header = "X-Auth-Token"',
    'tokenizer_name = "gpt2-medium"',
    'token_encoding = "base64url"',
    'author = "Jane Doe"',
    'author = "' + RANDOM_VALUE + '"',  # an author is no auth
    "max_tokens = 4096",
    "password = password2",
    "password = hashedPassword2",  # in code, a bare word is a variable
    "token = access_token",
    "    api_key=api_key,",
    "auth_token=request.cookies.get('auth')",
    "postgres://user:password@localhost/db",
    "key-" + "deadbeef" * 4,  # a word repeated, not a key: keys mix digits and letters
    "mirror-eu-west" + ".atlas" + "v1." + "abcdefghij" * 6 + "abcdef",  # no 14-alnum frame
    "redis://app:" + "lower" + "cased@cache:6379",  # ten lowercase letters: a docs example
    "url = f'postgres://{user}:{password}@{host}/db'",
    "xoxb-your-bot-token-here",
    "sk-some-very-long-kebab-case-identifier-name",
    "secret_path = '/var/run/secrets/kubernetes.io/serviceaccount/token'",
    "AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY}",
    "headers = {'Authorization': f'Bearer {token}'}",
    "- name: Checkout\n  with:\n    token: ${{ secrets.PAT }}",
    "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7 user@host",
    "",
    # config and tool output that names secrets without holding one
    "  42    password: ${DB_PASSWORD}",
    "  >    42  - name: DB_PASSWORD",
    "ENV DB_PASSWORD=${DB_PASSWORD}",
    "export GITHUB_TOKEN=$(gh auth token)",
    "  key: password",
    "secretKeyRef:",
    "password_min_length: 12",
    '{"name": "DB_HOST", "value": "db.internal"}',
    '<add key="LogLevel" value="Information" />',
    "<password>${DB_PASSWORD}</password>",
    "https://user:${PASS}@host/x",
    "http://localhost:8080/health",
    "amqp://guest:guest@localhost:5672/",
    # hashes and ids in config and lockfiles
    "    commit: 3f786850e387550fdab836ed7e6dc881de23001b",
    "image: registry.example.com/api@sha256:"
    "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03",
    'resolved "https://registry.yarnpkg.com/x/-/x-1.0.0.tgz#'
    '3f786850e387550fdab836ed7e6dc881de23001b"',
    "golang.org/x/text v0.3.7 h1:olpwvP2KacW1ZWvsR7uQhoyTYvKAupfQrRGBFM352Gk=",
    "request_id: 550e8400-e29b-41d4-a716-446655440000",
    "sig=abc, key-value pairs, SK-123 and dapi are just words here",
]


@pytest.mark.parametrize("text", LEAVE_ALONE)
def test_ordinary_text_is_returned_byte_for_byte(text: str) -> None:
    # Given text that holds no secret
    # When it is scanned
    # Then it comes back exactly as it was, with nothing counted
    assert scan(text) == (text, {})


def test_scanning_is_idempotent() -> None:
    # Given a result that has already been redacted
    once, _ = scan(
        "\n".join([*pem_block(), "DB_PASSWORD=" + RANDOM_VALUE, GITHUB_CLASSIC, JWT, SLACK_HOOK])
    )

    # When it is scanned again
    # Then the markers themselves are not mistaken for secrets
    assert scan(once) == (once, {})


def _ordinary_source(size: int) -> str:
    snippet = '''
class TokenStore{n}:
    """Keeps tokens for session {n}; never logs the secret."""

    def __init__(self, settings, password_field="password_{n}"):
        self.token = settings.token
        self.secret_key = settings.secret_key
        self.api_key = os.environ.get("API_KEY_{n}")
        self.auth = requests.auth.HTTPBasicAuth(user, password)

    def verify_token(self, token: str) -> bool:
        digest = hashlib.sha256(token.encode()).hexdigest()  # e.g. 9fceb02d0ae5
        return hmac.compare_digest(digest, self.expected_{n})
'''
    out: list[str] = []
    n = 0
    while sum(map(len, out)) < size:
        out.append(snippet.format(n=n))
        n += 1
    return "".join(out)


def test_large_ordinary_result_is_unchanged() -> None:
    # Given ~30 KB of ordinary code full of secret-ish names but no secrets (the size of the
    # largest tool result; the fast path is measured in bench/, not asserted here)
    text = _ordinary_source(30_000)

    # When it is scanned
    # Then it comes back byte-for-byte
    assert scan(text) == (text, {})


@pytest.mark.parametrize(
    ("text", "counts"),
    [
        pytest.param("token: a" + " " * 30_000, {}, id="long-trailing-spaces"),
        pytest.param(" " * 30_000 + "token=" + "x" * 10, {}, id="long-indent"),
        pytest.param("token: a b c, " * 2_000, {}, id="repeated-keywords"),
        pytest.param("password=" * 3_000, {}, id="repeated-assignments"),
        pytest.param('password = "' + "a" * 100 + "'" * 300, {}, id="unclosed-quotes"),
        pytest.param("://a:" * 5_000, {}, id="url-fragments"),
        pytest.param("1-" * 15_000, {}, id="gutter-lookalike"),
        pytest.param(
            pem_line("BEGIN", private_label("RSA ")) + "-" * 30_000,
            {"private-key": 1},
            id="truncated-begin-fails-closed",
        ),
    ],
)
def test_adversarial_shapes_complete_without_inventing_secrets(
    text: str, counts: dict[str, int]
) -> None:
    # Given a result shaped to provoke regex backtracking
    # When it is scanned (a hang here means a pathological regex; no timing is asserted)
    out, found = scan(text)

    # Then it completes with the expected verdict
    assert found == counts
    if not counts:
        assert out == text


# --- Kinds and counting ----------------------------------------------------------------------


def test_every_rule_names_a_documented_kind() -> None:
    # The marker list in kinds.py (and README's security section) is the contract with operators
    kinds = {rule.kind for rule in RULES} | {
        "private-key", "aws-secret-key", "azure-storage-key", "azure-sas-token", "basic-auth",
        "url-password", "kubernetes-secret", "secret-assignment", "unscanned",
    }  # fmt: skip
    assert kinds == set(KINDS)


def test_a_key_masked_line_by_line_counts_once_per_block() -> None:
    # Given a result with a masked key (two lines), a gap, another key, and two tokens
    key = marker("private-key")
    text = "\n".join([key, key, "x = 1", key, marker("jwt") + " " + marker("jwt")])

    # When its markers are counted
    # Then each key block counts once, each other marker once
    assert count_markers(text) == {"private-key": 2, "jwt": 2}


def test_the_gate_counts_lines_masked_before_it_saw_them() -> None:
    # Given a result built from a file that was masked whole (Toolbox.lines), plus a raw token
    text = "\n".join(["12  password: " + marker("secret-assignment"), "13  t = " + GITHUB_CLASSIC])

    # When it passes the gate
    result = RedactionGate().apply(text)

    # Then both count, by kind
    assert result.counts == {"secret-assignment": 1, "github-token": 1}


# --- The gate --------------------------------------------------------------------------------


def test_gate_returns_redacted_text_and_counts() -> None:
    # Given the gate with the real scanner
    gate = RedactionGate()

    # When a result with a secret passes through it
    result = gate.apply("token=" + GITHUB_CLASSIC)

    # Then the model-safe text and the counts come back
    assert result == Redaction("token=" + marker("github-token"), {"github-token": 1})
    assert gate.withheld == 0


@pytest.mark.parametrize(
    "error", [ValueError("boom"), RuntimeError("regex blew up"), MemoryError(), SystemExit(3)]
)
def test_scanner_failure_withholds_the_result(error: BaseException) -> None:
    # Given a gate whose scanner fails
    def failing(text: str) -> tuple[str, dict[str, int]]:
        raise error

    gate = RedactionGate(scanner=failing)

    # When a result with a secret passes through it
    result = gate.apply("DB_PASSWORD=" + RANDOM_VALUE)

    # Then the result is withheld with a short explanation and the secret never leaks
    assert result.withheld
    assert RANDOM_VALUE not in result.text
    assert result.text.startswith("[result withheld:")
    assert type(error).__name__ in result.text
    assert result.counts == {}
    assert gate.withheld == 1


@pytest.mark.parametrize(
    "returned", [None, "just text", ("text",), (b"bytes", {}), ("text", ["not", "a", "dict"])]
)
def test_malformed_scanner_output_withholds_the_result(returned: object) -> None:
    # Given a gate whose scanner returns something other than (str, dict)
    gate = RedactionGate(scanner=lambda text: returned)  # type: ignore[arg-type,return-value]

    # When a result passes through it
    result = gate.apply("DB_PASSWORD=" + RANDOM_VALUE)

    # Then nothing unverified reaches the model
    assert result.withheld
    assert RANDOM_VALUE not in result.text


def test_scanner_slower_than_timeout_withholds_the_result() -> None:
    # Given a gate with a short timeout and a scanner that blocks past it
    release = threading.Event()

    def stuck(text: str) -> tuple[str, dict[str, int]]:
        release.wait(timeout=5)
        return text, {}

    gate = RedactionGate(timeout_s=0.05, scanner=stuck)

    # When a result passes through it
    try:
        result = gate.apply("token=" + GITHUB_CLASSIC)
    finally:
        release.set()  # let the abandoned scan finish so no thread outlives the test

    # Then the result is withheld as a timeout and the secret is not in it
    assert result.withheld
    assert "timed out" in result.text
    assert GITHUB_CLASSIC not in result.text
    assert gate.withheld == 1


def test_gate_keeps_working_after_a_timeout() -> None:
    # Given a gate whose first scan hangs
    release = threading.Event()
    calls: list[str] = []

    def first_call_hangs(text: str) -> tuple[str, dict[str, int]]:
        calls.append(text)
        if len(calls) == 1:
            release.wait(timeout=5)
        return scan(text)

    gate = RedactionGate(timeout_s=0.05, scanner=first_call_hangs)

    # When a second result follows the timed-out one (given all the time it could need, so a
    # busy machine cannot make it time out too)
    try:
        first = gate.apply("a")
        gate.timeout_s = 60.0
        second = gate.apply("key " + AWS_ACCESS_KEY)
    finally:
        release.set()

    # Then only the first is withheld
    assert first.withheld
    assert second == Redaction("key " + marker("aws-access-key"), {"aws-access-key": 1})


def test_totals_accumulate_across_calls_and_withheld_results_are_counted() -> None:
    # Given one gate used for a whole conversation
    gate = RedactionGate()

    # When several results pass through it
    gate.apply("a " + AWS_ACCESS_KEY + " b " + SLACK_BOT)
    gate.apply(SLACK_BOT + "\n" + JWT)
    gate.apply("nothing to see")
    gate.scanner = lambda text: 1 / 0  # type: ignore[assignment,return-value]
    withheld = gate.apply(JWT)

    # Then totals add up per kind and the withheld result adds nothing to them
    assert dict(gate.totals) == {"aws-access-key": 1, "slack-token": 2, "jwt": 1}
    assert gate.withheld == 1
    assert "ZeroDivisionError" in withheld.text


# --- properties: any text keeps its lines --------------------------------------------------------

_SECRETS = [AWS_ACCESS_KEY, GITHUB_CLASSIC, SLACK_BOT, JWT, ANTHROPIC, STRIPE_SECRET, SLACK_HOOK,
            "password = " + RANDOM_VALUE, "DB_PASSWORD=" + HUMAN_PASSWORD, "\n".join(pem_block()),
            f'"api_key": "{RANDOM_VALUE}"', "postgres://u:" + RANDOM_VALUE + "@db/x"]  # fmt: skip


@st.composite
def text_with_secrets(draw: st.DrawFn) -> str:
    """Arbitrary text (any characters, line breaks of every kind) with secrets spliced in."""
    pieces = draw(st.lists(st.one_of(st.text(max_size=80), st.sampled_from(_SECRETS)), max_size=12))
    seps = draw(st.lists(st.sampled_from(["", " ", "\n", "=", ": ", "\r\n", "'"]), min_size=12))
    return "".join(p + s for p, s in zip(pieces, seps, strict=False))


@settings(max_examples=examples(300), deadline=None)
@given(text_with_secrets())
def test_redaction_keeps_the_line_count_of_any_text(text: str) -> None:
    out, _ = scan(text)
    assert out.count("\n") == text.count("\n")


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(text_with_secrets().map(lambda t: t.replace("\n", " ")), min_size=1, max_size=20),
       st.integers(1, 99_000))  # fmt: skip
def test_redaction_keeps_every_line_number_of_numbered_output(lines: list[str], first: int) -> None:
    # Given read_file-style output: a gutter of line numbers before each line of arbitrary text
    gutters = [f"{n:6} | " for n in range(first, first + len(lines))]
    text = "\n".join(g + line for g, line in zip(gutters, lines, strict=True))
    # When it is scanned, then every line keeps its place and its number
    out, _ = scan(text)
    after = out.split("\n")
    assert len(after) == len(lines)
    assert all(a.startswith(g) for a, g in zip(after, gutters, strict=True))


def test_a_key_on_one_line_is_redacted_and_what_follows_it_kept() -> None:
    # Given a whole PEM block written on one line inside an expression
    text = 'x = "-----BEGIN PRIVATE KEY-----MIIEvQ-----END PRIVATE KEY-----" + tail'
    # When it is scanned
    out, counts = scan(text)
    # Then only the block goes; the code after it stays
    assert out == 'x = "' + marker("private-key") + '" + tail'
    assert counts == {"private-key": 1}


def test_a_streamed_reader_carries_an_open_key_block_across_lines() -> None:
    # Given a file read line by line, with a key block, a one-line block and a certificate
    lines = [
        "x = 1",
        "-----BEGIN RSA PRIVATE KEY-----",
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
        "-----END RSA PRIVATE KEY-----",
        'k = "-----BEGIN PRIVATE KEY-----MIIE-----END PRIVATE KEY-----"',
        "-----BEGIN CERTIFICATE-----",
    ]
    # When the open/closed state is carried past each line
    states, is_open = [], False
    for line in lines:
        is_open = key_open_after(line, is_open)
        states.append(is_open)
    # Then it is open from the BEGIN line until the END line, and nowhere else
    assert states == [False, True, True, False, False, False]
