"""A snapshot's definitions index on local disk: built once per SHA, ranked with BM25 (SQLite FTS5, or the same sums in Python)."""

from __future__ import annotations

import heapq
import math
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from codeask.search import index_build
from codeask.search.filekinds import file_kind
from codeask.search.index_build import VERSION, BuildStats, fts5_available
from codeask.snapshot import Snapshot

__all__ = ["DefinitionIndex", "Found", "Pending", "fts5_available", "index_for"]

RARE_MIN = 2000  # a word in at most this many definitions (or 2 % of them) finds candidates
CANDIDATES = 1000  # candidates the commoner words then add to
PATH_FILES = 8  # ... with every definition of the files whose paths match the question best
PATH_ROWS = 3000
DF_KEPT = 50_000  # words remembered with their counts (an index never changes once built)
# Definitions of the same kind and name (a `resources` key in every chart's values file, a
# `print_version` in every program) kept in one search's results: past this many, a copy says
# nothing the first ones did not, and the results' limit is left to different definitions.
TWINS_KEPT = 10
COLUMNS = ("name", "scope", "path", "doc")
WEIGHTS = (4.0, 1.0, 1.5, 1.0)  # what a word is worth in each column, for BM25
K1, B = 1.2, 0.75  # FTS5's bm25() constants, used by the Python fallback too
# The first search-only answer waits at most this long for a snapshot's index; a longer build
# goes on, a slice per question, and those questions are ranked by ripgrep's hits alone.
WAIT_S = 20.0
SLICE_S = 5.0  # what a question gives a build that is seen not to fit in its wait


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


@dataclass(frozen=True)
class Pending:
    """A snapshot's index that is not built yet: how many of its files are still to be read."""

    todo: int
    files: int


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
        self._path_words: dict[str, list[int]] = {}  # a path word -> the files it names
        for i, p, k, words in db.execute("SELECT id, path, kind, words FROM files"):
            self._paths[i] = (p, k)
            self._path_text[i] = f" {words} "
            for w in words.split():
                self._path_words.setdefault(w, []).append(i)
        self.rare_limit = max(RARE_MIN, self.rows // 50)
        # A word's count is asked for by the search, then again by the ranking (which words to
        # grep, what a body's words are worth, which line answers), and by the next question that
        # says it: each is one FTS5 lookup that reads the word's whole posting list.
        self._df: dict[str, int] = {}
        self._file_ids = {p: i for i, (p, _) in self._paths.items()}

    # -- building --------------------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        snapshot: Snapshot,
        target: Path | None,
        *,
        fts5: bool | None = None,
        budget_s: float | None = None,
        slice_s: float | None = None,
        workers: int | None = None,
    ) -> DefinitionIndex | BuildStats:
        """The snapshot's index, built now (see index_build.build), or the stats of a build that
        ran out of budget and left a partial index for the next one."""
        db, stats = index_build.build(
            snapshot, target, fts5=fts5, budget_s=budget_s, slice_s=slice_s, workers=workers
        )
        if not stats.complete:
            return stats
        if db is None and target is not None:
            db = _open_read_only(target)
        assert db is not None
        return cls(db, stats)

    @classmethod
    def open(cls, path: Path) -> DefinitionIndex | None:
        """An index built earlier, or None when it is missing, damaged or of another version."""
        if not path.is_file():
            return None
        try:
            db = _open_read_only(path)
            meta = dict(db.execute("SELECT key, value FROM meta"))
            if meta.get("version") != VERSION or meta.get("complete") != "1":
                db.close()
                return None
            stats = BuildStats(int(meta["files"]), int(meta["rows"]), float(meta["seconds"]),
                               path.stat().st_size, meta["engine"])  # fmt: skip
            return cls(db, stats)
        except (sqlite3.DatabaseError, KeyError, ValueError):
            return None

    # -- searching -------------------------------------------------------------------------------

    def search(
        self,
        groups: list[tuple[tuple[str, ...], float]],
        limit: int = 300,
        kinds: dict[str, float] | None = None,
    ) -> list[Found]:
        """Definitions ranked by Σ weight × BM25 over each group of (stemmed) words.

        Candidates come from the words that describe few definitions (FTS5's bm25() scores every
        row with one of them) and from the files whose paths say most of the question's words
        (all their definitions); the commoner words then add to the candidates' scores, computed
        in Python the same way: scoring every row that says `test` or `chart` costs far more than
        it tells.

        `kinds` weighs a definition by its file's kind (tests, docs) for the `limit` kept, as the
        caller's ranking will: a project's tests name what its code does in as many words, and
        would otherwise fill the results. Scores are returned unweighted."""
        weight, mask = _word_weights(groups)
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
            kept = set(top)
            for rowid in self._in_files(self._path_files(present, df)):
                if rowid not in kept:  # a path file's row a rare word scored below the cut too
                    scores.setdefault(rowid, 0.0)
                    matched.setdefault(rowid, 0)
                    kept.add(rowid)
                    top.append(rowid)
            if common:
                for rowid, freqs in self._freqs(top, common).items():
                    for word in common:
                        f = freqs[0].get(word)
                        if f:
                            scores[rowid] += weight[word] * self._bm25(f, freqs[1], df[word])
                            matched[rowid] |= mask[word]
            known = self._rows([r for r in top if scores[r] > 0]) if kinds else {}
            worth = {r: scores[r] * kinds.get(self._paths[row[0]][1], 1.0)
                     for r, row in known.items()} if kinds else scores  # fmt: skip
            ordered = sorted(top, key=lambda r: (-worth.get(r, 0.0), r))
            best, rows = self._best(ordered, scores, limit, known)
        out = []
        for rowid in best:
            file_id, line, end, kind, name, scope = rows[rowid]
            path, _ = self._paths[file_id]
            out.append(Found(path, line, end, kind, name, tuple(scope.split("\x1f")) if scope else (),
                             scores[rowid], _bits(matched[rowid])))  # fmt: skip
        return out

    def file_scores(
        self, paths: list[str], groups: list[tuple[tuple[str, ...], float]]
    ) -> dict[str, float]:
        """Σ weight × BM25 of each file's own entry (its name, its path's words and its opening
        comment or docstring) for the query, as `search` scores a definition; 0 for none."""
        weight, _ = _word_weights(groups)
        ids = [self._file_ids[p] for p in paths if p in self._file_ids]
        out: dict[str, float] = {}
        with self._lock:
            df = {w: self._count(w) for w in weight}
            words = [w for w in weight if df[w]]
            if not words or not ids:
                return out
            files: dict[int, int] = {}  # the entry's row -> its file
            for i in range(0, len(ids), 500):
                chunk = ids[i : i + 500]
                marks = ",".join("?" * len(chunk))
                q = f"SELECT id, file FROM defs WHERE file IN ({marks}) AND kind = 'file'"
                files.update(self._db.execute(q, chunk))
            for rowid, (fs, length) in self._freqs(list(files), words).items():
                score = math.fsum(weight[w] * self._bm25(f, length, df[w]) for w, f in fs.items())
                if score > 0:
                    out[self._paths[files[rowid]][0]] = score
        return out

    def _best(
        self,
        ordered: list[int],
        scores: dict[int, float],
        limit: int,
        known: dict[int, tuple[int, int, int, str, str, str]] | None = None,
    ) -> tuple[list[int], dict[int, tuple[int, int, int, str, str, str]]]:
        """The first `limit` rows of `ordered` that score, with at most TWINS_KEPT of each kind
        and name, and their rows (`known`: rows read already)."""
        best: list[int] = []
        rows: dict[int, tuple[int, int, int, str, str, str]] = {}
        seen: dict[tuple[str, str], int] = {}
        for i in range(0, len(ordered), limit):
            chunk = [r for r in ordered[i : i + limit] if scores[r] > 0]
            got = known if known else self._rows(chunk)
            for rowid in chunk:
                row = got[rowid]
                key = (row[3], row[4])
                seen[key] = seen.get(key, 0) + 1
                if seen[key] <= TWINS_KEPT:
                    best.append(rowid)
                    rows[rowid] = row
                    if len(best) >= limit:
                        return best, rows
            if len(chunk) < len(ordered[i : i + limit]):
                break  # the rest score nothing
        return best, rows

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

    def named(self, names: list[str]) -> list[tuple[str, int, int, str, str]]:
        """(path, line, end, kind, name) of every definition with one of these exact names."""
        out: list[tuple[str, int, int, str, str]] = []
        with self._lock:
            for i in range(0, len(names), 500):
                chunk = names[i : i + 500]
                marks = ",".join("?" * len(chunk))
                for file_id, line, end, kind, name in self._db.execute(
                    f"SELECT file, line, end_line, kind, name FROM defs WHERE name IN ({marks}) "
                    "AND kind != 'file'",
                    chunk,
                ):
                    out.append((self._paths[file_id][0], line, end, kind, name))
        return sorted(out)

    def count(self, word: str) -> int:
        """How many definitions a (stemmed) word describes: its rarity in this snapshot."""
        with self._lock:
            return self._count(word)

    def file_kind(self, path: str) -> str:
        file_id = self._file_ids.get(path)
        return self._paths[file_id][1] if file_id is not None else file_kind(path)

    def _count(self, word: str) -> int:
        got = self._df.get(word)
        if got is not None:
            return got
        if self.engine == "fts5":
            q = "SELECT count(*) FROM words WHERE words MATCH ?"
            row = self._db.execute(q, (f'"{word}"',)).fetchone()
        else:
            row = self._db.execute("SELECT count(*) FROM post WHERE term = ?", (word,)).fetchone()
        if len(self._df) >= DF_KEPT:
            self._df.clear()
        got = self._df[word] = int(row[0])
        return got

    def _path_files(self, words: list[str], df: dict[str, int]) -> list[int]:
        """The files whose paths hold the most of the words (weighted by rarity), best first."""
        scores: dict[int, float] = {}
        for w in words:
            idf = math.log(1 + self.rows / df[w])
            for file_id in self._path_words.get(w, ()):
                scores[file_id] = scores.get(file_id, 0.0) + idf
        return [f for _, f in heapq.nsmallest(PATH_FILES, ((-s, f) for f, s in scores.items()))]

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
            for rowid, file_id, nw, sw, dw, n in self._db.execute(
                f"SELECT id, file, nw, sw, dw, n FROM defs WHERE id IN ({marks})", chunk
            ):
                whole = f" {nw}  {sw}  {dw} "
                fs = {}
                for w, pw in padded:
                    key = (file_id, w)
                    f = in_path.get(key)
                    if f is None:
                        f = in_path[key] = wp * self._path_text[file_id].count(pw)
                    if pw in whole:
                        f += (wn * f" {nw} ".count(pw) + ws * f" {sw} ".count(pw)
                              + wd * f" {dw} ".count(pw))  # fmt: skip
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


# -- one index per snapshot per process ------------------------------------------------------------

_CACHED = 8
_cache: dict[tuple[str, str], DefinitionIndex] = {}
_cache_lock = threading.Lock()
_build_locks: dict[tuple[str, str], threading.Lock] = {}


def index_for(
    snapshot: Snapshot, *, wait_s: float | None = WAIT_S, slice_s: float = SLICE_S
) -> DefinitionIndex | Pending:
    """The snapshot's index: from this process's cache, from disk, or built now (once per SHA).

    A build is given `wait_s` (None: as long as it takes); one that will not finish in it spends
    `slice_s` and is continued by the next call, and Pending says how much is left.
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
            # An index kept only in memory cannot be continued later: it is built whole.
            budget = wait_s if where is not None else None
            built = DefinitionIndex.build(snapshot, where, budget_s=budget, slice_s=slice_s)
            if isinstance(built, BuildStats):
                return Pending(built.todo, built.files + built.todo)
            index = built
        with _cache_lock:
            _cache[key] = index
            while len(_cache) > _CACHED:
                _cache.pop(next(iter(_cache)))
        return index


def _word_weights(
    groups: list[tuple[tuple[str, ...], float]],
) -> tuple[dict[str, float], dict[str, int]]:
    """Each word's weight, summed over the groups it is in (once per group), and which groups it
    is in, one bit each."""
    weight: dict[str, float] = {}
    mask: dict[str, int] = {}
    for gi, (words, w) in enumerate(groups):
        for word in dict.fromkeys(words):
            weight[word] = weight.get(word, 0.0) + w
            mask[word] = mask.get(word, 0) | 1 << gi
    return weight, mask
