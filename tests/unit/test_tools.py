"""search_code, read_file and list_files as the model sees them: jail, deny-list, caps, ranking, redaction."""

from __future__ import annotations

import os
import re
import stat
import time
from pathlib import Path

import pytest

from codeask.denylist import DenyList
from codeask.snapshot import RepoRef, Snapshot
from codeask.tools import READ_MAX_LINES, SEARCH_MAX_CHARS, Toolbox
from conftest import write

SHA = "a3f9c21" + "0" * 33


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    write(
        root,
        "src/billing/worker.py",
        "import time\n\n\nclass Worker:\n    def run(self):\n        return retry_job(self)\n\n\n"
        "def retry_job(job, attempts=3):\n    for _ in range(attempts):\n        time.sleep(1)\n"
        "    return job\n",
    )
    write(
        root,
        "tests/test_worker.py",
        "".join(f"def test_{i}():\n    retry_job({i})\n" for i in range(12)),
    )
    write(root, "docs/retries.md", "# Retries\n\nUse retry_job to retry a job.\n")
    write(root, "README.md", "Billing service. See retry_job.\n")
    write(root, ".github/workflows/ci.yml", "name: ci\non: push\n")
    write(root, ".env", "RETRY_SECRET=retry_job_value\n")
    write(root, "deploy/keys/signing.pem", "retry_job\n")
    write(root, "ops/secrets/prod.yaml", "retry_job: 1\n")
    return root


@pytest.fixture
def toolbox(tree: Path) -> Toolbox:
    snap = Snapshot(
        tree,
        SHA,
        RepoRef("billing", "https://github.com/acme/billing.git"),
        DenyList(("ops/secrets",)),
    )
    return Toolbox(snap)


# -- search_code ---------------------------------------------------------------------------------


def test_definition_in_source_ranks_before_tests_and_docs(toolbox: Toolbox) -> None:
    # Given a function defined once in source and mentioned many times in tests and docs
    # When the model searches for it
    result = toolbox.run("search_code", {"pattern": "retry_job"})
    # Then the source file comes first, the definition line is shown with its line number
    assert not result.is_error
    body = result.text.split("\n\n", 1)[1]
    assert body.startswith("src/billing/worker.py")
    assert re.search(r"^D +9  def retry_job\(job, attempts=3\):$", result.text, re.M)
    assert body.index("src/billing/worker.py") < body.index("tests/test_worker.py [test]")
    assert "docs/retries.md [docs]" in result.text


def test_hits_show_enclosing_scope_and_context(toolbox: Toolbox) -> None:
    result = toolbox.run("search_code", {"pattern": "return retry_job"})
    assert "  in class Worker › def run(self)\n" in result.text
    assert re.search(r"\n +5      def run\(self\):\n", result.text)  # the line before, as context


def test_every_hit_of_a_small_result_is_shown_with_its_text(toolbox: Toolbox) -> None:
    # Given a test file with 12 calls
    result = toolbox.run("search_code", {"pattern": "retry_job", "glob": "tests/**"})
    # Then all twelve are shown, each with its text, and the result says it is complete
    assert "tests/test_worker.py [test] — 12 matches\n" in result.text
    for i in range(12):
        assert f"    retry_job({i})" in result.text
    assert "complete: every match is shown" in result.text


def test_complete_result_says_so(toolbox: Toolbox) -> None:
    result = toolbox.run("search_code", {"pattern": "attempts=3"})
    assert "1 match in 1 file" in result.text and "complete: every match is shown" in result.text


def test_no_match_and_hidden_files_are_searched(toolbox: Toolbox) -> None:
    assert toolbox.run("search_code", {"pattern": "zzz_not_here"}).text.startswith("No matches for")
    assert ".github/workflows/ci.yml" in toolbox.run("search_code", {"pattern": "on: push"}).text


@pytest.mark.parametrize("pattern", ["--files", "--pre=cat", "-f/etc/passwd", "-e", "--help"])
def test_flag_like_patterns_are_searched_literally(
    tree: Path, toolbox: Toolbox, pattern: str
) -> None:
    # Given a file that contains the flag-like text itself
    write(tree, "src/flags.txt", f"option {pattern} here\n")
    # When it is searched for
    result = toolbox.run("search_code", {"pattern": pattern})
    # Then rg treated it as a pattern: it found the text, and listed no other files
    assert not result.is_error, result.text
    assert "src/flags.txt" in result.text
    assert "src/billing/worker.py" not in result.text


def test_invalid_regex_is_an_error_result_the_model_can_fix(toolbox: Toolbox) -> None:
    result = toolbox.run("search_code", {"pattern": "retry_job("})
    assert result.is_error
    assert "invalid regex" in result.text and "Escape" in result.text


@pytest.mark.parametrize("path", ["../", "/etc", "~/x", "src/../../x", "a\x00b"])
def test_search_path_outside_the_snapshot_is_refused_before_rg_runs(
    toolbox: Toolbox, path: str
) -> None:
    toolbox.rg = "/nonexistent/rg"  # if rg were started, the error would be a different one
    result = toolbox.run("search_code", {"pattern": "x", "path": path})
    assert result.is_error and "not allowed" in result.text or "NUL" in result.text


def test_search_path_through_symlink_out_is_refused(
    tree: Path, tmp_path: Path, toolbox: Toolbox
) -> None:
    outside = tmp_path / "outside"
    write(outside, "loot.txt", "retry_job\n")
    os.symlink(outside, tree / "src" / "escape")
    result = toolbox.run("search_code", {"pattern": "retry_job", "path": "src/escape"})
    assert result.is_error and "outside the repository" in result.text


def test_denied_files_never_appear_in_search(toolbox: Toolbox) -> None:
    result = toolbox.run("search_code", {"pattern": "retry_job"})
    for denied in (".env", "signing.pem", "ops/secrets"):
        assert denied not in result.text
    # even when the model asks for them by glob
    result = toolbox.run("search_code", {"pattern": "retry", "glob": ".env"})
    first, *notes = result.text.splitlines()
    assert first == "No matches for `retry` in .env."
    # the matches outside the glob are counted, and no denied file is among them
    assert notes and notes[0].startswith("Outside glob .env: 16 matches in 4 files: ")
    for denied in ("glob .env: ", "signing.pem", "ops/secrets", "RETRY_SECRET"):
        assert denied not in "".join(notes).replace("Outside glob .env: ", "")


def test_multi_megabyte_line_is_cut_with_a_note_and_total_output_capped(
    tree: Path, toolbox: Toolbox
) -> None:
    write(tree, "dist/bundle.js", "var a='needle';" + "x" * 3_000_000 + "\n")
    for i in range(60):
        write(tree, f"src/gen/mod{i}.py", "needle = 1\n" * 40)
    result = toolbox.run("search_code", {"pattern": "needle"})
    assert len(result.text) < SEARCH_MAX_CHARS + 2500
    assert "x" * 5000 not in result.text
    assert "Narrow with glob, path or a more specific pattern" in result.text
    one = toolbox.run("search_code", {"pattern": "needle", "path": "dist"})
    assert "omitted" in one.text or "line cut" in one.text


def test_binary_files_yield_no_binary_bytes(tree: Path, toolbox: Toolbox) -> None:
    write(tree, "assets/blob.bin", b"\x00\x01\x02needle\xff\xfe\x00" * 100)
    write(tree, "src/mixed.txt", b"needle \x1b[31mred\x07 \xff\n")
    result = toolbox.run("search_code", {"pattern": "needle"})
    assert "\x00" not in result.text and "\x1b" not in result.text and "\x07" not in result.text
    assert "assets/blob.bin" not in result.text


def test_hanging_search_is_killed_with_its_process_group(tmp_path: Path, toolbox: Toolbox) -> None:
    # Given a "ripgrep" that hangs and has a child that would outlive a plain kill
    pidfile = tmp_path / "child.pid"
    fake = tmp_path / "rg"
    fake.write_text(f"#!/bin/sh\nsleep 60 &\necho $! > {pidfile}\nwait\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    toolbox.rg = str(fake)
    toolbox.search_timeout_s = 0.5
    # When a search runs
    result = toolbox.run("search_code", {"pattern": "x"})
    # Then it reports the timeout, and the child is gone too
    assert "timed out" in result.text
    child = int(pidfile.read_text())
    for _ in range(50):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail("the search's child process survived the timeout")


def test_secrets_in_results_are_redacted(tree: Path, toolbox: Toolbox) -> None:
    key = "AKIA" + "QWERTYUIOPASDFGH"
    write(tree, "src/settings.py", f"AWS_KEY = '{key}'  # needle\n")
    result = toolbox.run("search_code", {"pattern": "needle"})
    assert key not in result.text and "[REDACTED:" in result.text
    assert sum(toolbox.redactions.values()) >= 1


# -- read_file -----------------------------------------------------------------------------------


def test_read_numbered_range(toolbox: Toolbox) -> None:
    result = toolbox.run(
        "read_file", {"path": "src/billing/worker.py", "start_line": 9, "end_line": 10}
    )
    assert result.text.splitlines() == [
        f"src/billing/worker.py lines 9-10 of 12 at {SHA[:7]}",
        " 9  def retry_job(job, attempts=3):",
        "10      for _ in range(attempts):",
    ]


def test_read_caps_long_files_and_says_how_to_continue(tree: Path, toolbox: Toolbox) -> None:
    write(tree, "src/big.py", "".join(f"x{i} = {i}\n" for i in range(1000)))
    result = toolbox.run("read_file", {"path": "src/big.py"})
    assert f"lines 1-{READ_MAX_LINES} of 1000" in result.text
    assert f"continue with start_line={READ_MAX_LINES + 1}" in result.text


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ({"path": "/etc/passwd"}, "absolute paths are not allowed"),
        ({"path": "../outside/loot.txt"}, "'..' is not allowed"),
        ({"path": "src/../../outside/loot.txt"}, "'..' is not allowed"),
        ({"path": "~/.ssh/id_rsa"}, "home-relative"),
        ({"path": "src/\x00worker.py"}, "NUL"),
        ({"path": ".env"}, "deny-list"),
        ({"path": "deploy/keys/signing.pem"}, "deny-list"),
        ({"path": "ops/secrets/prod.yaml"}, "deny-list"),
        ({"path": "src"}, "is a directory"),
        ({"path": "src/nope.py"}, "no file"),
        ({"path": "src/billing/worker.py", "start_line": 50}, "has 12 lines"),
        ({"path": "src/billing/worker.py", "start_line": 9, "end_line": 3}, "before start_line"),
        ({"path": "src/billing/worker.py", "start_line": -4}, "start at 1"),
        ({"path": "src/billing/worker.py", "start_line": "x"}, "whole number"),
        ({"path": "src/billing/worker.py", "mode": "w"}, "no argument 'mode'"),
        ({}, "needs 'path'"),
    ],
)
def test_read_refusals_are_clear(toolbox: Toolbox, args: dict, needle: str) -> None:
    result = toolbox.run("read_file", args)
    assert result.is_error
    assert needle in result.text


def test_read_end_past_the_end_is_clamped(toolbox: Toolbox) -> None:
    result = toolbox.run(
        "read_file", {"path": "src/billing/worker.py", "start_line": 11, "end_line": 500}
    )
    assert "lines 11-12 of 12" in result.text and not result.is_error


def test_read_refuses_symlinks_out_of_the_tree(
    tree: Path, tmp_path: Path, toolbox: Toolbox
) -> None:
    outside = tmp_path / "outside"
    write(outside, "loot.txt", "secret stuff\n")
    os.symlink(outside / "loot.txt", tree / "src" / "link.txt")
    os.symlink(outside, tree / "src" / "dirlink")
    for path in ("src/link.txt", "src/dirlink/loot.txt"):
        result = toolbox.run("read_file", {"path": path})
        assert result.is_error and "outside the repository" in result.text
        assert "secret stuff" not in result.text


def test_symlinks_are_judged_in_a_directory_already_resolved(
    tree: Path, tmp_path: Path, toolbox: Toolbox
) -> None:
    # Snapshot.resolve works a directory's real path out once: a symlink beside a file already
    # read, or under a directory already resolved, is still followed and judged.
    assert not toolbox.run("read_file", {"path": "src/billing/worker.py"}).is_error
    outside = tmp_path / "outside"
    write(outside, "loot.txt", "secret stuff\n")
    os.symlink(outside / "loot.txt", tree / "src" / "billing" / "link.txt")
    os.symlink(outside, tree / "src" / "billing" / "dirlink")
    os.symlink(tree / "docs", tree / "src" / "billing" / "docs")
    for path in ("src/billing/link.txt", "src/billing/dirlink/loot.txt"):
        result = toolbox.run("read_file", {"path": path})
        assert result.is_error and "outside the repository" in result.text
    assert (
        toolbox.snapshot.resolve("src/billing/docs/retries.md")[1]
        == tree.resolve() / "docs/retries.md"
    )
    assert (
        toolbox.snapshot.resolve("src/billing/worker.py")[1]
        == tree.resolve() / "src/billing/worker.py"
    )


def test_read_symlink_inside_the_tree_to_a_denied_file_is_refused(
    tree: Path, toolbox: Toolbox
) -> None:
    os.symlink(tree / ".env", tree / "src" / "config.txt")
    result = toolbox.run("read_file", {"path": "src/config.txt"})
    assert result.is_error and "RETRY_SECRET" not in result.text


def test_read_binary_is_refused(tree: Path, toolbox: Toolbox) -> None:
    write(tree, "assets/logo.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    result = toolbox.run("read_file", {"path": "assets/logo.png"})
    assert result.is_error and "binary" in result.text


def test_read_starting_inside_a_private_key_block_redacts_the_body(
    tree: Path, toolbox: Toolbox
) -> None:
    body = ["MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC" + str(i) * 13 for i in range(6)]
    text = (
        "FIXTURE = '''\n-----BEGIN PRIVATE KEY-----\n"
        + "\n".join(body)
        + "\n-----END PRIVATE KEY-----\n'''\n"
    )
    write(tree, "tests/fixtures.py", text)
    result = toolbox.run("read_file", {"path": "tests/fixtures.py", "start_line": 4, "end_line": 7})
    for line in body:
        assert line not in result.text
    assert "[REDACTED:private-key]" in result.text
    hit = toolbox.run("search_code", {"pattern": "MIIEvQIBADAN"})
    for line in body:
        assert line not in hit.text


def test_config_secrets_are_masked_with_exact_line_numbers(tree: Path, toolbox: Toolbox) -> None:
    # Given a Kubernetes manifest: an env password on line 7, a Secret's data 30 lines below its
    # kind: line, and a token continued over two lines of a shell script
    password = "Tr0ub4dor" + "-and-3"
    data = "c2VjcmV0" + "LXZhbHVl"
    filler = [f"    note{i}: {i}" for i in range(30)]
    manifest = [
        "apiVersion: apps/v1", "kind: Deployment", "spec:", "  containers:", "    - env:",
        "        - name: DB_PASSWORD", f"          value: {password}", "---", "kind: Secret",
        "metadata:", "  annotations:", *filler, "data:", f"  password: {data}", "type: Opaque",
    ]  # fmt: skip
    write(tree, "k8s/app.yaml", "\n".join(manifest) + "\n")
    token = "Xk9f" + "j2Lq8mZp" + "4Rt7"
    write(tree, "ops/deploy.sh", f"#!/bin/sh\nexport X_TOKEN={token[:6]}\\\n{token[6:]}\nrun\n")

    # When the model reads part of the manifest, searches for the Secret's key and reads the script
    read = toolbox.run("read_file", {"path": "k8s/app.yaml", "start_line": 6, "end_line": 7})
    tail = toolbox.run("read_file", {"path": "k8s/app.yaml", "start_line": 42})
    hit = toolbox.run("search_code", {"pattern": "password:"})
    script = toolbox.run("read_file", {"path": "ops/deploy.sh", "start_line": 3})

    # Then each secret is masked on the line it sits on, and every line number is the file's own
    assert read.text.splitlines()[1:] == [
        "6          - name: DB_PASSWORD",
        "7            value: [REDACTED:secret-assignment]",
    ]
    assert tail.text.splitlines()[1:] == [
        "42  data:",
        "43    password: [REDACTED:kubernetes-secret]",
        "44  type: Opaque",
    ]
    assert "D 43    password: [REDACTED:kubernetes-secret]" in hit.text.splitlines()
    assert script.text.splitlines()[1:] == ["3  [REDACTED:secret-assignment]", "4  run"]
    for result in (read, tail, hit, script):
        for secret in (password, data, token[6:]):
            assert secret not in result.text
    # the search shows the short manifest whole: its env password is masked there too
    assert "   7            value: [REDACTED:secret-assignment]" in hit.text.splitlines()
    assert toolbox.redactions == {"secret-assignment": 3, "kubernetes-secret": 2}


# -- list_files ----------------------------------------------------------------------------------


def test_list_files_with_glob_and_path(toolbox: Toolbox) -> None:
    result = toolbox.run("list_files", {"glob": "*.py"})
    assert result.text.splitlines()[1:] == ["src/billing/worker.py", "tests/test_worker.py"]
    result = toolbox.run("list_files", {"path": "src"})
    assert "src/billing/worker.py" in result.text
    assert ".github/workflows/ci.yml" in toolbox.run("list_files", {}).text


def test_list_files_hides_denied_paths(toolbox: Toolbox) -> None:
    listing = toolbox.run("list_files", {}).text
    for denied in (".env", "signing.pem", "ops/secrets"):
        assert denied not in listing
    assert toolbox.run("list_files", {"path": "ops/secrets"}).is_error


def test_list_files_summarises_big_trees(tree: Path, toolbox: Toolbox) -> None:
    for i in range(300):
        write(tree, f"pkg/mod{i % 3}/f{i}.py", "")
    toolbox.snapshot = Snapshot(tree, SHA, toolbox.snapshot.repo, toolbox.snapshot.deny)
    result = toolbox.run("list_files", {})
    assert "too many to list" in result.text
    assert "pkg/mod0/ (100 files)" in result.text
    assert len(result.text.splitlines()) < 210
    # the files at the top (README, LICENSE) come before the directories, in view
    rows = result.text.splitlines()[1:]
    assert rows.index("README.md") < rows.index("pkg/mod0/ (100 files)")


def test_a_list_files_glob_names_the_directories_it_matches(tree: Path, toolbox: Toolbox) -> None:
    # Given a chart folder named like the glob, holding files that are not
    for rel in ("bitnami/postgresql/values.yaml", "bitnami/postgresql/templates/svc.yaml",
                "bitnami/postgresql-ha/Chart.yaml", "bitnami/common/_postgresql.tpl",
                "bitnami/redis/values.yaml"):  # fmt: skip
        write(tree, rel, "x: 1\n")
    toolbox.snapshot = Snapshot(tree, SHA, toolbox.snapshot.repo, toolbox.snapshot.deny)
    text = toolbox.run("list_files", {"glob": "*postgresql*"}).text
    # Then the matching file is listed, and the matching directories with their file counts
    assert text.splitlines() == [
        f"1 file in the repository matching '*postgresql*' at {SHA[:7]}:",
        "bitnami/common/_postgresql.tpl",
        "Directories whose name matches (2):",
        "bitnami/postgresql/ (2 files)",
        "bitnami/postgresql-ha/ (1 file)",
    ]
    # a glob matching no file still names the directory
    text = toolbox.run("list_files", {"glob": "postgresql-ha"}).text
    assert text.splitlines()[1:] == [
        "Directories whose name matches (1):",
        "bitnami/postgresql-ha/ (1 file)",
    ]
    # and a negative glob names none
    assert "Directories" not in toolbox.run("list_files", {"glob": "!*postgresql*"}).text


def test_unknown_tool_is_an_error(toolbox: Toolbox) -> None:
    result = toolbox.run("delete_file", {"path": "x"})
    assert result.is_error and "search_code" in result.text


def test_every_call_is_logged(toolbox: Toolbox) -> None:
    toolbox.run("search_code", {"pattern": "retry_job", "glob": "*.py"})
    toolbox.run("read_file", {"path": "/etc/passwd"})
    assert [c.name for c in toolbox.calls] == ["search_code", "read_file"]
    assert toolbox.calls[1].is_error
    assert toolbox.searches == ["`retry_job` in *.py"]


# -- the boundary: errors as the model sees them ------------------------------------------------


def test_an_error_carrying_a_path_of_this_machine_names_it_as_the_model_does(
    tree: Path, toolbox: Toolbox
) -> None:
    # Given a tool whose expected failure names a file by where the snapshot lies on this
    # machine, and another place of the machine besides
    from codeask.errors import ToolRefused
    from codeask.tools import Tool

    def fails(args: dict[str, object]) -> str:
        raise ToolRefused(
            f"cannot read {tree}/src/billing/worker.py: Permission denied "
            f"(lock file /mnt/efs/mirrors/billing.lock, scratch {tree.parent}/tmp-xyz/scan)"
        )

    toolbox.tools["list_files"] = Tool("list_files", "", {"type": "object"}, fails)
    # When the model calls it
    result = toolbox.run("list_files", {})
    # Then the error names the file by its path in the repo, and nothing of the machine's layout
    assert result.is_error
    assert "cannot read src/billing/worker.py: Permission denied" in result.text
    assert str(tree.parent) not in result.text and "/mnt/" not in result.text
    assert "…/billing.lock" in result.text and "…/scan" in result.text
