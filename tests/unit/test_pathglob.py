"""Globs mean what ripgrep's --glob means, checked against rg itself, and match in bounded time."""

from __future__ import annotations

import functools
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeask.pathglob import GlobError, parse_glob, select
from codeask.snapshot import RepoRef, Snapshot
from codeask.tools import Toolbox
from conftest import examples

RG = str(Path(sys.executable).parent / "rg")
NAME_CHARS = "ab.c-é"
GLOB_PIECES = [
    "a", "b", ".", "c", "é", "*", "*", "**", "?", "/", "/", "[ab]", "[!a]", "[^b]", "[a-c]",
    "{a,b}", "{a/b,c}", "{,a}", "**/", "/**", "\\*", "-", ",", "}", "[/]",
]  # fmt: skip


def rg_files(root: Path, globs: list[str]) -> set[str] | None:
    cmd = [RG, "--files", "--no-ignore", "--hidden", "--no-config"]
    for g in globs:
        cmd += ["--glob", g]
    done = subprocess.run(cmd, cwd=root, capture_output=True, timeout=60)
    if done.returncode == 2:
        return None  # rg refused the glob
    return {p for p in done.stdout.decode("utf-8", "surrogateescape").split("\n") if p}


def random_tree(rnd: random.Random, root: Path) -> list[str]:
    def name() -> str:
        while True:
            n = "".join(rnd.choice(NAME_CHARS) for _ in range(rnd.randint(1, 4)))
            # A name ending in '.' has no base name for globset, so which of its strategies a
            # glob gets decides whether it matches: a quirk not worth copying.
            if n.strip(".") and not n.endswith("."):
                return n

    paths: set[str] = set()
    for _ in range(40):
        p = "/".join(name() for _ in range(rnd.randint(1, 4)))
        parts = p.split("/")
        if any("/".join(parts[:i]) in paths for i in range(1, len(parts) + 1)) or any(
            q.startswith(p + "/") for q in paths
        ):
            continue  # a file where another path needs a directory
        (root / p).parent.mkdir(parents=True, exist_ok=True)
        (root / p).write_text("x")
        paths.add(p)
    return sorted(paths)


def random_glob(rnd: random.Random) -> str:
    g = "".join(rnd.choice(GLOB_PIECES) for _ in range(rnd.randint(1, 6)))
    if rnd.random() < 0.2:
        g = "!" + g
    if rnd.random() < 0.1:
        g = "/" + g
    return g


@pytest.mark.timeout(300)
@pytest.mark.parametrize("seed", range(6))
def test_random_globs_select_the_files_rg_selects(tmp_path: Path, seed: int) -> None:
    # Given random trees of odd names and random globs (classes, braces, `**`, negation, anchors)
    rnd = random.Random(seed)
    for tree in range(3):
        root = tmp_path / f"t{tree}"
        root.mkdir()
        paths = random_tree(rnd, root)
        for _ in range(30):
            globs = [random_glob(rnd) for _ in range(rnd.choice([1, 1, 1, 2]))]
            # When ripgrep and codeask each pick the files
            want = rg_files(root, globs)
            try:
                got: set[str] | None = set(select(globs, paths))
            except GlobError:
                got = None
            # Then they pick the same ones, and refuse the same globs
            assert got == want, f"globs {globs}: rg {want}, codeask {got}"


@pytest.mark.parametrize(
    ("glob", "selected"),
    [
        ("*.py", {"a.py", "src/a.py", "src/x/b.py"}),
        ("src/*.py", {"src/a.py"}),
        ("src/**", {"src/a.py", "src/x/b.py", "src/x/c.ts"}),
        ("**/x/*.{py,ts}", {"src/x/b.py", "src/x/c.ts"}),
        ("!src/**", {"a.py", "lib/z.ts"}),
        ("!x", {"a.py", "src/a.py", "lib/z.ts"}),
        ("!x/", {"a.py", "src/a.py", "lib/z.ts"}),
        ("[!a]*.py", {"src/x/b.py"}),
        ("src", set()),  # a glob names files; a directory's files need src/**
        ("/a.py", {"a.py"}),
    ],
)
def test_glob_meanings(glob: str, selected: set[str]) -> None:
    paths = ["a.py", "src/a.py", "src/x/b.py", "src/x/c.ts", "lib/z.ts"]
    assert set(select([glob], paths)) == selected


@pytest.mark.parametrize(
    ("glob", "reason"),
    [
        ("{a,{b,c}}", "nested"),
        ("[abc", "never closed"),
        ("{a,b", "never closed"),
        ("a\\", "escapes nothing"),
        ("[z-a]", "backwards"),
        ("#x", "comment"),
        ("{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}", "alternatives"),
    ],
)
def test_globs_rg_would_refuse_or_too_big_are_refused_with_a_reason(glob: str, reason: str) -> None:
    with pytest.raises(GlobError, match=reason):
        parse_glob(glob)


LONG_NAMES = ["a" * 250 + ".txt", "src/" + "ab" * 120 + "/x.py", "/".join(["a"] * 80) + "/b"]
PATHOLOGICAL = [
    "*a" * 12 + "*b",  # the dozen stars that took 12 s
    "*a" * 50 + "*b",  # fifty stars never finished
    "*" * 200 + "x",
    "a/**/" * 30 + "b",
    "**/a" * 40 + "c",
    "?*" * 60 + "!",
    "**/*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b/**/c",
    "[!/]*" * 5 + "q",
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("glob", PATHOLOGICAL, ids=lambda g: g[:24])
def test_pathological_globs_finish(glob: str) -> None:
    # Backtracking would take hours here; the pytest timeout is the check, not a stopwatch.
    assert select([glob], LONG_NAMES * 200) is not None


@pytest.mark.timeout(120)
def test_list_files_with_fifty_stars_over_many_long_names(tmp_path: Path) -> None:
    # Given a tree of long names and a glob of fifty stars
    for i in range(300):
        p = tmp_path / f"d{i % 7}" / (f"{i:03d}" + "a" * 200 + ".txt")
        p.parent.mkdir(exist_ok=True)
        p.write_text("x\n")
    tb = Toolbox(Snapshot(tmp_path, "f" * 40, RepoRef("r", str(tmp_path))))
    # When the model lists with it
    result = tb.run("list_files", {"glob": "*a" * 50 + "*b"})
    # Then it answers (nothing matches: every name ends in .txt)
    assert not result.is_error and result.text.startswith("No files")
    assert "300 files" in tb.run("list_files", {"glob": "*a" * 50 + "*.txt"}).text


# --- properties: agreement with a reference matcher, in bounded time ------------------------------

_LITERALS = ["a", "b", "."]
_TOKENS = [*_LITERALS, "*", "?", "/", "[ab]", "[!a]", "**/"]


def reference_match(glob: str, path: str) -> bool:
    """A small matcher of the same semantics, by dynamic programming over (token, position), so it
    never backtracks: `*` and `?` stop at `/`, `**/` is any run of whole directories, a class may
    match `/`, a trailing `/**` is everything below, and a glob without `/` matches at any depth."""
    anchored = glob.startswith("/")
    body = glob.removeprefix("/")
    tokens: list[str] = []
    if body.endswith("/**"):
        body, tail = body[:-3], ["/", "ALL"]
    else:
        tail = []
    i = 0
    while i < len(body):
        step = next(t for t in sorted(_TOKENS, key=len, reverse=True) if body.startswith(t, i))
        tokens.append(step)
        i += len(step)
    tokens += tail
    if not anchored and "/" not in glob and not glob.startswith("**/"):
        tokens.insert(0, "**/")

    @functools.cache
    def match(t: int, p: int) -> bool:
        if t == len(tokens):
            return p == len(path)
        tok, here = tokens[t], path[p] if p < len(path) else None
        if tok == "ALL":
            return True
        if tok == "*":
            return match(t + 1, p) or (here not in (None, "/") and match(t, p + 1))
        if tok == "**/":
            return match(t + 1, p) or any(
                path[k] == "/" and match(t + 1, k + 1) for k in range(p, len(path))
            )
        if here is None:
            return False
        ok = {"?": here != "/", "[ab]": here in "ab", "[!a]": here != "a"}.get(tok, here == tok)
        return ok and match(t + 1, p + 1)

    return match(0, 0)


def _well_formed(tokens: list[str]) -> bool:
    """Globs whose meaning is plain: `**/` only at the start or after `/`, no `**` made of two
    stars, no empty directory names, no trailing `/` (that would mean directories only)."""
    for before, after in zip(["/", *tokens], tokens, strict=False):
        if after == "**/" and before != "/":
            return False
        if after == "*" and before in ("*", "**/") or after == "/" and before in ("/", "**/"):
            return False
    return bool(tokens) and tokens[-1] not in ("/", "**/")


_GLOBS = st.builds(
    lambda anchor, tokens, below: anchor + "".join(tokens) + below,
    st.sampled_from(["", "/"]),
    st.lists(st.sampled_from(_TOKENS), min_size=1, max_size=10).filter(_well_formed),
    st.sampled_from(["", "", "/**"]),
)
_PATHS = st.lists(st.text("ab.", min_size=1, max_size=3), min_size=1, max_size=5).map("/".join)


@settings(max_examples=examples(600), deadline=None)
@given(_GLOBS, _PATHS)
def test_glob_matching_agrees_with_a_reference_matcher(glob: str, path: str) -> None:
    try:
        parsed = parse_glob(glob)
    except GlobError as e:
        # only ever refused for its size: each `[!a]` may match `/`, which doubles the work
        assert "alternatives" in str(e) and glob.count("[!") >= 5
        return
    assert parsed.matches_file(path) is reference_match(glob, path)
    assert (path in select([glob], [path])) is reference_match(glob, path)


@pytest.mark.timeout(300)  # backtracking would hang here; the timeout is the check, not a stopwatch
@settings(max_examples=examples(60), deadline=None)
@given(
    st.builds(
        lambda parts, star: "".join(parts) + star,
        st.lists(st.sampled_from(["*a", "*b", "*?", "a", "b", "?"]), min_size=20, max_size=60),
        st.sampled_from(["", "*"]),
    ),
    st.text("ab", min_size=100, max_size=400),
)
def test_many_stars_over_long_names_match_in_bounded_time_and_correctly(
    glob: str, name: str
) -> None:
    assert parse_glob(glob).matches_file(name) is reference_match(glob, name)
