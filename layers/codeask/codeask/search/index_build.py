"""Writing a snapshot's definitions index: rows of unchanged blobs copied from an earlier index, the rest parsed within a time budget."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from codeask.search import index_workers
from codeask.search.index_rows import DEF_BITS, MAX_FILE_BYTES, FileRows, Row, Task
from codeask.snapshot import Snapshot

VERSION = "10"  # bump when what is indexed, or how, changes: older files are rebuilt, not reused
PARTIAL_SUFFIX = ".partial"  # an index cut short by its time budget, continued by the next build
BATCH = 4000  # rows written per executemany
# Contentless: the words are only searched, never shown, so their text need not be stored.
FTS5_OPTIONS = "content='', detail=full, tokenize='unicode61'"
FTS5_BULK = (("automerge", 0), ("hashsize", 16 << 20))  # FTS5 settings for one bulk insert
_SCHEMA = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)",
    # `blob`: the file's git blob id, when the snapshot knows it (rows are reused by it)
    "CREATE TABLE files (id INTEGER PRIMARY KEY, path TEXT, kind TEXT, words TEXT, blob TEXT)",
    # nw, sw, dw: the stemmed words of the name, the scope and the doc; n: the row's word count
    "CREATE TABLE defs (id INTEGER PRIMARY KEY, file INTEGER, line INTEGER, end_line INTEGER, "
    "kind TEXT, name TEXT, scope TEXT, nw TEXT, sw TEXT, dw TEXT, n INTEGER)",
)


@dataclass
class BuildStats:
    """What one build did; `complete` is False when the budget ran out first (a partial index)."""

    files: int = 0  # files in the index (reused + parsed)
    definitions: int = 0
    seconds: float = 0.0
    bytes: int = 0
    engine: str = ""
    parsed: int = 0
    reused: int = 0
    todo: int = 0  # files still to parse when a partial index was written
    complete: bool = True
    parse_s: float = 0.0  # reading, parsing and tokenising the files not reused
    tables_s: float = 0.0  # the word tables and the file index, at the end
    workers: int = 1  # processes that parsed (1: the building process itself)


def fts5_available() -> bool:
    """Whether this Python's SQLite has FTS5 compiled in (the index falls back to plain tables)."""
    try:
        with contextlib.closing(sqlite3.connect(":memory:")) as db:
            db.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        return True
    except sqlite3.OperationalError:
        return False


def partial_path(target: Path) -> Path:
    return target.with_name(target.name + PARTIAL_SUFFIX)


def build(
    snapshot: Snapshot,
    target: Path | None,
    *,
    fts5: bool | None = None,
    budget_s: float | None = None,
    slice_s: float | None = None,
    workers: int | None = None,
) -> tuple[sqlite3.Connection | None, BuildStats]:
    """Index `snapshot` into `target` (written beside it and renamed into place, so a reader never
    sees half an index), or into memory when `target` is None.

    Files whose rows an earlier index holds (this commit's partial index, by path; the newest index
    of another commit beside it, by blob id) are copied, not parsed. With `budget_s`, parsing stops
    when the budget is spent, or after `slice_s` once the budget is seen to be too short for the
    rest: what was done is kept as a partial index for the next build, and the connection returned
    is None. Otherwise it is a connection to the finished index (in memory when `target` is None).
    `workers`: processes that parse (None: one per CPU for a big enough tree; the rows are the
    same however many)."""
    started = time.perf_counter()
    use_fts5 = fts5_available() if fts5 is None else fts5
    tmp = None
    if target is None:
        db = sqlite3.connect(":memory:", check_same_thread=False)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".tmp-{target.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}")
        db = sqlite3.connect(tmp, check_same_thread=False)
    try:
        writer = _Writer(db, snapshot, use_fts5)
        writer.reuse(_donors(target) if target is not None else [])
        writer.parse(started, budget_s, slice_s, workers)
        stats = writer.finish(started)
        if tmp is None or target is None:
            return (db if stats.complete else None), stats
        db.close()
        stats.bytes = tmp.stat().st_size
        os.replace(tmp, target if stats.complete else partial_path(target))
        if stats.complete:
            with contextlib.suppress(OSError):
                partial_path(target).unlink()
        return None, stats
    except BaseException:
        db.close()
        if tmp is not None:
            with contextlib.suppress(OSError):
                tmp.unlink()
        raise


def _donors(target: Path) -> list[tuple[Path, bool]]:
    """Earlier indexes to copy rows from: this commit's partial one (same tree, so any file of the
    same path), then the newest finished index of another commit beside it (same blob only)."""
    out = []
    partial = partial_path(target)
    if partial.is_file():
        out.append((partial, True))
    newest: tuple[float, Path] | None = None
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        entries = []
    for e in entries:
        if e.name.endswith(target.suffix) and e.name != target.name and not e.name.startswith("."):
            try:
                mtime = e.stat().st_mtime
            except OSError:
                continue
            if newest is None or mtime > newest[0]:
                newest = (mtime, Path(e.path))
    if newest is not None:
        out.append((newest[1], False))
    return out


class _Writer:
    """One build: the schema, the copied rows, the parsed files, and the search tables at the end."""

    def __init__(self, db: sqlite3.Connection, snapshot: Snapshot, use_fts5: bool) -> None:
        self.db = db
        self.snapshot = snapshot
        self.use_fts5 = use_fts5
        self.blobs = snapshot.blobs or {}
        self.root = str(snapshot.root)
        db.execute("PRAGMA journal_mode = OFF")
        db.execute("PRAGMA synchronous = OFF")
        for sql in _SCHEMA:
            db.execute(sql)
        self.stats = BuildStats(engine="fts5" if use_fts5 else "tables")
        self.todo: list[tuple[str, int]] = []  # (path, size) of the files still to parse
        self.file_ids: dict[str, int] = {}  # a file's place in the snapshot's listing, from 1

    # -- rows copied from earlier indexes ------------------------------------------------------------

    def reuse(self, donors: list[tuple[Path, bool]]) -> None:
        wanted: dict[str, int] = {}  # path -> size, for the files that may be indexed
        root = self.root  # a string: joining 10k Paths costs more than the lstat calls
        for i, rel in enumerate(self.snapshot.files, 1):
            try:
                st = os.lstat(f"{root}/{rel}")
            except OSError:
                continue
            if st.st_size <= MAX_FILE_BYTES and stat.S_ISREG(st.st_mode):
                wanted[rel] = st.st_size
                self.file_ids[rel] = i
        taken: set[str] = set()
        for i, (path, same_tree) in enumerate(donors):
            with contextlib.suppress(sqlite3.Error, OSError):
                self._copy_from(f"d{i}", path, same_tree, wanted, taken)
        self.todo = [(rel, size) for rel, size in wanted.items() if rel not in taken]

    def _copy_from(
        self, alias: str, path: Path, same_tree: bool, wanted: dict[str, int], taken: set[str]
    ) -> None:
        db = self.db
        db.execute(f"ATTACH DATABASE ? AS {alias}", (f"file:{path}?mode=ro&immutable=1",))
        try:
            version = db.execute(f"SELECT value FROM {alias}.meta WHERE key = 'version'").fetchone()
            if version is None or version[0] != VERSION:
                return
            pairs = []
            for old_id, rel, blob in db.execute(f"SELECT id, path, blob FROM {alias}.files"):
                if rel in taken or rel not in wanted:
                    continue
                if not same_tree and (blob is None or blob != self.blobs.get(rel)):
                    continue
                taken.add(rel)
                pairs.append((old_id, self.file_ids[rel]))
            if not pairs:
                return
            db.execute(
                "CREATE TEMP TABLE IF NOT EXISTS moved (old INTEGER PRIMARY KEY, new INTEGER)"
            )
            db.execute("DELETE FROM moved")
            db.executemany("INSERT INTO moved VALUES (?, ?)", pairs)
            db.execute(
                f"INSERT INTO files SELECT m.new, f.path, f.kind, f.words, f.blob "
                f"FROM {alias}.files f JOIN moved m ON f.id = m.old"
            )
            db.execute(
                f"INSERT INTO defs SELECT (m.new << {DEF_BITS}) | (d.id & {(1 << DEF_BITS) - 1}), "
                f"m.new, d.line, d.end_line, d.kind, d.name, d.scope, d.nw, d.sw, d.dw, d.n "
                f"FROM {alias}.defs d JOIN moved m ON d.file = m.old"
            )
            self.stats.reused += len(pairs)
        finally:
            db.commit()
            db.execute(f"DETACH DATABASE {alias}")

    # -- files parsed now ------------------------------------------------------------------------------

    def parse(
        self, started: float, budget_s: float | None, slice_s: float | None, workers: int | None
    ) -> None:
        """Parse what is left, in this process or in `workers` processes (None: as many as the
        CPUs when the files are big enough to be worth it); stop early as `build` says."""
        total = sum(size for _, size in self.todo) or 1
        tasks = [
            (Task(rel, self.file_ids[rel], self.blobs.get(rel)), size) for rel, size in self.todo
        ]
        n = index_workers.workers_for(total) if workers is None else workers
        t0 = time.perf_counter()
        progress = {"files": 0, "bytes": 0}

        def stop() -> bool:
            if budget_s is None or not progress["files"]:  # each call parses one file at least
                return False
            now = time.perf_counter()
            spent = now - started
            rate = progress["bytes"] / max(now - t0, 1e-6)
            projected = spent + (total - progress["bytes"]) / max(rate, 1.0)
            return spent >= budget_s or (
                projected > budget_s and slice_s is not None and spent >= slice_s
            )

        files: list[Row] = []
        defs: list[Row] = []
        if n <= 1:
            rows = FileRows(self.root)
            for task, size in tasks:
                if stop():
                    break
                rows.add(task, files, defs)
                progress["files"] += 1
                progress["bytes"] += size
                if len(defs) >= BATCH:
                    self._flush(files, defs)
            self._flush(files, defs)
        else:
            sizes = dict(self.todo)
            pieces = index_workers.chunks(tasks)
            for piece, files, defs in index_workers.parse_in_workers(self.root, pieces, n, stop):
                self._flush(files, defs)
                progress["files"] += len(piece)
                progress["bytes"] += sum(sizes[task.rel] for task in piece)
        self.stats.workers = n
        self.stats.parse_s = time.perf_counter() - t0
        self.stats.parsed = progress["files"]
        self.stats.todo = len(self.todo) - progress["files"]
        self.stats.complete = self.stats.todo == 0

    def _flush(self, files: list[Row], defs: list[Row]) -> None:
        self.db.executemany("INSERT INTO files VALUES (?, ?, ?, ?, ?)", files)
        self.db.executemany("INSERT INTO defs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", defs)
        files.clear()
        defs.clear()

    # -- the search tables ---------------------------------------------------------------------------

    def finish(self, started: float) -> BuildStats:
        """Word tables and meta for a complete index (in SQL, from the rows); meta alone for a
        partial one, which nobody searches."""
        db = self.db
        stats = self.stats
        stats.files = db.execute("SELECT count(*) FROM files").fetchone()[0]
        rows, total_len = db.execute("SELECT count(*), coalesce(sum(n), 0) FROM defs").fetchone()
        stats.definitions = rows
        t0 = time.perf_counter()
        if stats.complete:
            if self.use_fts5:
                db.execute(
                    f"CREATE VIRTUAL TABLE words USING fts5(name, scope, path, doc, {FTS5_OPTIONS})"
                )
                # All the rows go in at once and are merged into one segment at the end
                # ('optimize'), so merging segments as they are written is work done twice; a
                # bigger in-memory hash writes fewer, larger segments to merge. Measured on the
                # glibc and charts indexes: about a fifth less CPU and a tenth smaller; the same rows.
                for option, value in FTS5_BULK:
                    with contextlib.suppress(sqlite3.OperationalError):  # an SQLite without it
                        db.execute("INSERT INTO words (words, rank) VALUES (?, ?)", (option, value))
                db.execute(
                    "INSERT INTO words (rowid, name, scope, path, doc) "
                    "SELECT d.id, d.nw, d.sw, f.words, d.dw FROM defs d JOIN files f ON d.file = f.id"
                )
                db.execute("INSERT INTO words (words) VALUES ('optimize')")
            else:
                db.execute(
                    "CREATE TABLE post (term TEXT, id INTEGER, PRIMARY KEY (term, id)) WITHOUT ROWID"
                )
                db.executemany("INSERT OR IGNORE INTO post VALUES (?, ?)", _postings(db))
            db.execute("CREATE INDEX defs_by_file ON defs (file, line)")
        stats.tables_s = time.perf_counter() - t0
        stats.seconds = time.perf_counter() - started
        meta = {"version": VERSION, "engine": stats.engine, "rows": str(rows),
                "files": str(stats.files), "complete": "1" if stats.complete else "0",
                "avg_len": str(total_len / rows if rows else 1.0),
                "seconds": f"{stats.seconds:.3f}"}  # fmt: skip
        db.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
        db.commit()
        return stats


def _postings(db: sqlite3.Connection) -> Iterator[tuple[str, int]]:
    rows = db.execute(
        "SELECT d.id, d.nw, d.sw, f.words, d.dw FROM defs d JOIN files f ON d.file = f.id"
    ).fetchall()
    for rowid, *cols in rows:
        for w in set(" ".join(cols).split()):
            yield w, rowid
