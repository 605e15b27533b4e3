"""PathScope: the part of a repository a channel may read, as gitignore-style globs."""

from __future__ import annotations

import pytest

from codeask.scope import PathScope

PAYMENTS = PathScope().narrow(["services/payments/**", "libs/billing/**"])


@pytest.mark.parametrize(
    ("path", "admitted"),
    [
        ("services/payments/api/charge.py", True),
        ("libs/billing/tax.py", True),
        ("services/search/index.py", False),
        ("services/payments-legacy/x.py", False),  # a sibling that shares a prefix
        ("README.md", False),
    ],
)
def test_a_scope_admits_only_its_subtrees(path: str, admitted: bool) -> None:
    assert PAYMENTS.admits(path) is admitted


@pytest.mark.parametrize(
    ("directory", "may"),
    [("", True), ("services", True), ("services/payments", True), ("services/payments/api", True),
     ("libs", True), ("services/search", False), ("docs", False), ("libs/billing-old", False)],
)  # fmt: skip
def test_a_walk_descends_only_where_the_scope_can_hold_something(directory: str, may: bool) -> None:
    assert PAYMENTS.may_hold(directory) is may


def test_exclusions_and_bare_names_read_as_in_gitignore() -> None:
    scope = PathScope().narrow(["services/**", "!services/legacy/**", "services/legacy/README.md"])
    assert scope.admits("services/api/app.py")
    assert not scope.admits("services/legacy/old.py")
    assert scope.admits("services/legacy/README.md")  # the last matching glob decides
    protos = PathScope().narrow(["*.proto"])  # no slash: a name at any depth
    assert protos.admits("a/b/c/api.proto") and not protos.admits("a/b/c/api.py")
    assert protos.may_hold("any/where")


def test_layers_intersect_so_a_grant_only_narrows_the_repository() -> None:
    repo = PathScope().narrow(["services/**"])
    grant = repo.narrow(["services/payments/**", "libs/**"])
    assert grant.admits("services/payments/x.py")
    assert not grant.admits("libs/billing/x.py")  # outside the repository's own paths
    assert not grant.may_hold("libs")


def test_fingerprints_name_a_scope_and_say_what_is_covered() -> None:
    whole = PathScope()
    assert whole.whole and whole.fingerprint() == "" and whole.admits("anything/at/all")
    other = PathScope().narrow(["libs/**"])
    assert (
        PAYMENTS.fingerprint()
        == PathScope().narrow(["services/payments/**", "libs/billing/**"]).fingerprint()
    )
    assert PAYMENTS.fingerprint() not in ("", other.fingerprint())
    assert whole.covers(PAYMENTS.fingerprint())  # the whole repo covers anything
    assert PAYMENTS.covers(PAYMENTS.fingerprint()) and not PAYMENTS.covers("")
    assert PAYMENTS.narrow([]) is PAYMENTS
    assert PAYMENTS.describe() == "services/payments/**, libs/billing/**"
