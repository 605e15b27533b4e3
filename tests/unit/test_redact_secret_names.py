"""Every rule that finds a secret by its key's name reads the same names: each password alias is
masked in every shape that names a key (a hostile review found netrc knowing only `password`)."""

from __future__ import annotations

import pytest

from codeask.redact import scan
from conftest import shown_by_tools as shown

# Fake secrets are assembled at runtime so this file holds no secret-shaped literal.
VALUE = "Hd7Fj2" + "Kl5Zx9Cv"

# Names of a password, as code and config spell them: each password word alone, inside longer
# names, in any case. judge_name reads them all as a password's whole name.
ALIASES = (
    "password",
    "passwd",
    "pwd",
    "passphrase",
    "db_password",
    "dbPasswd",
    "DB_PWD",
    "Passwd",
    "user-passphrase",
)
# Names ending in "pass" are passwords too, wherever a key is marked as one (`=`, `:`, a flag).
PASS_ALIASES = ("pass", "db_pass", "rootpass")

# (path, text) for every shape that names a key: {k} as written, {K} in capitals, {C} as a
# CamelCase word (CloudFormation parameters).
KEYED_SHAPES = {
    "yaml": ("conf/app.yaml", "db:\n  {k}: {v}\n  port: 5432"),
    "yaml-block": ("conf/app.yaml", "db:\n  {k}: |\n    {v}\n  port: 5432"),
    "ini": ("conf/app.ini", "[db]\n{k} = {v}\nport = 5432"),
    "ini-continued": ("conf/app.cfg", "[db]\n{k} =\n    {v}\nport = 5432"),
    "toml-multiline": ("conf/app.toml", "[db]\n{k} = '''\n{v}\n'''\nport = 5432"),
    "conf-directive": ("conf/redis.conf", "bind 127.0.0.1\n{k} {v}"),
    "env": (".env", "HOST=db\n{K}={v}"),
    "shell-export": ("deploy/run.sh", 'export {K}="{v}"\nexec app'),
    "dockerfile-env": ("Dockerfile", "FROM alpine\nENV {K}={v}"),
    "dockerfile-legacy-env": ("Dockerfile", "FROM alpine\nENV {K} {v}"),
    "makefile": ("Makefile", "{K} := {v}\nall:\n\techo hi"),
    "hcl": ("main.tf", 'resource "x" "y" {{\n  {k} = "{v}"\n}}'),
    "hcl-heredoc": ("main.tf", 'resource "x" "y" {{\n  {k} = <<EOT\n{v}\nEOT\n}}'),
    "terraform-variable": ("vars.tf", 'variable "{k}" {{\n  default = "{v}"\n}}'),
    "cloudformation-default": ("stack.yaml", "Parameters:\n  Db{C}:\n    Default: {v}"),
    "json": ("conf/app.json", '{{"db": {{"{k}": "{v}"}}}}'),
    "json-pair": ("task.json", '{{"name": "{K}", "value": "{v}"}}'),
    "kubernetes-env": ("deploy/app.yaml", "env:\n  - name: {K}\n    value: {v}"),
    "xml": ("conf/web.xml", "<db>\n  <{k}>{v}</{k}>\n</db>"),
    "python": ("src/app.py", 'DB = "db"\n{k} = "{v}"'),
    "javascript-object": ("web/app.js", 'const db = {{ {k}: "{v}" }};'),
    "query-string": ("docs/api.md", "GET /login?user=bob&{k}={v}&next=/"),
    "connection-string": ("src/db.cs", 'var c = "Server=db;User Id=bob;{K}={v};";'),
    "flag": ("deploy/run.sh", "tool --{k} {v} --verbose"),
    "flag-equals": ("deploy/run.sh", "tool --{k}={v} --verbose"),
    "config-command": ("deploy/run.sh", "npm config set {k} {v}"),
    "git-config": ("deploy/run.sh", "git config --global http.{k} {v}"),
}
# netrc entries: the keyword that precedes the password, in a netrc file and inside code.
NETRC_SHAPES = {
    "netrc": ("conf/netrc", "machine db.internal login admin {k} {v}"),
    "netrc-lines": ("conf/netrc", "machine db.internal\n  login admin\n  {k} {v}\nmachine b"),
    "netrc-default": ("conf/netrc", "default login anonymous {k} {v}"),
    "netrc-js-template": ("web/app.js", "const netrc = `machine h login u {k} {v}`;"),
    "netrc-js-template-lines": ("web/app.js", "const netrc = `machine h\n  login u\n  {k} {v}\n`;"),
    "netrc-python-string": ("src/app.py", 'NETRC = """machine h\nlogin u\n{k} {v}\n"""'),
    "netrc-shell-echo": ("ci/setup.sh", 'echo "machine h login ci {k} {v}" > ~/.netrc'),
}


def camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.replace("-", "_").split("_"))


def assert_only_the_value_masked(text: str, out: list[str]) -> None:
    assert not any(VALUE in line for line in out), out
    for before, after in zip(text.split("\n"), out, strict=True):
        if VALUE in before:
            assert "[REDACTED:" in after, (before, after)
        else:
            assert after == before


def fill(template: str, alias: str) -> str:
    return template.format(k=alias, K=alias.upper().replace("-", "_"), C=camel(alias), v=VALUE)


@pytest.mark.parametrize("alias", ALIASES + PASS_ALIASES)
@pytest.mark.parametrize("shape", sorted(KEYED_SHAPES))
def test_every_password_alias_is_masked_in_every_keyed_shape(shape: str, alias: str) -> None:
    # Given a password under any of its names, in any shape that names a key
    path, template = KEYED_SHAPES[shape]
    text = fill(template, alias)

    # When the file is shown
    out = shown(path, text)

    # Then the password is masked and nothing else changes
    assert_only_the_value_masked(text, out)


@pytest.mark.parametrize("alias", ALIASES)
@pytest.mark.parametrize("shape", sorted(NETRC_SHAPES))
def test_every_password_alias_is_a_netrc_keyword(shape: str, alias: str) -> None:
    path, template = NETRC_SHAPES[shape]
    text = fill(template, alias)
    assert_only_the_value_masked(text, shown(path, text))
    # An entry on one line is masked by the gate alone too (a tool's output of a line).
    for line in text.split("\n"):
        if "machine" in line and VALUE in line:
            assert VALUE not in scan(line)[0], line


@pytest.mark.parametrize(
    "text",
    [
        "the default password is set by the admin",
        "the default passwd file lists users",
        "machine learning password managers",
        "the machine learning pass rate",
        "machine h login u passwd $NETRC_PASSWORD",
        "machine h login u pwd changeme",
        "machine h login u password_policy strict",  # about a password, not one
    ],
)
def test_netrc_like_prose_and_placeholders_stay(text: str) -> None:
    assert shown("notes/setup.md", text) == [text]
