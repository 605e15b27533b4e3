"""A snapshot of part of a repo: its tools, citations and permalinks know nothing outside it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pygit2
import pytest

from codeask.denylist import DenyList
from codeask.mirror.materialise import View, materialise
from codeask.scope import PathScope
from codeask.snapshot import RepoRef, Snapshot
from codeask.tools import Toolbox
from codeask.verify import verify_answer
from conftest import GitWorkTree

SCOPE = PathScope().narrow(["services/payments/**", "libs/billing/**"])


@pytest.fixture
def snapshot(git_repo: Callable[..., GitWorkTree], tmp_path: Path) -> Snapshot:
    work = git_repo("mono")
    work.commit({"services/payments/charge.py": "def charge():\n    return 1\n",
                 "libs/billing/tax.py": "RATE = 0.2\n",
                 "services/search/index.py": "def charge_index():\n    return 'outside'\n",
                 "README.md": "# mono\n"},
                symlinks={"services/payments/up": "../search/index.py",
                          "services/payments/root": "../.."})  # fmt: skip
    root = tmp_path / "snap"
    view = View(DenyList(), SCOPE)
    listing = materialise(pygit2.Repository(str(work.path)), work.head(), root, view)
    snap = Snapshot(root, work.head(), RepoRef("mono", "https://github.com/acme/mono.git"),
                    scope=SCOPE)  # fmt: skip
    snap.seed_files(listing)
    return snap


def test_only_the_scope_is_on_disk_and_listed(snapshot: Snapshot) -> None:
    assert snapshot.files == ("libs/billing/tax.py", "services/payments/charge.py",
                              "services/payments/root", "services/payments/up")  # fmt: skip
    walked = Snapshot(snapshot.root, snapshot.sha, snapshot.repo, scope=SCOPE).files
    assert walked == snapshot.files
    assert not (snapshot.root / "services" / "search").exists()
    assert not (snapshot.root / "README.md").exists()


def test_the_tools_refuse_outside_paths_and_find_nothing_there(snapshot: Snapshot) -> None:
    tb = Toolbox(snapshot)
    hits = tb.run("search_code", {"pattern": "charge"}).text
    assert "services/payments/charge.py" in hits and "index" not in hits
    for path in ("services/search/index.py", "README.md", "services/search"):
        refused = tb.run("read_file", {"path": path})
        assert refused.is_error and "outside the part of mono" in refused.text
    assert tb.run("list_files", {"path": "libs/auth"}).is_error
    # A link inside the scope that points outside it leads nowhere
    assert tb.run("read_file", {"path": "services/payments/up"}).is_error
    assert tb.run("read_file", {"path": "services/payments/root/README.md"}).is_error
    # Parents of the scope can be listed: they show only what is inside it
    listing = tb.run("list_files", {"path": "services"}).text
    assert "services/payments/charge.py" in listing and "search" not in listing


def test_a_citation_outside_the_scope_is_unverified_and_gets_no_permalink(
    snapshot: Snapshot,
) -> None:
    v = verify_answer(
        "In `services/payments/charge.py:1`; also `services/search/index.py:1` and `README.md`.",
        snapshot,
    )
    urls = {m.path: m.url for m in v.citations}
    charge = urls["services/payments/charge.py"]
    assert charge is not None
    assert charge.startswith("https://github.com/acme/mono/blob/")
    assert sorted(m.path for m in v.unverified) == ["README.md", "services/search/index.py"]
    assert all(m.url is None for m in v.unverified)
