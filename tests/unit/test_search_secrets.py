"""search_code is no oracle on redacted secrets: a match inside a masked value counts as none."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from codeask import search_only
from codeask.snapshot import RepoRef, Snapshot
from codeask.tools import Toolbox
from codeask.workspace import Workspace
from conftest import GitWorkTree, cli_env, run_codeask, write_tree

SECRET = "Yu8Io3Pa6Sd1Fq"  # masked as a secret-assignment in app.yaml
DECOY = "Zq4Wm7Xe2Rt9Lp"  # the same shape, in no file
PEM_LINE = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj"
PEM_DECOY = "MIIEpAIBAAKCAQEAz9Xq2LmN4bVtR7sWcY3kHj8GfD1aPoE6uT5iZrQwXyMnBvC0"
B64 = "c3VwZXJzZWNyZXR2YWx1ZTE5"  # base64 of supersecretvalue19, data of a Kubernetes Secret
B64_DECOY = "bm90aGluZ2luYW55ZmlsZTE5"

FILES = {
    "config/app.yaml": f"db:\n  host: db.internal\n  password: {SECRET} # password of db\n"
    "  user: admin\n",
    "src/tls.py": 'KEY = """-----BEGIN PRIVATE KEY-----\n'
    + f"{PEM_LINE}\n" * 3
    + '-----END PRIVATE KEY-----\n"""\n',
    "deploy/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n"
    f"  token: {B64}\n",
    "deploy/netrc": f"machine db.internal login admin\n  password {SECRET}\n",
    "src/db.py": "def connect(host):\n    return open_db(host, user='admin')\n",
    "README.md": "Run `connect(host)` from src/db.py.\n",
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "repo", FILES)


def toolbox(root: Path) -> Toolbox:
    return Toolbox(Snapshot(root, "c" * 40, RepoRef("acme", str(root))))


def search(root: Path, **args: str) -> str:
    """A fresh toolbox each time, so nothing shown before changes what a search prints."""
    result = toolbox(root).run("search_code", args)
    assert not result.is_error, result.text
    return result.text


# Each oracle: the secret, a decoy of its shape that is in no file, the pattern made from a
# value, and the search's other arguments.
CASES = [
    pytest.param(SECRET, DECOY, lambda v: v[:-1] + "[a-z]", {}, id="character-class"),
    pytest.param(
        SECRET,
        DECOY,
        lambda v: f"^  password: {v[:-1]}[a-m]|^  password: {v[:-1]}[n-z]",
        {},
        id="alternation-counts",
    ),
    pytest.param(
        SECRET,
        DECOY,
        lambda v: f"^  password {v[:-1]}[a-m]|^  password {v[:-1]}[n-z]",
        {},
        id="the-finding",
    ),
    pytest.param(SECRET, DECOY, lambda v: v[:6], {}, id="value-prefix"),
    pytest.param(SECRET, DECOY, lambda v: v, {}, id="exact-value"),
    pytest.param(SECRET, DECOY, lambda v: f"password: {v[:3]}|password", {}, id="shadowed"),
    pytest.param(SECRET, DECOY, lambda v: f"{v[:-1]}[a-z]|#", {}, id="which-alternative"),
    pytest.param(SECRET, DECOY, lambda v: v, {"glob": "*.py"}, id="outside-the-glob"),
    pytest.param(SECRET, DECOY, lambda v: v, {"path": "src"}, id="outside-the-path"),
    pytest.param(PEM_LINE, PEM_DECOY, lambda v: v[:48], {}, id="pem-body"),
    pytest.param(B64, B64_DECOY, lambda v: v[:12], {}, id="kubernetes-secret-base64"),
]


def as_decoy(text: str, secret: str, decoy: str) -> str:
    """Text with every prefix of the secret (a pattern echoed, its words) spelled as the decoy's."""
    for n in range(len(secret), 2, -1):
        text = text.replace(secret[:n], decoy[:n])
    return text


@pytest.mark.parametrize(("secret", "decoy", "make", "extra"), CASES)
def test_a_search_for_a_secret_reads_as_one_for_text_in_no_file(
    repo: Path, secret: str, decoy: str, make: Callable[[str], str], extra: dict[str, str]
) -> None:
    shown = search(repo, pattern=make(secret), **extra)
    expected = search(repo, pattern=make(decoy), **extra)
    assert as_decoy(shown, secret, decoy) == expected


def test_the_oracle_of_the_finding_counts_no_alternative(repo: Path) -> None:
    pattern = f"^  password: {SECRET[:-1]}[a-m]|^  password: {SECRET[:-1]}[n-z]"
    shown = search(repo, pattern=pattern)
    assert shown.startswith("No matches for")
    assert "Matches per alternative" not in shown


def test_a_match_beside_a_secret_on_its_line_still_shows(repo: Path) -> None:
    shown = search(repo, pattern="password of db")
    assert shown.startswith("1 match in 1 file")
    assert "password: [REDACTED:secret-assignment] # password of db" in shown
    # an alternation that could reach into the value counts only what lies outside it
    shown = search(repo, pattern=r"password: \w+|db$")
    assert "Matches per alternative: `password: \\w+` 0, `db$` 2." in shown
    assert "3    password: [REDACTED:secret-assignment] # password of db" in shown


def test_called_from_lookups_skip_a_secret(repo: Path) -> None:
    box = toolbox(repo)
    outcome = box.search_outcome("connect")
    assert outcome.lookup is not None
    found, _ = outcome.lookup(SECRET, False, 100)
    assert found == []
    found, _ = outcome.lookup("db.internal", False, 100)
    assert sorted((m.path, m.line) for m in found) == [("config/app.yaml", 2), ("deploy/netrc", 1)]


def test_search_only_answer_finds_nothing_by_a_secret(repo: Path) -> None:
    shown = search_only.answer(f"Where is {SECRET} used?", toolbox(repo)).text
    expected = search_only.answer(f"Where is {DECOY} used?", toolbox(repo)).text
    assert shown.replace(SECRET, DECOY) == expected
    assert "config/app.yaml" not in shown


def test_the_cli_prints_no_match_for_the_oracle(
    repo: Path, tmp_path: Path, git_repo: Callable[..., GitWorkTree]
) -> None:
    work = git_repo("cli")
    work.commit(FILES)
    env = cli_env(tmp_path)
    outputs = []
    for value in (SECRET, DECOY):
        pattern = f"^  password {value[:-1]}[a-m]|^  password {value[:-1]}[n-z]"
        done = run_codeask(
            "tool", "search_code", "--repo", str(work.path), f'{{"pattern": "{pattern}"}}',
            env=env,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout.replace(value[:-1], "VALUE"))
    assert outputs[0] == outputs[1]
    assert outputs[0].startswith("No matches for")


def test_a_file_over_the_size_limit_gives_no_first_match_in_a_secret(repo: Path) -> None:
    filler = "".join(f"  key_{i}: value {i}\n" for i in range(3000))
    (repo / "config" / "big.yaml").write_text(f"db:\n  password: {SECRET}\n{filler}")

    def probe(value: str) -> str:
        box = Toolbox(Snapshot(repo, "c" * 40, RepoRef("acme", str(repo))), large_file_bytes=20_000)
        return box.run("search_code", {"pattern": f"{value[:-1]}[a-z]|value 2999$"}).text

    shown, expected = probe(SECRET), probe(DECOY)
    assert "first match at line 3002" in expected  # the file's own line, not the secret's
    assert as_decoy(shown, SECRET, DECOY) == expected


def test_a_workspace_of_several_repos_hides_a_secret_in_each(tmp_path: Path, repo: Path) -> None:
    other = tmp_path / "other"
    (other / "src").mkdir(parents=True)
    (other / "src" / "main.py").write_text("def main():\n    return connect('db.internal')\n")
    space = Workspace([
        Snapshot(other, "d" * 40, RepoRef("other", str(other))),
        Snapshot(repo, "c" * 40, RepoRef("acme", str(repo))),
    ])  # fmt: skip

    def run(value: str) -> str:
        return Toolbox(space).run("search_code", {"pattern": f"{value[:-1]}[a-z]|db.internal"}).text

    shown, expected = run(SECRET), run(DECOY)
    assert "acme/config/app.yaml" in expected and "other/src/main.py" in expected
    assert as_decoy(shown, SECRET, DECOY) == expected


def test_a_long_line_with_a_secret_is_cut_as_rg_cuts_one(repo: Path) -> None:
    (repo / "config" / "long.yaml").write_text(f"password: {SECRET} # " + "pad " * 200 + "needle\n")
    outcome = toolbox(repo).search_outcome("needle")
    [hit] = [h for f in outcome.files for h in f.hits]
    assert hit.text.endswith(" [... omitted end of long line]") and len(hit.text) < 400
    assert SECRET not in hit.text
