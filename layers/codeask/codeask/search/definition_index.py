"""A snapshot's definitions index on local disk: built once per SHA, ranked with BM25 (SQLite FTS5, or the same sums in Python)."""

from __future__ import annotations

import contextlib
import heapq
import math
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from codeask.search.definitions import Definition, extract
from codeask.search.filekinds import file_kind
from codeask.search.vocabulary import tokens
from codeask.snapshot import Snapshot

VERSION = "4"  # bump when what is indexed, or how, changes: older files are rebuilt
MAX_FILE_BYTES = 4_000_000
BINARY_SNIFF = 8000
DOC_TOKENS = 60
RARE_MIN = 2000  # a word in at most this many definitions (or 2 % of them) finds candidates
CANDIDATES = 1000  # candidates the commoner words then add to
PATH_FILES = 8  # ... with every definition of the files whose paths match the question best
PATH_ROWS = 3000
COLUMNS = ("name", "scope", "path", "doc")
# Contentless: the words are only searched, never shown, so their text need not be stored.
FTS5_OPTIONS = "content='', detail=full, tokenize='unicode61'"
WEIGHTS = (4.0, 1.0, 1.5, 1.0)  # what a word is worth in each column, for BM25
K1, B = 1.2, 0.75  # FTS5's bm25() constants, used by the Python fallback too
# Plain English that fills comments and docstrings but never tells two definitions apart.
_DOC_STOP = frozenset(
    """the a an and or of to in is are be it this that for on as with by at from not if when
    which can will was were has have had its into than then there these those but all any so
    no such only may also should would could do does did been being our we you your they them
    their he she his her i me my us""".split()
)


@dataclass(frozen=True)
class Found:
    """A definition that answers some of the query, with its BM25 score."""

    path: str
    line: int
    end: int
    kind: str
    name: str
    scope: tuple[str, ...]
    score: float
    groups: frozenset[int] = field(default_factory=frozenset)  # which query groups it matched


@dataclass
class BuildStats:
    files: int = 0
    definitions: int = 0
    seconds: float = 0.0
    bytes: int = 0
    engine: str = ""


def fts5_available() -> bool:
    """Whether this Python's SQLite has FTS5 compiled in (the index falls back to plain tables)."""
    try:
        with contextlib.closing(sqlite3.connect(":memory:")) as db:
            db.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        return True
    except sqlite3.OperationalError:
        return False


class DefinitionIndex:
    """Definitions of one snapshot, searchable by words. Read-only once built; safe across threads."""

    def __init__(self, db: sqlite3.Connection, stats: BuildStats) -> None:
        self._db = db
        self._lock = threading.Lock()
        self.stats = stats
        meta = dict(db.execute("SELECT key, value FROM meta"))
        self.engine = meta["engine"]
        self.rows = int(meta["rows"])
        self.avg_len = float(meta["avg_len"])
        self._paths: dict[int, tuple[str, str]] = {}
        self._path_text: dict[int, str] = {}  # a file's path words, padded for counting
        for i, p, k, words in db.execute("SELECT id, path, kind, words FROM files"):
            self._paths[i] = (p, k)
            self._path_text[i] = f" {words} "
        self.rare_limit = max(RARE_MIN, self.rows // 50)
        self._file_ids = {p: i for i, (p, _) in self._paths.items()}

    # -- building --------------------------------------------------------------------------------

    @classmethod
    def build(
        cls, snapshot: Snapshot, target: Path | None, *, fts5: bool | None = None
    ) -> DefinitionIndex:
        """Index every file of `snapshot`: into `target` (written beside it, then renamed into
        place, so a reader never sees half an index), or in memory when `target` is None."""
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
            stats = _write(db, snapshot, use_fts5)
            if tmp is not None and target is not None:
                db.close()
                stats.bytes = tmp.stat().st_size
                os.replace(tmp, target)  # a rival builder's identical index may be replaced
                db = _open_read_only(target)
            stats.seconds = time.perf_counter() - started
            return cls(db, stats)
        except BaseException:
            db.close()
            if tmp is not None:
                with contextlib.suppress(OSError):
                    tmp.unlink()
            raise

    @classmethod
    def open(cls, path: Path) -> DefinitionIndex | None:
        """An index built earlier, or None when it is missing, damaged or of another version."""
        if not path.is_file():
            return None
        try:
            db = _open_read_only(path)
            meta = dict(db.execute("SELECT key, value FROM meta"))
            if meta.get("version") != VERSION:
                db.close()
                return None
            stats = BuildStats(int(meta["files"]), int(meta["rows"]), float(meta["seconds"]),
                               path.stat().st_size, meta["engine"])  # fmt: skip
            return cls(db, stats)
        except (sqlite3.DatabaseError, KeyError, ValueError):
            return None

    # -- searching -------------------------------------------------------------------------------

    def search(self, groups: list[tuple[tuple[str, ...], float]], limit: int = 300) -> list[Found]:
        """Definitions ranked by Σ weight × BM25 over each group of (stemmed) words.

        Candidates come from the words that describe few definitions (FTS5's bm25() scores every
        row with one of them) and from the files whose paths say most of the question's words
        (all their definitions); the commoner words then add to the candidates' scores, computed
        in Python the same way: scoring every row that says `test` or `chart` costs far more than
        it tells."""
        weight: dict[str, float] = {}
        mask: dict[str, int] = {}  # which groups a word belongs to, one bit each
        for gi, (words, w) in enumerate(groups):
            for word in dict.fromkeys(words):
                weight[word] = weight.get(word, 0.0) + w
                mask[word] = mask.get(word, 0) | 1 << gi
        with self._lock:
            df = {w: self._count(w) for w in weight}
            present = sorted((w for w in weight if df[w]), key=lambda w: (df[w], w))
            rare = [w for w in present if df[w] <= self.rare_limit] or present[:1]
            common = [w for w in present if w not in rare]
            scores: dict[int, float] = {}
            matched: dict[int, int] = {}
            for word, hits in self._rare_scores(rare, df):
                w, m = weight[word], mask[word]
                for rowid, s in hits:
                    scores[rowid] = scores.get(rowid, 0.0) + w * s
                    matched[rowid] = matched.get(rowid, 0) | m
            top = heapq.nsmallest(CANDIDATES, scores, key=lambda r: (-scores[r], r))
            for rowid in self._in_files(self._path_files(present, df)):
                if rowid not in scores:
                    scores[rowid] = 0.0
                    matched[rowid] = 0
                    top.append(rowid)
            if common:
                for rowid, freqs in self._freqs(top, common).items():
                    for word in common:
                        f = freqs[0].get(word)
                        if f:
                            scores[rowid] += weight[word] * self._bm25(f, freqs[1], df[word])
                            matched[rowid] |= mask[word]
            best = heapq.nsmallest(limit, top, key=lambda r: (-scores[r], r))
            best = [r for r in best if scores[r] > 0]
            rows = self._rows(best)
        out = []
        for rowid in best:
            file_id, line, end, kind, name, scope = rows[rowid]
            path, _ = self._paths[file_id]
            out.append(Found(path, line, end, kind, name, tuple(scope.split("\x1f")) if scope else (),
                             scores[rowid], _bits(matched[rowid])))  # fmt: skip
        return out

    def definitions_in(self, path: str) -> list[tuple[int, int, str, str]]:
        """(line, end, kind, name) of every definition in one file, in line order."""
        file_id = self._file_ids.get(path)
        if file_id is None:
            return []
        with self._lock:
            return list(
                self._db.execute(
                    "SELECT line, end_line, kind, name FROM defs WHERE file = ? AND kind != 'file' "
                    "ORDER BY line",
                    (file_id,),
                )
            )

    def count(self, word: str) -> int:
        """How many definitions a (stemmed) word describes: its rarity in this snapshot."""
        with self._lock:
            return self._count(word)

    def file_kind(self, path: str) -> str:
        file_id = self._file_ids.get(path)
        return self._paths[file_id][1] if file_id is not None else file_kind(path)

    def _count(self, word: str) -> int:
        if self.engine == "fts5":
            q = "SELECT count(*) FROM words WHERE words MATCH ?"
            row = self._db.execute(q, (f'"{word}"',)).fetchone()
        else:
            row = self._db.execute("SELECT count(*) FROM post WHERE term = ?", (word,)).fetchone()
        return int(row[0])

    def _path_files(self, words: list[str], df: dict[str, int]) -> list[int]:
        """The files whose paths hold the most of the words (weighted by rarity), best first."""
        padded = [(f" {w} ", math.log(1 + self.rows / df[w])) for w in words]
        scored = []
        for file_id, text in self._path_text.items():
            s = sum(idf for pw, idf in padded if pw in text)
            if s:
                scored.append((-s, file_id))
        return [f for _, f in heapq.nsmallest(PATH_FILES, scored)]

    def _in_files(self, file_ids: list[int]) -> list[int]:
        out: list[int] = []
        for file_id in file_ids:
            q = "SELECT id FROM defs WHERE file = ? LIMIT ?"
            out += [r for (r,) in self._db.execute(q, (file_id, PATH_ROWS - len(out)))]
            if len(out) >= PATH_ROWS:
                break
        return out

    def _rare_scores(
        self, words: list[str], df: dict[str, int]
    ) -> Iterator[tuple[str, list[tuple[int, float]]]]:
        """Each word's rows with its BM25 score in each."""
        if self.engine == "fts5":
            w = ", ".join(str(x) for x in WEIGHTS)
            q = f"SELECT rowid, -bm25(words, {w}) FROM words WHERE words MATCH ?"
            for word in words:
                yield word, self._db.execute(q, (f'"{word}"',)).fetchall()
            return
        ids: dict[int, None] = {}
        for word in words:
            for (rowid,) in self._db.execute("SELECT id FROM post WHERE term = ?", (word,)):
                ids[rowid] = None
        freqs = self._freqs(list(ids), words)
        for word in words:
            hits = []
            for rowid, (fs, length) in freqs.items():
                f = fs.get(word)
                if f:
                    hits.append((rowid, self._bm25(f, length, df[word])))
            yield word, hits

    def _bm25(self, f: float, length: int, df: int) -> float:
        """FTS5's bm25() for one word in one row: idf × f(k1+1) / (f + k1(1 − b + b·len/avg)), where
        f adds a column's weight for each time the word is in it and len counts the row's words."""
        idf = math.log((self.rows - df + 0.5) / (df + 0.5))
        idf = idf if idf > 0 else 1e-6
        return idf * f * (K1 + 1) / (f + K1 * (1 - B + B * length / self.avg_len))

    def _freqs(self, ids: list[int], words: list[str]) -> dict[int, tuple[dict[str, float], int]]:
        """Each row's weighted frequency of each of `words`, and its length in words."""
        out = {}
        wn, ws, wp, wd = WEIGHTS
        padded = [(w, f" {w} ") for w in words]
        in_path: dict[tuple[int, str], float] = {}
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for rowid, file_id, text, n in self._db.execute(
                f"SELECT id, file, words, n FROM defs WHERE id IN ({marks})", chunk
            ):
                whole = f" {text.replace(chr(9), '  ')} "
                fs = {}
                for w, pw in padded:
                    key = (file_id, w)
                    f = in_path.get(key)
                    if f is None:
                        f = in_path[key] = wp * self._path_text[file_id].count(pw)
                    if pw in whole:
                        name, scope, doc = text.split("\t")
                        f += (wn * f" {name} ".count(pw) + ws * f" {scope} ".count(pw)
                              + wd * f" {doc} ".count(pw))  # fmt: skip
                    if f:
                        fs[w] = f
                out[rowid] = (fs, n)
        return out

    def _rows(self, ids: list[int]) -> dict[int, tuple[int, int, int, str, str, str]]:
        out = {}
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for row in self._db.execute(
                f"SELECT id, file, line, end_line, kind, name, scope FROM defs WHERE id IN ({marks})",
                chunk,
            ):
                out[row[0]] = row[1:]
        return out


def _bits(mask: int) -> frozenset[int]:
    return frozenset(i for i in range(mask.bit_length()) if mask >> i & 1)


def _open_read_only(path: Path) -> sqlite3.Connection:
    # immutable: the file never changes once renamed into place, so no locks are needed
    return sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True, check_same_thread=False)


def _write(db: sqlite3.Connection, snapshot: Snapshot, use_fts5: bool) -> BuildStats:
    started = time.perf_counter()
    db.execute("PRAGMA journal_mode = OFF")
    db.execute("PRAGMA synchronous = OFF")
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    db.execute("CREATE TABLE files (id INTEGER PRIMARY KEY, path TEXT, kind TEXT, words TEXT)")
    # `words`: the stemmed words of the name, scope and doc columns, tab-separated
    db.execute(
        "CREATE TABLE defs (id INTEGER PRIMARY KEY, file INTEGER, line INTEGER, end_line INTEGER, "
        "kind TEXT, name TEXT, scope TEXT, words TEXT, n INTEGER)"
    )
    if use_fts5:
        db.execute(f"CREATE VIRTUAL TABLE words USING fts5(name, scope, path, doc, {FTS5_OPTIONS})")
    else:
        db.execute(
            "CREATE TABLE post (term TEXT, id INTEGER, PRIMARY KEY (term, id)) WITHOUT ROWID"
        )
    stats = BuildStats(engine="fts5" if use_fts5 else "tables")
    total_len = 0
    rowid = 0
    defs_rows: list[tuple[object, ...]] = []
    word_rows: list[tuple[object, ...]] = []

    def flush() -> None:
        db.executemany("INSERT INTO defs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", defs_rows)
        if use_fts5:
            db.executemany("INSERT INTO words (rowid, name, scope, path, doc) VALUES (?, ?, ?, ?, ?)",
                           word_rows)  # fmt: skip
        else:
            post = {(w, rid) for rid, *cols in word_rows for col in cols for w in str(col).split()}
            db.executemany("INSERT INTO post VALUES (?, ?)", sorted(post))
        defs_rows.clear()
        word_rows.clear()

    for file_id, (path, defs) in enumerate(_definitions(snapshot)):
        kind = file_kind(path)
        base = path.rsplit("/", 1)[-1]
        bare = path[: len(path) - len(base)] + (base.rsplit(".", 1)[0] if "." in base[1:] else base)
        path_words = " ".join(dict.fromkeys(tokens(bare)))
        db.execute("INSERT INTO files VALUES (?, ?, ?, ?)", (file_id, path, kind, path_words))
        stats.files += 1
        for d in defs:
            rowid += 1
            name = " ".join(tokens(d.name))
            scope = " ".join(tokens(" ".join(d.scope)))
            doc = " ".join([w for w in tokens(d.doc) if w not in _DOC_STOP][:DOC_TOKENS])
            length = sum(len(s.split()) for s in (name, scope, path_words, doc))
            total_len += length
            defs_rows.append((rowid, file_id, d.line, d.end, d.kind, d.name, "\x1f".join(d.scope),
                              f"{name}\t{scope}\t{doc}", length))  # fmt: skip
            word_rows.append((rowid, name, scope, path_words, doc))
        if len(defs_rows) > 5000:
            flush()
    flush()
    db.execute("CREATE INDEX defs_by_file ON defs (file, line)")
    if use_fts5:
        db.execute("INSERT INTO words (words) VALUES ('optimize')")
    stats.definitions = rowid
    meta = {"version": VERSION, "engine": stats.engine, "rows": str(rowid), "files": str(stats.files),
            "avg_len": str(total_len / rowid if rowid else 1.0),
            "seconds": f"{time.perf_counter() - started:.3f}"}  # fmt: skip
    db.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
    db.commit()
    return stats


def _definitions(snapshot: Snapshot) -> Iterable[tuple[str, list[Definition]]]:
    root = snapshot.root
    for rel in snapshot.files:
        real = root / rel
        try:
            if real.is_symlink() or real.stat().st_size > MAX_FILE_BYTES:
                continue
            data = real.read_bytes()
        except OSError:
            continue
        if b"\x00" in data[:BINARY_SNIFF]:
            continue
        lines = data.decode("utf-8", "replace").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        try:
            defs = extract(rel, lines)
        except (RecursionError, ValueError):
            continue  # one odd file must not cost the whole index
        yield rel, defs


# -- one index per snapshot per process ------------------------------------------------------------

_CACHED = 8
_cache: dict[tuple[str, str], DefinitionIndex] = {}
_cache_lock = threading.Lock()
_build_locks: dict[tuple[str, str], threading.Lock] = {}


def index_for(snapshot: Snapshot) -> DefinitionIndex:
    """The snapshot's index: from this process's cache, from disk, or built now (once per SHA).

    Raises OSError or sqlite3.Error when it cannot be built (a full disk, say)."""
    where = snapshot.index_path
    key = (str(where or snapshot.root), snapshot.sha)
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None:
            return hit
        lock = _build_locks.setdefault(key, threading.Lock())
    with lock:  # threads of one process build it once; processes each rename a whole file
        with _cache_lock:
            hit = _cache.get(key)
        if hit is not None:
            return hit
        index = DefinitionIndex.open(where) if where is not None else None
        if index is None:
            index = DefinitionIndex.build(snapshot, where)
        with _cache_lock:
            _cache[key] = index
            while len(_cache) > _CACHED:
                _cache.pop(next(iter(_cache)))
        return index
