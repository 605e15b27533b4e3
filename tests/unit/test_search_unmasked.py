"""The secret-oracle filter's shortcut: hits in files of code that stand alone are judged on the
line rg printed; every file whose secrets only the whole file shows is still masked whole."""

from __future__ import annotations

import base64
import textwrap
from pathlib import Path

import pytest

from codeask.redact import mask_file, scan
from codeask.search.ripgrep import RawMatch, find_rg
from codeask.search.unmasked import _WHOLE_FILE_SIGNS, Signs, stands_alone
from codeask.snapshot import RepoRef, Snapshot
from codeask.tools import Toolbox

# Fake secrets are assembled at runtime so this file holds no secret-shaped literal.
VALUE = "Xk9f" + "j2Lq8mZp" + "4Rt7"
DECOY = "Wm3h" + "q7Zn2Kd8" + "Vb5c"
PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj"
PEM_DECOY = "MIIEpAIBAAKCAQEAz9Xq2LmN4bVtR7sWcY3kHj8GfD1aPoE6uT5iZrQwXyMnBvC0"
_ARMOUR = "-----{} PRIVATE KEY-----"


def pem(body: str) -> str:
    return "\n".join([_ARMOUR.format("BEGIN"), body, body, _ARMOUR.format("END")]) + "\n"


def wrapped_b64_key(body: str) -> str:
    """A private key base64-encoded and wrapped over lines, as a kubeconfig's key data is."""
    return "\n".join(textwrap.wrap(base64.b64encode(pem(body).encode()).decode(), 64))


# Files whose secret only the whole file shows: the line holding it reads as harmless alone.
WHOLE_FILE_ONLY = {
    "src/continued.py": f'API_TOKEN = \\\n    "{VALUE}"\n',
    "src/netrc_text.py": f'NETRC = """machine db.internal login admin\n  password {VALUE}\n"""\n',
    # The netrc keyword is any password word: each is a sign of its own.
    "src/netrc_passwd.js": f"const netrc = `machine db.internal login admin\n  passwd {VALUE}\n`;\n",
    "src/netrc_pwd.py": f'NETRC = """machine db.internal\n  login admin\n  pwd {VALUE}\n"""\n',
    "src/netrc_phrase.rb": f"NETRC = <<~E\n  default login admin\n  passphrase {VALUE}\nE\n",
    "src/tls.py": f'KEY = """\n{pem(PEM_BODY)}"""\n',
    "src/kube.go": f"const key = `\n{wrapped_b64_key(PEM_BODY)}\n`\n",
    "deploy/values.yaml": f"db:\n  secret: |\n    {VALUE}\n",
    ".env": f"DB_PASS={VALUE}\n",
    "src/lookalike.py": f'p\u0430ssword = \\\n    "{VALUE}"\n',  # a Cyrillic а in the name
    # A value on the line below its name: wrapped, or a string spanning lines.
    "src/wrapped.py": f'SECRET_KEY = (\n    "{VALUE}"\n)\n',
    "src/template_key.js": f"const apiKey = `\n{VALUE}\n`;\n",
    "src/raw_key.go": f"var authToken = `\n{VALUE}`\n",
}


def lines_of(text: str) -> list[str]:
    return text.split("\n")


@pytest.mark.parametrize("path", sorted(WHOLE_FILE_ONLY))
def test_a_file_whose_secret_needs_the_whole_file_does_not_stand_alone(path: str) -> None:
    text = WHOLE_FILE_ONLY[path]
    assert not stands_alone(text, path)


def test_the_cases_hold_a_secret_only_the_whole_file_shows() -> None:
    # Guards the cases above: each is masked whole, and these show nothing line by line, so
    # standing alone would let a search find their value.
    cases: tuple[str, ...]
    cases = ("src/continued.py", "src/netrc_text.py", "src/tls.py", "src/kube.go", "src/wrapped.py")
    cases += ("src/template_key.js", "src/raw_key.go")
    for path in (*cases, "src/netrc_passwd.js", "src/netrc_pwd.py", "src/netrc_phrase.rb"):
        lines = lines_of(WHOLE_FILE_ONLY[path])
        masked, counts = mask_file(lines, path)
        assert counts, path
        assert any(
            after != before and scan(before)[0] == before
            for before, after in zip(lines, masked, strict=True)
        ), path


# Code that stands alone, some with secrets a line shows by itself: masking the whole file adds
# nothing to what the scanner finds line by line, the premise of the shortcut.
STANDING_ALONE = {
    "src/plain.py": "def handler(event):\n    return route(event)\n",
    "src/aws.py": 'AWS_KEY_ID = "' + "AKIA" + "QWERTYUIOP" + 'ASDFGH"\nregion = "eu-west-1"\n',
    "src/token.ts": f'const apiToken = "{VALUE}";\nexport default apiToken;\n',
    "src/dsn.go": f'var dsn = "postgres://admin:{VALUE}@db.internal/app"\n',
    "src/tabs.rb": f"def key\n\tsecret_key = '{VALUE}'\nend\n",
    "src/escaped.c": 'printf("a backslash \\\\ and a tab \\t");\n',
}


@pytest.mark.parametrize("path", sorted(STANDING_ALONE))
def test_code_that_stands_alone_is_masked_the_same_line_by_line(path: str) -> None:
    text = STANDING_ALONE[path]
    lines = lines_of(text)
    assert stands_alone(text, path)
    assert mask_file(lines, path)[0] == lines


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("README.md", "plain prose\n"),  # no programming language by the name
        ("bin/tool", "#!/bin/sh\necho hi\n"),
        ("scripts/run.sh", "echo hi\n"),  # shell is a config language for redaction
        ("Dockerfile.py.in", "FROM python\n"),
        ("deploy/pgpass", "db.internal:5432:app:admin:x\n"),  # a name only redaction knows
        ("src/caf\u00e9.py", "name = 'caf\u00e9'\n"),
        ("src/pw.py", "def check_Password(x):\n    return x\n"),
    ],
)
def test_anything_in_doubt_does_not_stand_alone(path: str, text: str) -> None:
    assert not stands_alone(text, path)


# --- Through search_code: a flood of plain hits (so rg sorts them) beside the secrets -----------

PLAIN_FILES = 2 * Signs.BATCH_MIN


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for i in range(PLAIN_FILES):
        p = root / "pkg" / f"m{i}.py"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"def handler_{i}(event):\n    return common_route(event)\n")
    for rel, text in {**WHOLE_FILE_ONLY, **STANDING_ALONE}.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def search(root: Path, pattern: str) -> str:
    toolbox = Toolbox(Snapshot(root, "c" * 40, RepoRef("acme", str(root))))
    result = toolbox.run("search_code", {"pattern": pattern})
    assert not result.is_error, result.text
    return result.text


@pytest.mark.parametrize(
    ("secret", "decoy"), [(VALUE, DECOY), (PEM_BODY, PEM_DECOY)], ids=["value", "pem-body"]
)
def test_a_flood_beside_secrets_reads_as_one_beside_text_in_no_file(
    repo: Path, secret: str, decoy: str
) -> None:
    shown = search(repo, f"{secret[:10]}|common_route")
    expected = search(repo, f"{decoy[:10]}|common_route")
    assert shown.replace(secret[:10], decoy[:10]) == expected
    assert "common_route" in shown and secret[:6] not in shown.replace(secret[:10], "")


def test_rg_sorts_a_batch_into_the_files_that_stand_alone_and_the_rest(repo: Path) -> None:
    signs = Signs(find_rg(), repo, timeout_s=10.0)
    plain = [RawMatch(f"pkg/m{i}.py", 2, "    return common_route(event)") for i in range(150)]
    secret = [RawMatch(rel, 1, "x = 1") for rel in WHOLE_FILE_ONLY]
    code = [RawMatch(rel, 1, "x = 1") for rel in STANDING_ALONE]
    signs.sort(plain + secret + code)
    assert all(signs.alone(m) for m in plain + code)  # rg reads the signs as stands_alone does
    assert not any(signs.alone(m) for m in secret)
    # A line rg cut to a preview, or not plain ASCII, is judged on the file all the same.
    assert not signs.alone(RawMatch("pkg/m0.py", 2, "x" * 400))
    assert not signs.alone(RawMatch("pkg/m0.py", 2, "caf\u00e9"))


def test_a_batch_too_small_or_a_listing_that_fails_leaves_every_file_to_be_read(
    repo: Path, tmp_path: Path
) -> None:
    few = [RawMatch(f"pkg/m{i}.py", 2, "return") for i in range(Signs.BATCH_MIN - 1)]
    signs = Signs(find_rg(), repo, timeout_s=10.0)
    signs.sort(few)
    assert not any(signs.alone(m) for m in few)
    broken = tmp_path / "rg"
    broken.write_text("#!/bin/sh\nexit 2\n")
    broken.chmod(0o755)
    many = [RawMatch(f"pkg/m{i}.py", 2, "return") for i in range(PLAIN_FILES)]
    failing = Signs(str(broken), repo, timeout_s=10.0)
    failing.sort(many)
    assert not any(failing.alone(m) for m in many)


@pytest.mark.parametrize(
    "data",
    [b"\xef\xbb\xbfneedle = 1\n", "needle = 1\n".encode("utf-16")],
    ids=["utf-8-bom", "utf-16-bom"],
)
def test_a_file_with_a_byte_order_mark_is_listed_as_python_reads_it(
    repo: Path, data: bytes
) -> None:
    # rg would strip a BOM (and decode UTF-16) before looking for signs; Python sees the bytes.
    (repo / "pkg" / "bom.py").write_bytes(data)
    assert not stands_alone(data.decode("utf-8", errors="replace"), "pkg/bom.py")
    signs = Signs(find_rg(), repo, timeout_s=10.0)
    plain = [RawMatch(f"pkg/m{i}.py", 2, "    return common_route(event)") for i in range(150)]
    bom = RawMatch("pkg/bom.py", 1, "needle = 1")
    signs.sort([*plain, bom])
    assert all(signs.alone(m) for m in plain)
    assert not signs.alone(bom)


@pytest.mark.parametrize("sign", _WHOLE_FILE_SIGNS)
def test_rg_lists_a_file_holding_any_sign_python_reads(repo: Path, sign: str) -> None:
    # The rg listing is made from the same signs: each one, in either case, keeps its file
    # from standing alone there too.
    for name, written in (("lower", sign), ("upper", sign.upper())):
        text = f"def f():\n    return 1  # {written}\n"
        (repo / "pkg" / f"sign_{name}.py").write_bytes(text.encode())
        assert not stands_alone(text, f"pkg/sign_{name}.py")
    signs = Signs(find_rg(), repo, timeout_s=10.0)
    plain = [RawMatch(f"pkg/m{i}.py", 2, "    return common_route(event)") for i in range(150)]
    marked = [RawMatch(f"pkg/sign_{name}.py", 1, "def f():") for name in ("lower", "upper")]
    signs.sort([*plain, *marked])
    assert all(signs.alone(m) for m in plain)
    assert not any(signs.alone(m) for m in marked)


def test_rg_lists_a_file_whose_value_sits_below_its_name(repo: Path) -> None:
    # The pattern sign (redact.VALUE_BELOW) is read by rg too: Python judges the name, rg lists
    # every line of that shape.
    for rel in ("src/wrapped.py", "src/template_key.js", "src/raw_key.go"):
        assert not stands_alone(WHOLE_FILE_ONLY[rel], rel)
    assert stands_alone("for key in keys:\n    print(key)\n", "src/loop.py")  # no secret's name
    signs = Signs(find_rg(), repo, timeout_s=10.0)
    plain = [RawMatch(f"pkg/m{i}.py", 2, "    return common_route(event)") for i in range(150)]
    marked = [RawMatch("src/wrapped.py", 2, f'    "{VALUE}"'), RawMatch("src/raw_key.go", 2, VALUE)]
    signs.sort([*plain, *marked])
    assert all(signs.alone(m) for m in plain)
    assert not any(signs.alone(m) for m in marked)
