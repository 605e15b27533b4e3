"""Secret-shaped paths are denied by gitignore-style globs, built in and configured."""

from __future__ import annotations

import pytest

from codeask.denylist import DenyList
from codeask.pathglob import matches


@pytest.mark.parametrize(
    "path",
    [".env", "app/.env.production", "prod.env", ".envrc", "certs/server.pem", "k/tls.key",
     "store.p12", "deploy/id_rsa", "home/.ssh/config", "infra/terraform.tfstate",
     "infra/terraform.tfstate.backup", "secrets.auto.tfvars", ".aws/credentials", "credentials.json",
     ".netrc", ".npmrc", ".docker/config.json", ".git/config"],
)  # fmt: skip
def test_builtin_denies_secret_shaped_paths(path: str) -> None:
    assert DenyList().is_denied(path)


@pytest.mark.parametrize(
    "path",
    ["src/env.py", "docs/environment.md", "src/keyboard.py", "src/keys.py", "envoy.yaml",
     "src/credentials_helper.py", "README.md", "src/tokens.py", "tests/test_env.py"],
)  # fmt: skip
def test_ordinary_paths_are_not_denied(path: str) -> None:
    assert not DenyList().is_denied(path)


def test_configured_directories_deny_everything_below() -> None:
    deny = DenyList(("ops/secrets", "/config/private/"))
    assert deny.is_denied("ops/secrets/prod.yaml")
    assert deny.is_denied("ops/secrets")
    assert deny.is_denied("config/private/a/b.txt")
    assert not deny.is_denied("src/config/private/x")  # anchored with a leading /
    assert not deny.is_denied("ops/secrets_doc.md")


def test_rg_globs_exclude_every_denied_glob_and_fingerprint_changes() -> None:
    a, b = DenyList(), DenyList(("vault",))
    assert "!vault" in b.rg_globs() and "!.env" in a.rg_globs()
    assert a.fingerprint() != b.fingerprint()


@pytest.mark.parametrize(
    ("glob", "path", "expected"),
    [
        ("*.py", "a/b/c.py", True),
        ("*.py", "a/b/c.pyc", False),
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "src/x/a.py", False),
        ("src/**/*.py", "src/x/y/a.py", True),
        ("src/**/*.py", "src/a.py", True),
        ("**/tests/**", "a/tests/b/c.py", True),
        ("test_?.py", "x/test_a.py", True),
        ("[ab].txt", "a.txt", True),
        ("[!ab].txt", "a.txt", False),
    ],
)
def test_globs_follow_gitignore_rules(glob: str, path: str, expected: bool) -> None:
    assert matches(glob, path) is expected
