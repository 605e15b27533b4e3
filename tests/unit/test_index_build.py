"""Building the definitions index in worker processes: the same rows as one process, and never half an index."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from codeask.search import index_build, index_workers
from codeask.search.definition_index import DefinitionIndex, fts5_available
from codeask.search.index_rows import Task
from codeask.snapshot import RepoRef, Snapshot

# What DefinitionIndex.search takes: groups of words, each with its weight.
Query = list[tuple[tuple[str, ...], float]]

PY = '''"""Tokens for module {i}."""

RETRY_LIMIT_{i} = {i}  # attempts before giving up


class Rotator{i}:
    """Rotates the bot token {i} before it expires."""

    def rotate_expiring_token(self, token):
        # a fresh token from the vault
        return token
'''
YAML = "auth:\n  # the admin's password\n  postgresPassword: ''\nreplicas: {i}\n"
JS = "// Sends the invoice {i}.\nexport function sendInvoice{i}(order) {{\n  return order;\n}}\n"


def write_tree(root: Path, files: int) -> Path:
    """`files` files in several languages and directories, a binary and an unparsable one among them."""
    for i in range(files):
        d = root / f"pkg{i % 7}" / ("tests" if i % 11 == 0 else "src")
        d.mkdir(parents=True, exist_ok=True)
        kind = i % 4
        if kind == 0:
            (d / f"m{i}.py").write_text(PY.format(i=i))
        elif kind == 1:
            (d / f"values{i}.yaml").write_text(YAML.format(i=i))
        elif kind == 2:
            (d / f"invoice{i}.js").write_text(JS.format(i=i))
        else:
            (d / f"notes{i}.md").write_text(f"# Notes {i}\nHow the token {i} is rotated.\n")
    (root / "logo.png").write_bytes(b"\x89PNG\x00\x00" * 100)
    (root / "broken.py").write_text("def (:\n  class\n" * 20)
    return root


def rows_of(index: DefinitionIndex) -> list[tuple[object, ...]]:
    db = index._db
    defs = db.execute(
        "SELECT d.id, f.path, f.kind, f.words, d.line, d.end_line, d.kind, d.name, d.scope, "
        "d.nw, d.sw, d.dw, d.n FROM defs d JOIN files f ON d.file = f.id ORDER BY d.id"
    ).fetchall()
    meta = dict(db.execute("SELECT key, value FROM meta WHERE key IN ('rows', 'files', 'avg_len')"))
    return [*defs, tuple(sorted(meta.items()))]


def test_workers_build_the_same_index_as_one_process(tmp_path: Path) -> None:
    # Given a tree big enough to be cut into several pieces
    tree = write_tree(tmp_path / "tree", 900)
    snap = Snapshot(tree, "a" * 40, RepoRef("t", str(tree)))
    tasks = [(Task(rel, i, None), (tree / rel).stat().st_size) for i, rel in enumerate(snap.files)]
    assert len(index_workers.chunks(tasks)) >= 4

    # When it is indexed in this process, and by two and by three workers
    serial = DefinitionIndex.build(snap, None, workers=1)
    two = DefinitionIndex.build(snap, None, workers=2)
    three = DefinitionIndex.build(snap, tmp_path / "three.defs", workers=3)

    # Then every row is the same, and so is what a question finds
    assert isinstance(serial, DefinitionIndex) and serial.stats.workers == 1
    assert isinstance(two, DefinitionIndex) and two.stats.workers == 2
    assert isinstance(three, DefinitionIndex) and three.stats.workers == 3
    assert serial.rows > 900
    assert rows_of(serial) == rows_of(two) == rows_of(three)
    query: Query = [(("rotat",), 1.0), (("token",), 1.0), (("expir",), 0.5)]
    found = [(f.path, f.line, round(f.score, 9)) for f in serial.search(query)]
    assert found and found == [(f.path, f.line, round(f.score, 9)) for f in three.search(query)]


def test_workers_honour_the_time_budget_and_the_next_build_finishes(tmp_path: Path) -> None:
    # Given a tree parsed by workers with no time to spare
    tree = write_tree(tmp_path / "tree", 900)
    target = tmp_path / ("b" * 40 + ".defs")
    snap = Snapshot(tree, "b" * 40, RepoRef("t", str(tree)), index_path=target)

    # When a build is given no time at all, it keeps the first piece it got as a partial index
    first = DefinitionIndex.build(snap, target, budget_s=0.0, slice_s=0.0, workers=2)
    assert not isinstance(first, DefinitionIndex)
    assert 0 < first.parsed < len(snap.files) and first.todo == len(snap.files) - first.parsed
    assert not target.exists() and not multiprocessing.active_children()

    # Then the next build copies those rows, parses the rest and equals a build in one go
    done = DefinitionIndex.build(snap, target, workers=2)
    assert isinstance(done, DefinitionIndex) and done.stats.reused > 0
    assert done.stats.reused + done.stats.parsed == len(snap.files)  # the binary one parsed again
    whole = DefinitionIndex.build(snap, None, workers=1)
    assert isinstance(whole, DefinitionIndex) and rows_of(done) == rows_of(whole)


def test_a_worker_that_dies_leaves_no_index_to_open(tmp_path: Path) -> None:
    # Given a build under way in two workers
    tree = write_tree(tmp_path / "tree", 4000)
    target = tmp_path / "idx" / ("c" * 40 + ".defs")
    snap = Snapshot(tree, "c" * 40, RepoRef("t", str(tree)), index_path=target)
    errors: list[BaseException] = []

    def build() -> None:
        try:
            DefinitionIndex.build(snap, target, workers=2)
        except BaseException as e:  # noqa: BLE001 - asserted below
            errors.append(e)

    builder = threading.Thread(target=build)
    builder.start()
    give_up = time.monotonic() + 60
    while not multiprocessing.active_children() and builder.is_alive():
        assert time.monotonic() < give_up
        time.sleep(0.001)

    # When one of its workers is killed
    os.kill(multiprocessing.active_children()[0].pid or 0, signal.SIGKILL)
    builder.join()

    # Then the build fails as an OSError, and nothing is left that a reader would open
    assert len(errors) == 1 and isinstance(errors[0], ChildProcessError)
    assert list(target.parent.iterdir()) == []
    assert DefinitionIndex.open(target) is None
    assert not multiprocessing.active_children()
    assert isinstance(DefinitionIndex.build(snap, target, workers=2), DefinitionIndex)


@pytest.mark.parametrize(("todo_bytes", "expected"), [(0, 1), (index_workers.MIN_BYTES - 1, 1)])
def test_a_small_tree_is_parsed_in_the_building_process(todo_bytes: int, expected: int) -> None:
    assert index_workers.workers_for(todo_bytes) == expected
    assert index_workers.workers_for(index_workers.MIN_BYTES) == min(
        index_workers.cpus(), index_workers.MAX_WORKERS
    )


@pytest.mark.skipif(not fts5_available(), reason="this SQLite has no FTS5")
def test_the_bulk_settings_of_the_word_table_change_no_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given one tree indexed with FTS5's own settings, with the bulk ones, and with a hash so
    # small that every few rows are written as a segment of their own (merged only at the end)
    tree = write_tree(tmp_path / "tree", 300)
    snap = Snapshot(tree, "a" * 40, RepoRef("t", str(tree)))
    built = {}
    for name, settings in (("plain", ()), ("bulk", index_build.FTS5_BULK),
                           ("tiny", (("automerge", 0), ("hashsize", 1024)))):  # fmt: skip
        monkeypatch.setattr(index_build, "FTS5_BULK", settings)
        index = DefinitionIndex.build(snap, tmp_path / f"{name}.defs", fts5=True, workers=1)
        assert isinstance(index, DefinitionIndex)
        built[name] = index

    # Then the bulk settings are in force where asked for
    def config(index: DefinitionIndex) -> dict[str, object]:
        return dict(index._db.execute("SELECT k, v FROM words_config"))

    assert config(built["bulk"])["automerge"] == 0 and "automerge" not in config(built["plain"])
    # And every word counts and scores every row the same
    words = ("rotat", "token", "expir", "invoic", "password", "retri", "limit", "pkg3")
    for index in (built["bulk"], built["tiny"]):
        assert rows_of(index) == rows_of(built["plain"])
        for w in words:
            query: Query = [((w,), 1.0)]
            assert index.count(w) == built["plain"].count(w)
            assert index.search(query, limit=5000) == built["plain"].search(query, limit=5000)
    assert built["plain"].count("rotat") >= 75
