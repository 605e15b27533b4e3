"""Behaviour of permalinks: remotes in every common form become web links that never leak tokens."""

from __future__ import annotations

import pytest

from codeask.permalinks import cite_label, commit_link, permalink, web_base

SHA = "a3f9c21" + "0" * 33
GH = "https://github.com/acme/billing"


@pytest.mark.parametrize(
    ("remote", "expected"),
    [
        ("https://github.com/acme/billing.git", ("github", GH)),
        ("https://github.com/acme/billing", ("github", GH)),
        ("https://github.com/acme/billing/", ("github", GH)),
        ("https://github.com/acme/billing.git/", ("github", GH)),
        ("  https://GitHub.com/acme/billing.git\n", ("github", GH)),
        ("https://github.com:443/acme/billing.git", ("github", GH)),
        ("git@github.com:acme/billing.git", ("github", GH)),
        ("git@github.com:acme/billing", ("github", GH)),
        ("ssh://git@github.com/acme/billing.git", ("github", GH)),
        ("ssh://git@ssh.github.com:443/acme/billing.git", ("github", GH)),
        ("git://github.com/acme/billing.git", ("github", GH)),
        ("https://x-access-token:ghs_S3CRET@github.com/acme/billing.git", ("github", GH)),
        ("https://ghp_S3CRET@github.com/acme/billing.git", ("github", GH)),
        (
            "https://github.acme-corp.com/platform/billing.git",
            ("github", "https://github.acme-corp.com/platform/billing"),
        ),
        (
            "git@github.acme-corp.com:platform/billing.git",
            ("github", "https://github.acme-corp.com/platform/billing"),
        ),
        ("https://gitlab.com/acme/billing.git", ("gitlab", "https://gitlab.com/acme/billing")),
        (
            "git@gitlab.com:acme/platform/payments/billing.git",
            ("gitlab", "https://gitlab.com/acme/platform/payments/billing"),
        ),
        (
            "https://oauth2:glpat-S3CRET@gitlab.acme.io/acme/platform/billing.git",
            ("gitlab", "https://gitlab.acme.io/acme/platform/billing"),
        ),
        (
            "ssh://git@gitlab.acme.io:2222/acme/billing.git",
            ("gitlab", "https://gitlab.acme.io/acme/billing"),
        ),
        (
            "https://gitlab.acme.io:8443/acme/billing.git",
            ("gitlab", "https://gitlab.acme.io:8443/acme/billing"),
        ),
        (
            "https://bitbucket.org/acme/billing.git",
            ("bitbucket", "https://bitbucket.org/acme/billing"),
        ),
        ("git@bitbucket.org:acme/billing.git", ("bitbucket", "https://bitbucket.org/acme/billing")),
        (
            "https://alice:app-pass-S3CRET@bitbucket.org/acme/billing",
            ("bitbucket", "https://bitbucket.org/acme/billing"),
        ),
    ],
)
def test_remote_urls_map_to_their_web_base(remote: str, expected: tuple[str, str]) -> None:
    # Given a remote in any form git accepts, When its web base is computed
    base = web_base(remote)
    # Then it names the host kind and the repository's web address, with no credentials
    assert base == expected
    assert "S3CRET" not in str(base)


@pytest.mark.parametrize(
    "remote",
    [
        "",
        "/srv/git/billing.git",
        "../billing",
        "./billing.git",
        "file:///srv/git/billing.git",
        "C:\\repos\\billing",
        "https://example.com/acme/billing.git",
        "git@example.com:acme/billing.git",
        "https://bitbucket.acme.com/scm/acme/billing.git",  # Bitbucket Server: other URL layout
        "https://github.com/acme",  # no repository
        "https://github.com/acme/billing/tree/main",  # a page, not a remote
        "https://gitlab.com/acme/billing/-/tree/main",
        "https://github.com/acme/../billing",
        "https://github.com:notaport/acme/billing",
        "ftp://github.com/acme/billing.git",
    ],
)
def test_remotes_without_a_known_web_ui_have_no_base(remote: str) -> None:
    assert web_base(remote) is None
    assert permalink(remote, SHA, "billing/worker.py", 1) is None
    assert commit_link(remote, SHA) is None


@pytest.mark.parametrize(
    ("remote", "start", "end", "expected"),
    [
        ("git@github.com:acme/billing.git", None, None, f"{GH}/blob/{SHA}/billing/worker.py"),
        ("git@github.com:acme/billing.git", 141, None, f"{GH}/blob/{SHA}/billing/worker.py#L141"),
        ("git@github.com:acme/billing.git", 141, 141, f"{GH}/blob/{SHA}/billing/worker.py#L141"),
        (
            "git@github.com:acme/billing.git",
            10,
            20,
            f"{GH}/blob/{SHA}/billing/worker.py#L10-L20",
        ),
        (
            "git@gitlab.com:acme/platform/billing.git",
            None,
            None,
            f"https://gitlab.com/acme/platform/billing/-/blob/{SHA}/billing/worker.py",
        ),
        (
            "git@gitlab.com:acme/platform/billing.git",
            10,
            None,
            f"https://gitlab.com/acme/platform/billing/-/blob/{SHA}/billing/worker.py#L10",
        ),
        (
            "git@gitlab.com:acme/platform/billing.git",
            10,
            20,
            f"https://gitlab.com/acme/platform/billing/-/blob/{SHA}/billing/worker.py#L10-20",
        ),
        (
            "git@bitbucket.org:acme/billing.git",
            None,
            None,
            f"https://bitbucket.org/acme/billing/src/{SHA}/billing/worker.py",
        ),
        (
            "git@bitbucket.org:acme/billing.git",
            10,
            None,
            f"https://bitbucket.org/acme/billing/src/{SHA}/billing/worker.py#lines-10",
        ),
        (
            "git@bitbucket.org:acme/billing.git",
            10,
            20,
            f"https://bitbucket.org/acme/billing/src/{SHA}/billing/worker.py#lines-10:20",
        ),
    ],
)
def test_permalinks_follow_each_hosts_line_syntax(
    remote: str, start: int | None, end: int | None, expected: str
) -> None:
    assert permalink(remote, SHA, "billing/worker.py", start, end) == expected


@pytest.mark.parametrize(
    ("path", "quoted"),
    [
        ("docs/my notes.md", "docs/my%20notes.md"),
        ("docs/c#/why?.md", "docs/c%23/why%3F.md"),
        ("src/café/naïve.py", "src/caf%C3%A9/na%C3%AFve.py"),
        ("web/app/[id]/page.tsx", "web/app/%5Bid%5D/page.tsx"),
        ("100%.txt", "100%25.txt"),
    ],
)
def test_path_segments_are_quoted_but_slashes_kept(path: str, quoted: str) -> None:
    assert permalink(GH, SHA, path, 3) == f"{GH}/blob/{SHA}/{quoted}#L3"


def test_a_token_in_the_remote_never_reaches_a_link() -> None:
    remote = "https://x-access-token:ghs_S3CRET@github.com/acme/billing.git"
    link = permalink(remote, SHA, "billing/worker.py", 1, 2)
    commit = commit_link(remote, SHA)
    assert link == f"{GH}/blob/{SHA}/billing/worker.py#L1-L2"
    assert commit == f"{GH}/commit/{SHA}"


@pytest.mark.parametrize(
    ("remote", "expected"),
    [
        (f"{GH}.git", f"{GH}/commit/{SHA}"),
        (
            "git@gitlab.com:acme/sub/billing.git",
            f"https://gitlab.com/acme/sub/billing/-/commit/{SHA}",
        ),
        ("https://bitbucket.org/acme/billing", f"https://bitbucket.org/acme/billing/commits/{SHA}"),
    ],
)
def test_commit_links_per_host(remote: str, expected: str) -> None:
    assert commit_link(remote, SHA) == expected


@pytest.mark.parametrize(("start", "end"), [(0, None), (20, 10), (None, 5), (-1, 3)])
def test_impossible_line_ranges_are_refused(start: int | None, end: int | None) -> None:
    with pytest.raises(ValueError):
        permalink(GH, SHA, "billing/worker.py", start, end)


@pytest.mark.parametrize(
    ("start", "end", "label"),
    [
        (None, None, "billing/worker.py @ a3f9c21"),
        (141, None, "billing/worker.py:141 @ a3f9c21"),
        (141, 141, "billing/worker.py:141 @ a3f9c21"),
        (10, 20, "billing/worker.py:10-20 @ a3f9c21"),
    ],
)
def test_cite_label_is_the_plain_fallback(start: int | None, end: int | None, label: str) -> None:
    assert cite_label("billing/worker.py", start, end, "a3f9c21") == label
