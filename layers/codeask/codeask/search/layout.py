"""Which hits a search result shows, and how: in full with context, as a preview, or only counted, in a budget."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from codeask.search import elsewhere
from codeask.search.filekinds import file_kind, language_of, refine_language, says_generated
from codeask.search.patterns import is_identifier
from codeask.search.query import FileHits, Hit, SearchOutcome
from codeask.search.syntax import Context, FileSyntax, HitInfo, syntax_for

# 10,000 characters (about 2,500 tokens): room for ~25 hits with their scope and a few lines of
# context each plus two or three small bodies, which is what one answer usually needs; a larger
# result mostly adds hits the model skims past, and costs every later round its tokens again.
BUDGET = 10_000
ALL_SHOWN = 25  # a result this small is shown whole, context trimmed to fit
FULL_SHARE = 0.62  # of the budget, for hits shown with their scope; then one-line previews
PREVIEW_SHARE = 0.88  # then counts per file
# A definition hit is shown to its end when its body (the signature, however long, not counted)
# has at most BODY_LINES lines; a longer one shows BODY_HEAD lines of body, then where it ends.
BODY_LINES = 60
BODY_HEAD = 30
BODY_CHARS = 3_200
MAX_BODIES = 4  # in a result of many hits, half as many
FEW_HITS = 3  # a result this small shows the whole function each hit is in ...
FEW_BODY = 80  # ... when it has at most this many lines
SHORT_FUNCTION = 60  # with room to spare, a lone hit in a function this short shows all of it
NONCODE = frozenset({"docs", "generated", "vendored"})
NONCODE_FULL = 3  # hits of a docs, generated or vendored file shown in full; the rest are previews
NONCODE_CONTEXT = 2  # of those, how many get lines around them
MACRO_LINES = (
    25  # a top-level macro use shows the macro's definition from the same file if this short
)
USES_FOR = 3  # definitions given a "called from" line (one rg for all their names)
USE_SCOPE_FILES = 4  # files parsed to name the function a use is in
PREVIEW_PARSE_FILES = 8  # files parsed only so that their previews can name their scope
TOP_CONTEXT = 10  # the best hits get their context before lower hits get room at all
WIDEN_BELOW = 0.6  # a result using less of the budget shows more of each hit's function
WIDER = ((4, 8), (8, 16))  # lines before and after a hit, in turn, while room lasts
FILE_CHUNK = 8  # hits a file contributes before the next file gets its turn
ALTERNATIVE_CHUNK = 6  # likewise for each alternative of an alternation
ANALYSED_PER_FILE = 150  # hits of one file given a scope and kind; the rest keep a guess
PARSE_FIRST = 6  # files parsed before ranking across files settles
PARSE_BUDGET_S = 0.6  # beyond this much parsing in one search, later files get heuristics
HIT_CHARS = 400
CONTEXT_CHARS = 220
PREVIEW_CHARS = 110


class FileSource:
    """How the renderer reads files: every line through the toolbox's masked view."""

    def __init__(
        self, lines: Callable[[str], list[str] | None], key: Callable[[str], tuple[str, str]]
    ) -> None:
        self.lines = lines
        self.key = key
        self.parse_s = 0.0

    def syntax(self, fh: FileHits) -> FileSyntax | None:
        try:
            lines = self.lines(fh.path)
        except (OSError, ValueError, LookupError):
            lines = None
        if lines is None:
            return None
        language = (
            refine_language(fh.language, lines, fh.path) if self.parse_s < PARSE_BUDGET_S else None
        )
        started = time.monotonic()
        syntax = syntax_for(self.key(fh.path), language, lines)
        self.parse_s += time.monotonic() - started
        return syntax


def clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f" [… line cut, {len(text) - limit} more characters]"


@dataclass
class ShownFile:
    """One file of a result: its hits, what is shown of each, and its parse."""

    fh: FileHits
    syntax: FileSyntax | None = None
    infos: dict[int, HitInfo] = field(default_factory=dict)
    full: list[Hit] = field(default_factory=list)
    preview: list[Hit] = field(default_factory=list)
    rows: set[int] = field(default_factory=set)  # context rows shown
    owner: dict[int, Hit] = field(default_factory=dict)  # the hit a context row was shown for
    full_lines: set[int] = field(default_factory=set)
    cuts: dict[int, int] = field(default_factory=dict)  # a body's last row shown -> its last row
    uses: dict[int, str] = field(default_factory=dict)  # a definition hit's row -> where it is used

    @property
    def lines(self) -> list[str] | None:
        return self.syntax.lines if self.syntax is not None else None

    def text(self, row: int, fallback: str = "") -> str:
        lines = self.lines
        if lines is not None and 1 <= row <= len(lines):
            return lines[row - 1]  # the masked view: a key body line never shows
        return fallback

    def label(self, hit: Hit) -> str:
        info = self.infos.get(hit.line)
        if info is None:
            return ""
        parts = list(info.scope)
        if info.decorates:
            parts.append(f"@ decorates {info.decorates}")
        return " › ".join(parts)

    def short_label(self, hit: Hit) -> str:
        """A preview's scope in a few words: `def send()`, or a key path's last two keys."""
        info = self.infos.get(hit.line)
        if info is None or not info.scope:
            return ""
        inner = info.scope[-1]
        if "(" in inner:
            return clip(inner.split("(", 1)[0].strip(), 60) + "()"
        parts = info.scope[-2:]
        item = next((p for p in reversed(info.scope[:-2]) if "[" in p), None)
        if item is not None:  # the list item a key is under says most: `env[PGPASSWORD] › …`
            parts = [item, "…", inner]
        return clip(" › ".join(parts), 70)


class Layout:
    """Plans which hits are shown in full, previewed or counted, measuring with the writer."""

    def __init__(self, outcome: SearchOutcome, source: FileSource, budget: int = BUDGET) -> None:
        self.o = outcome
        self.source = source
        self.budget = budget
        # Matches only inside longer words are noise beside whole-word ones: a file where a word
        # is only part of longer ones ('redistribute' for `redis`) is set aside and summarised,
        # and so is every match of a name inside a longer name (`_IO_cleanup_region_start` for
        # `_IO_cleanup`), which is another name.
        self.inside: list[tuple[FileHits, list[Hit]]] = []
        files = outcome.files
        if outcome.plain_words and any(not h.in_longer_word for f in files for h in f.hits):
            for f in files:
                only = all(h.in_longer_word for h in f.hits)
                longer = [h for h in f.hits if h.in_longer_word and (only or self._names(h))]
                if longer:
                    self.inside.append((f, longer))
                    f.hits = [h for h in f.hits if h not in longer]
                    f.rescore()
            files = sorted((f for f in files if f.hits), key=lambda f: (-f.score, f.path))
        self.files = [ShownFile(f) for f in files]
        self.write: Callable[[], str] = lambda: ""
        self._text = ""
        self.few = False

    def _names(self, h: Hit) -> bool:
        """The hit's word is a name of its own (`_IO_cleanup`), not an English word."""
        o = self.o
        alts = o.alternatives or o.plain_words[:1]
        word = alts[h.alternative or 0] if alts else ""
        return is_identifier(word)

    def fill(self, write: Callable[[], str]) -> str:
        """Plan the result with `write` (which writes the current plan) and return the text."""
        self.write = write
        self.plan()
        return self._text

    # -- analysis --------------------------------------------------------------------------------

    def _analyse(self, f: ShownFile) -> None:
        if f.syntax is not None or f.fh.parsed:
            return
        f.syntax = self.source.syntax(f.fh)
        f.fh.parsed = True
        if f.syntax is None:
            return
        if f.fh.kind != "generated" and says_generated(f.syntax.lines[:5]):
            f.fh.kind = "generated"
        hits = f.fh.hits[:ANALYSED_PER_FILE]  # the file's best by their guessed kind
        f.syntax.prepare([h.line for h in hits])
        for h in hits:
            spans = h.spans
            lines = f.syntax.lines
            if 1 <= h.line <= len(lines) and lines[h.line - 1] != h.text:
                spans = []  # rg's line was cut to a preview: spans do not apply
            info = f.syntax.info(h.line, spans)
            f.infos[h.line] = info
            if f.syntax.parsed or info.kind == "comment":
                h.kind = info.kind
            elif info.kind == "definition" and f.fh.kind != "docs":
                h.kind = info.kind  # a heuristic: `X=1` in prose is an example
        f.fh.rescore()

    def _order(self) -> list[tuple[ShownFile, Hit]]:
        """Hits in the order they earn room: a file's best few, then the next file's; with an
        alternation, each alternative's best few in turn, so a common one cannot starve a rare one."""
        for f in self.files[:PARSE_FIRST]:
            self._analyse(f)
        self.files.sort(key=lambda f: (-f.fh.score, f.fh.path))
        keyed = []
        per_alt: dict[int | None, int] = {}
        for file_rank, f in enumerate(self.files):
            for rank, h in enumerate(f.fh.hits):
                alt_rank = per_alt.get(h.alternative, 0)
                per_alt[h.alternative] = alt_rank + 1
                alt_chunk = alt_rank // ALTERNATIVE_CHUNK if self.o.alternatives else 0
                key = (not h.exact_case, alt_chunk, rank // FILE_CHUNK, file_rank, rank)
                keyed.append((key, f, h))
        keyed.sort(key=lambda k: k[0])
        return [(f, h) for _, f, h in keyed]

    # -- planning --------------------------------------------------------------------------------

    def plan(self) -> None:
        """In rank order: each hit is shown in full (its text and scope) while a share of the
        budget lasts, then as a one-line preview, then only counted. The best hits' bodies and
        context are paid for as they are placed; the others get context from what is left. A
        docs, generated or vendored file shows only its first few hits in full."""
        order = self._order()
        show_all = len(order) <= ALL_SHOWN
        self.few = len(order) <= FEW_HITS
        uses = self._start_uses() if show_all else None
        bodies = MAX_BODIES if show_all else MAX_BODIES // 2
        used = 0
        labels: dict[str, set[str]] = {}
        added: list[tuple[ShownFile, set[int]]] = []
        placed = 0
        preview_parsed = 0
        share = self.budget * FULL_SHARE
        for f, h in order:
            if not f.full and not f.preview:
                used += len(f.fh.path) + 40
            if f.syntax is None and not f.fh.parsed and used < share:
                self._analyse(f)
            label = f.label(h)
            cost = len(clip(f.text(h.line, h.text), HIT_CHARS)) + 10
            seen = labels.setdefault(f.fh.path, set())
            if label and label not in seen:
                cost += len(label) + 6
            noncode = f.fh.kind in NONCODE
            capped = noncode and len(f.full) >= NONCODE_FULL
            if show_all or (used + cost <= share and not capped):
                f.full.append(h)
                f.full_lines.add(h.line)
                seen.add(label)
                used += cost
                if placed < TOP_CONTEXT and not (noncode and len(f.full) > NONCODE_CONTEXT):
                    rows, is_body = self._context(f, h, bodies > 0)
                    if not show_all:
                        rows = self._within(f, rows, share - used)
                    if rows:
                        bodies -= is_body
                        used += self._rows_cost(f, rows)
                        self._note_cut(f, h, rows)
                        self._add_rows(f, h, rows, added)
                placed += 1
                continue
            cost = min(len(h.text.strip()), PREVIEW_CHARS) + 12
            if used + cost <= self.budget * PREVIEW_SHARE:
                if (
                    f.syntax is None
                    and not f.fh.parsed
                    and preview_parsed < PREVIEW_PARSE_FILES
                    and h.kind not in ("comment", "string")  # a licence line has no scope
                ):
                    preview_parsed += 1
                    self._analyse(f)  # so that the preview can name its scope
                f.preview.append(h)
                used += cost + len(f.short_label(h)) + 6
        self._context_for_the_rest(order[TOP_CONTEXT:], show_all, bodies, added)
        if uses is not None:
            self._show_uses(*uses)
        self._fit(order, added)

    def _start_uses(self) -> tuple[list[tuple[ShownFile, Hit, str]], Future[Any]] | None:
        """In a small result, the best few definitions whose uses it does not show get a line
        saying where they are called from: one more rg for all their names, capped, started now
        so that it runs while the rest of the result is laid out."""
        lookup = self.o.lookup
        if lookup is None:
            return None
        candidates: list[tuple[float, ShownFile, Hit, str]] = []
        for f in self.files:
            if f.syntax is None or f.syntax.config:
                continue
            for h in f.fh.hits:
                info = f.infos.get(h.line)
                if h.kind != "definition" or info is None or not info.defines or not info.whole:
                    continue
                if info.whole[1] > info.whole[0] or f.syntax.template is not None:
                    candidates.append((h.score, f, h, info.defines))
        candidates.sort(key=lambda c: -c[0])
        shown_uses = self._names_used()
        names: set[str] = set()
        chosen: list[tuple[ShownFile, Hit, str]] = []
        for _, f, h, name in candidates:
            if name not in shown_uses and name not in names and len(chosen) < USES_FOR:
                names.add(name)  # a name defined twice (a method and its override) is told once
                chosen.append((f, h, name))
        if not chosen:
            return None
        wanted = [(name, f.fh.path, h.line) for f, h, name in chosen]
        pool = ThreadPoolExecutor(max_workers=1)
        future = pool.submit(elsewhere.find_uses, lookup, wanted)
        pool.shutdown(wait=False)
        return chosen, future

    def _show_uses(self, chosen: list[tuple[ShownFile, Hit, str]], future: Future[Any]) -> None:
        found: dict[tuple[str, int], elsewhere.Uses] = future.result()
        parsed: set[str] = set()
        for f, h, _name in chosen:
            uses = found.get((f.fh.path, h.line))
            if uses is None or h not in f.full:
                continue
            kept: list[elsewhere.Use] = []
            for use in uses.sites:
                if len(kept) == elsewhere.USE_SITES:
                    break
                if use.path in parsed or (
                    len(parsed) < USE_SCOPE_FILES and self.source.parse_s < PARSE_BUDGET_S
                ):
                    parsed.add(use.path)
                    scope, kind = self._scope_of(use.path, use.line, uses.name)
                    if kind == "comment":
                        uses.total -= 1
                        continue  # inside a block comment, which the line alone did not show
                    use.scope = scope
                kept.append(use)
            uses.sites = kept
            f.uses[h.line] = uses.describe()

    def _names_used(self) -> set[str]:
        """Names the result already shows used (a search for the name itself has its callers)."""
        words: set[str] = set()
        for f in self.files:
            for h in f.fh.hits:
                if h.kind not in ("definition", "comment", "import"):
                    words.update(_NAME.findall(h.text))
        return words

    def _scope_of(self, path: str, line: int, name: str) -> tuple[str, str]:
        """The function a use is in, in a few words, and the use's kind, from the parser."""
        fh = FileHits(path, file_kind(path), language_of(path))
        syntax = self.source.syntax(fh)
        if syntax is None:
            return "", "reference"
        text = syntax.lines[line - 1] if 1 <= line <= len(syntax.lines) else ""
        at = text.find(name)
        spans = [(at, at + len(name))] if at >= 0 else []
        syntax.prepare([line])
        info = syntax.info(line, spans)
        scope = info.scope
        if not scope or (info.extent is not None and info.extent[0] == line):
            return "", info.kind  # a macro line read as the start of a definition names nothing
        inner = scope[-1]
        short = clip(inner.split("(", 1)[0].strip(), 60) + ("()" if "(" in inner else "")
        return short, info.kind

    def _context_for_the_rest(
        self,
        rest: list[tuple[ShownFile, Hit]],
        show_all: bool,
        bodies: int,
        added: list[tuple[ShownFile, set[int]]],
    ) -> None:
        """Context for the hits placed after the best ones, from what is left (_fit trims it)."""
        for f, h in rest:
            if not show_all and h.kind in ("comment", "string"):
                continue  # prose reads on its own; its neighbours rarely matter to the answer
            if h not in f.full or (f.fh.kind in NONCODE and f.full.index(h) >= NONCODE_CONTEXT):
                continue
            if f.syntax is not None:
                rows, is_body = self._context(f, h, bodies > 0)
                bodies -= is_body
                self._note_cut(f, h, rows)
                self._add_rows(f, h, rows, added)

    @staticmethod
    def _rows_cost(f: ShownFile, rows: set[int]) -> int:
        return sum(min(len(f.text(r)), CONTEXT_CHARS) + 10 for r in rows)

    def _within(self, f: ShownFile, rows: set[int], room: float) -> set[int]:
        """The first of these rows that fit in `room` characters (a body's head and signature)."""
        kept: set[int] = set()
        for r in sorted(rows):
            room -= min(len(f.text(r)), CONTEXT_CHARS) + 10
            if room < 0:
                break
            kept.add(r)
        return kept

    def _note_cut(self, f: ShownFile, h: Hit, rows: set[int]) -> None:
        """A definition shown only in part says where it ends, so one read can fetch the rest."""
        info = f.infos.get(h.line)
        if h.kind != "definition" or info is None or info.whole is None or not rows:
            return
        last_shown = max(rows | {h.line})
        if last_shown < info.whole[1]:
            f.cuts[last_shown] = info.whole[1]

    def _context(self, f: ShownFile, h: Hit, body_allowed: bool) -> tuple[set[int], bool]:
        """Rows to show with a hit, and whether they are a whole body: a definition to its end
        (its signature not counted against the cap), the whole function of a hit in a small
        result, or the lines around it."""
        if f.syntax is None:
            return set(), False
        info = f.infos.get(h.line) or HitInfo()
        if info.whole and h.kind == "definition" and info.whole[1] > info.whole[0]:
            first, last = info.whole
            while first < h.line and _LEAD_IN.match(f.text(first)):
                first += 1  # glibc's `libc_hidden_def (x)` before a function is read as part of it
            signature_end = min(max(info.header_end or h.line, h.line), last)
            if not body_allowed:
                return set(range(first, min(signature_end + 2, last) + 1)), False
            end = last if last - signature_end <= BODY_LINES else signature_end + BODY_HEAD
            rows, size = set(), 0
            for r in range(first, end + 1):
                if r > signature_end:
                    size += min(len(f.text(r)), CONTEXT_CHARS) + 10
                    if size > BODY_CHARS:
                        break
                rows.add(r)
            return rows, True
        if self.few and body_allowed and info.extent is not None:
            lo, hi = info.extent
            if hi - lo < FEW_BODY:
                return set(range(lo, hi + 1)), True
        rows = self._around(f, h)
        macro = _MACRO_USE.match(f.text(h.line)) if info.extent is None else None
        if macro is not None:
            span = f.syntax.macro_definition(macro.group(1))
            if span is not None and span[1] - span[0] < MACRO_LINES:
                rows |= set(range(span[0], span[1] + 1))
        return rows, False

    @staticmethod
    def _add_rows(
        f: ShownFile, h: Hit, rows: set[int], added: list[tuple[ShownFile, set[int]]]
    ) -> None:
        new = {r for r in rows if r not in f.rows and r not in f.full_lines}
        if new:
            f.rows |= new
            for r in new:
                f.owner.setdefault(r, h)
            added.append((f, new))

    def _fit(
        self, order: list[tuple[ShownFile, Hit]], added: list[tuple[ShownFile, set[int]]]
    ) -> None:
        # Over the budget: context goes from the lowest hits first, then the lowest previews, then
        # full hits become previews (never in a small result, which always shows every hit).
        for f, rows in added:
            f.rows -= rows
        # Estimate first (one render), then search for the exact cut only when the estimate misses.
        room = self.budget - len(self.write())
        keep = 0
        for f, rows in added:
            room -= self._rows_cost(f, rows)
            if room < 0:
                break
            keep += 1
        if not self._fits_with(added[:keep]):
            keep = _most(keep, lambda k: self._fits_with(added[:k]))
        self._apply(added[:keep])
        text = self.write()
        if len(text) > self.budget:
            previews = [(f, h) for f, h in order if h in f.preview]
            for f, h in previews:
                f.preview.remove(h)
            kept = _most(len(previews), lambda k: self._fits_with([], previews[:k]))
            for f, h in previews[:kept]:
                f.preview.append(h)
            text = self.write()
            demotable = [(f, h) for f, h in order if h in f.full][ALL_SHOWN:]
            if len(text) > self.budget and demotable:
                for f, h in demotable:
                    f.full.remove(h)
                kept = _most(len(demotable), lambda k: self._fits_with([], [], demotable[:k]))
                for f, h in demotable[:kept]:
                    f.full.append(h)
                for f, h in demotable[kept:]:
                    f.full_lines.discard(h.line)
                    f.preview.append(h)
                text = self.write()
        if len(text) < self.budget * WIDEN_BELOW:
            text = self._widen(order, text)
        self._text = text

    def _widen(self, order: list[tuple[ShownFile, Hit]], text: str) -> str:
        """Room to spare: more of each code hit's function, best hits first, so that the loop,
        the call or the formula a few lines away comes without a read; at last, the whole of a
        short function that only one hit is in."""
        for stage in (*WIDER, None):
            grown: list[tuple[ShownFile, set[int]]] = []
            room = self.budget * 0.95 - len(text)
            for f, h in order:
                rows = self._wider(f, h, stage)
                new = {r for r in rows if r not in f.rows and r not in f.full_lines}
                cost = self._rows_cost(f, new)
                if not new or cost > room:
                    continue
                room -= cost
                f.rows |= new
                for r in new:
                    f.owner.setdefault(r, h)
                grown.append((f, new))
            if not grown:
                continue
            wider = self.write()
            if len(wider) > self.budget:
                for f, rows in grown:
                    f.rows -= rows
                break
            text = wider
        return text

    def _wider(self, f: ShownFile, h: Hit, stage: tuple[int, int] | None) -> set[int]:
        if h.line not in f.full_lines or h.kind in ("comment", "string") or not f.lines:
            return set()
        if f.fh.kind in NONCODE:
            return set()
        info = f.infos.get(h.line)
        if info is None:
            return set()
        if stage is None:
            if info.extent is None or h.kind == "definition":
                return set()
            lo, hi = info.extent
            alone = sum(1 for r in f.full_lines if lo <= r <= hi) == 1
            return set(range(lo, hi + 1)) if alone and hi - lo < SHORT_FUNCTION else set()
        before, after = stage
        if h.kind == "definition" and info.whole:
            lo, hi = h.line, info.whole[1]  # further into its own body
        elif info.extent:
            lo, hi = info.extent  # more of the function it is in
        else:
            return set()  # a prototype or a top-level line: its neighbours are unrelated
        return set(range(max(lo, h.line - before), min(hi, h.line + after) + 1))

    def _apply(self, added: list[tuple[ShownFile, set[int]]]) -> None:
        for f in self.files:
            f.rows = set()
        for f, rows in added:
            f.rows |= rows

    def _fits_with(
        self,
        added: list[tuple[ShownFile, set[int]]],
        previews: list[tuple[ShownFile, Hit]] | None = None,
        full: list[tuple[ShownFile, Hit]] | None = None,
    ) -> bool:
        """Would the result fit with only these context rows (and these previews or full hits)?"""
        saved = [(f, f.rows) for f in self.files]
        for f, h in previews or []:
            f.preview.append(h)
        for f, h in full or []:
            f.full.append(h)
        self._apply(added)
        fits = len(self.write()) <= self.budget
        for f, h in previews or []:
            f.preview.remove(h)
        for f, h in full or []:
            f.full.remove(h)
        for f, rows in saved:
            f.rows = rows
        return fits

    def _around(self, f: ShownFile, h: Hit) -> set[int]:
        lo, hi = 1, len(f.lines or [])
        info = f.infos.get(h.line)
        if info is not None and info.extent is not None:
            lo, hi = info.extent  # lines around a hit stay inside its function
        want = {r for r in (h.line - 1, h.line + 1, h.line + 2) if lo <= r <= hi}
        if f.syntax is None:
            return want
        ctx: Context = f.syntax.context(h.line, h.spans)
        if ctx.statement:
            want |= set(range(ctx.statement[0], ctx.statement[1] + 1))
        want |= set(ctx.headers[:2]) | set(ctx.assignments[:2])
        # a line that is blank, a lone brace or a bare comment marker says nothing on its own
        return {r for r in want if f.text(r).strip() not in _EMPTY_LINES}


_NAME = re.compile(r"[A-Za-z_][\w.\-]*\w|\w")  # a name, with a template name's dots
_LEAD_IN = re.compile(r"^\s*$|^[A-Za-z_]\w*\s*\([^()]*\)\s*$")  # blank, or a bare macro line
_MACRO_USE = re.compile(r"^([A-Z_][A-Z0-9_]{2,})\s*\(")  # a top-level line a C macro expands
_EMPTY_LINES = frozenset({"", "{", "}", "};", ")", "end", "#", "##", "//", "/*", "*/", "*"})


def _most(n: int, fits: Callable[[int], bool]) -> int:
    """The largest k in 0..n with fits(k), for a fits() that stays false once it turns false."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def blank_between(f: ShownFile, a: int, b: int) -> bool:
    return any(not f.text(r).strip() for r in range(a + 1, b))
