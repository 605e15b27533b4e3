"""errors.public: an error's text fit to leave the machine, with none of the machine's paths in it."""

from __future__ import annotations

import pytest

from codeask.errors import public

SNAP = "/tmp/codeask/snapshots/billing-a3f9c21"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("cannot use /mnt/efs/mirrors/billing for mirrors", "cannot use …/billing for mirrors"),
        ("lock file '/mnt/mirrors/billing.lock' busy", "lock file '…/billing.lock' busy"),
        ("clone of file:///srv/git/billing.git failed", "clone of …/billing.git failed"),
        ("rg: /tmp/x/src/app.py: Permission denied", "rg: …/app.py: Permission denied"),
        ("(/var/task/codeask/tools.py)", "(…/tools.py)"),
        # not paths of this machine: links, fractions, and the words between slashes
        ("see https://github.com/acme/billing.git", "see https://github.com/acme/billing.git"),
        ("and/or 1/2 km/h, yes / no", "and/or 1/2 km/h, yes / no"),
        ("src/app.py: no such line", "src/app.py: no such line"),
    ],
)
def test_absolute_paths_are_named_by_their_last_name_only(text: str, shown: str) -> None:
    assert public(text) == shown


def test_a_path_under_a_known_root_is_shown_relative_to_it() -> None:
    roots = {SNAP: "", "/tmp/codeask/snapshots/ledger-0b1": "ledger/"}
    text = f"rg: {SNAP}/src/app.py: denied; {SNAP}; /tmp/codeask/snapshots/ledger-0b1/a\\b.py"
    assert public(text, roots) == "rg: src/app.py: denied; .; ledger/a\\b.py"
    # a root is a whole path: another directory that merely starts like it is not under it
    assert public(f"{SNAP}-old/x.py", roots) == "…/x.py"
