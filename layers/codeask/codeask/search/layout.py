"""Which hits a search result shows, and how: in full with context, as a preview, or only counted, in a budget."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from codeask.search import elsewhere, repeats
from codeask.search.filekinds import file_kind, language_of, refine_language, says_generated
from codeask.search.patterns import is_identifier, longer_name_defined
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
DOC_KEEP = 3  # a long docstring opening a cut body keeps this many lines, the code comes next
NAMING_ROWS = 12  # below a cut body's head, lines naming the search shown at most
MAX_BODIES = 4  # in a result of many hits, half as many
FEW_HITS = 3  # a result this small shows the whole function each hit is in ...
FEW_BODY = 40  # ... when it has at most this many lines (a longer one: lines around the hit)
SHORT_FUNCTION = 40  # with room to spare, a lone hit in a function this short shows all of it
# A definition of up to WHOLE_LINES lines (and WHOLE_CHARS) is shown whole, never cut a few
# lines short of its end: a cut hides at least MIN_HIDDEN lines, or there is none. When the
# result's bodies are spent, one of up to CHEAP_BODY_CHARS (a YAML block) is still shown whole.
WHOLE_LINES = 40
WHOLE_CHARS = 4_000
MIN_HIDDEN = 10
CHEAP_BODY_CHARS = 900
REPEAT_LINES = 12  # a body this long already shown by an earlier result shows only its signature
ALIAS_NEAR = 4  # alias lines this close after a definition's end are shown with it
CALL_AROUND = 5  # a call site widens to this many lines either side, no more
GAP_ROWS = 8  # with room to spare, a gap this short between shown lines is filled
SMALL_FILE = 40  # with room to spare, a file this short with a hit is shown whole
TOP_FILE_LINES = 150  # the top hit's file this short is shown whole when it fits the budget
COMMENT_BLOCK = 10  # a comment hit shows the lines down to the key or code it describes
NONCODE = frozenset({"docs", "generated", "vendored"})
NONCODE_FULL = 3  # hits of a docs, generated or vendored file shown in full; the rest are previews
NONCODE_CONTEXT = 2  # of those, how many get lines around them
MACRO_LINES = (
    25  # a top-level macro use shows the macro's definition from the same file if this short
)
USES_FOR = 3  # definitions given a "called from" line (one rg for all their names)
ENCLOSER_HITS = 4  # in a result this small, a hit inside a definition says where that is used
GUARD_CHARS = 80
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
        self,
        lines: Callable[[str], list[str] | None],
        key: Callable[[str], tuple[str, str]],
        seen: dict[str, set[int]] | None = None,
    ) -> None:
        self.lines = lines
        self.key = key
        self.parse_s = 0.0
        # rows earlier results (and reads) of this conversation showed, by path: a long body
        # shown again is its signature and a pointer back
        self.seen: dict[str, set[int]] = seen if seen is not None else {}

    def remember(self, path: str, rows: set[int]) -> None:
        self.seen.setdefault(path, set()).update(rows)

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
    notes: dict[int, list[str]] = field(default_factory=dict)  # a hit's row -> lines under it
    earlier: dict[int, tuple[int, int]] = field(default_factory=dict)  # row -> rows shown before
    same: dict[int, list[int]] = field(default_factory=dict)  # a hit's row -> rows reading the same
    collapsed: set[int] = field(default_factory=set)  # a cut body's docstring rows left out

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


@dataclass
class UseWanted:
    """A definition whose uses a result tells: its own hit, or a hit inside it (`enclosing`)."""

    f: ShownFile
    h: Hit
    name: str
    row: int  # the row naming the definition
    enclosing: bool
    aliases: list[str]  # other names of it (`weak_alias (__getdelim, getdelim)`)


@dataclass
class UseSite:
    scope: str
    guard: str
    kind: str


def _usable_name(name: str, f: ShownFile) -> bool:
    """A name whose uses rg can find: an identifier, or a template's quoted name."""
    if re.fullmatch(r"[A-Za-z_$][\w$]*", name):
        return True
    return f.syntax is not None and f.syntax.template is not None


class Layout:
    """Plans which hits are shown in full, previewed or counted, measuring with the writer."""

    def __init__(self, outcome: SearchOutcome, source: FileSource, budget: int = BUDGET) -> None:
        self.o = outcome
        self.source = source
        self.budget = budget
        # Matches only inside longer words are noise beside whole-word ones: a file where a word
        # is only part of longer ones ('redistribute' for `redis`) is set aside and summarised,
        # and so is every match of a name inside a longer name (`_IO_cleanup_region_start` for
        # `_IO_cleanup`), which is another name. A line defining such a longer name
        # (`retry_handlers = …` for `retry_handler`) stays: that name is often what was meant.
        self.inside: list[tuple[FileHits, list[Hit]]] = []
        files = outcome.files
        if outcome.plain_words and any(not h.in_longer_word for f in files for h in f.hits):
            for f in files:
                only = all(h.in_longer_word for h in f.hits)
                longer = [
                    h
                    for h in f.hits
                    if h.in_longer_word
                    and (only or self._names(h))
                    and not (self._names(h) and self._defines_longer(h))
                ]
                if longer:
                    self.inside.append((f, longer))
                    f.hits = [h for h in f.hits if h not in longer]
                    f.rescore()
            files = sorted((f for f in files if f.hits), key=lambda f: (-f.score, f.path))
        # The same licence line in a hundred files, the same sentence under ten parameters:
        # one is shown, the rest are counted with it.
        files, self.repeated = repeats.fold_across(files)
        self.files = [ShownFile(f) for f in files]
        for sf in self.files:
            sf.same = repeats.fold_within(sf.fh)
        self.folded = sum(len(r.where) for r in self.repeated) + sum(
            len(rows) for sf in self.files for rows in sf.same.values()
        )
        self.write: Callable[[], str] = lambda: ""
        self._text = ""
        self.few = False

    def _names(self, h: Hit) -> bool:
        """The hit's word is a name of its own (`_IO_cleanup`), not an English word."""
        o = self.o
        alts = o.alternatives or o.plain_words[:1]
        word = alts[h.alternative or 0] if alts else ""
        return is_identifier(word)

    def _defines_longer(self, h: Hit) -> bool:
        o = self.o
        alts = o.alternatives or o.plain_words[:1]
        word = alts[h.alternative or 0] if alts else ""
        return bool(word) and longer_name_defined(h.text, h.spans, word) is not None

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
        # a file with only longer names (kept for their definitions) follows the whole words
        self.files.sort(
            key=lambda f: (all(h.in_longer_word for h in f.fh.hits), -f.fh.score, f.fh.path)
        )
        keyed = []
        per_alt: dict[int | None, int] = {}
        for file_rank, f in enumerate(self.files):
            for rank, h in enumerate(f.fh.hits):
                alt_rank = per_alt.get(h.alternative, 0)
                per_alt[h.alternative] = alt_rank + 1
                alt_chunk = alt_rank // ALTERNATIVE_CHUNK if self.o.alternatives else 0
                key = (
                    not h.exact_case,
                    h.in_longer_word,
                    alt_chunk,
                    rank // FILE_CHUNK,
                    file_rank,
                    rank,
                )
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
        uses = self._start_uses(len(order)) if show_all else None
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
                    rows, is_body, ends = self._context(f, h, bodies > 0)
                    if not show_all and not (is_body and self._whole_enough(f, rows)):
                        rows = self._within(f, rows, share - used)
                    if rows:
                        bodies -= is_body
                        used += self._rows_cost(f, rows)
                        self._note_cut(f, h, rows, ends)
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

    def _start_uses(self, hits: int) -> tuple[list[UseWanted], Future[Any]] | None:
        """In a small result, the best few definitions whose uses it does not show get a line
        saying where they are called from (with their C aliases' callers); in a result of a
        few hits, so does the definition a hit is inside. One more rg for all their names,
        capped, started now so that it runs while the rest of the result is laid out."""
        lookup = self.o.lookup
        if lookup is None:
            return None
        candidates: list[tuple[float, UseWanted]] = []
        defined = {info.defines for f in self.files for info in f.infos.values() if info.defines}
        for f in self.files:
            if f.syntax is None or f.syntax.config:
                continue
            for h in f.fh.hits:
                info = f.infos.get(h.line)
                if info is None:
                    continue
                if h.kind == "definition" and info.defines and info.whole:
                    if _usable_name(info.defines, f) and (
                        info.whole[1] > info.whole[0] or f.syntax.template is not None
                    ):
                        aliases = [a for d, a, _ in f.syntax.aliases() if d == info.defines]
                        candidates.append(
                            (h.score, UseWanted(f, h, info.defines, h.line, False, aliases))
                        )
                elif (
                    hits <= ENCLOSER_HITS
                    and info.encloser is not None
                    and h.kind not in ("comment", "import")
                    and info.encloser[0] not in defined
                    and _usable_name(info.encloser[0], f)
                ):
                    name, row = info.encloser
                    candidates.append((h.score / 2, UseWanted(f, h, name, row, True, [])))
        candidates.sort(key=lambda c: -c[0])
        shown_uses = self._names_used()
        names: set[str] = set()
        chosen: list[UseWanted] = []
        for _, want in candidates:
            if want.name not in shown_uses and want.name not in names and len(chosen) < USES_FOR:
                names.add(
                    want.name
                )  # a name defined twice (a method and its override) is told once
                chosen.append(want)
        if not chosen:
            return None
        wanted = [(name, w.f.fh.path, w.row) for w in chosen for name in [w.name, *w.aliases]]
        pool = ThreadPoolExecutor(max_workers=1)
        future = pool.submit(elsewhere.find_uses, lookup, wanted)
        pool.shutdown(wait=False)
        return chosen, future

    def _show_uses(self, chosen: list[UseWanted], future: Future[Any]) -> None:
        try:
            found: dict[tuple[str, str, int], elsewhere.Uses] = future.result()
        except Exception:  # noqa: BLE001 - uses are a note: without them the result says less
            return
        parsed: set[str] = set()
        for w in chosen:
            f, h = w.f, w.h
            uses = found.get((w.name, f.fh.path, w.row))
            if uses is None or h not in f.full or h.line in f.uses:
                continue
            for alias in w.aliases:
                other = found.get((alias, f.fh.path, w.row))
                if other is not None:
                    uses.merge(other)
            kept: list[elsewhere.Use] = []
            for use in uses.sites[: elsewhere.USE_CANDIDATES]:
                if len(kept) == elsewhere.USE_SITES:
                    break
                if use.path in parsed or (
                    len(parsed) < USE_SCOPE_FILES and self.source.parse_s < PARSE_BUDGET_S
                ):
                    parsed.add(use.path)
                    where = self._where(use.path, use.line, use.text)
                    if where.kind == "comment":
                        uses.mentions.append(use)  # inside a block comment: a mention
                        continue
                    use.scope, use.guard = where.scope, where.guard
                kept.append(use)
            uses.sites = [u for u in uses.sites if u not in uses.mentions]
            said = uses.describe(kept, enclosing=w.enclosing)
            if said is not None:
                f.uses[h.line] = said

    def _names_used(self) -> set[str]:
        """Names the result already shows used (a search for the name itself has its callers)."""
        words: set[str] = set()
        for f in self.files:
            for h in f.fh.hits:
                if h.kind not in ("definition", "comment", "import"):
                    words.update(_NAME.findall(h.text))
        return words

    def _where(self, path: str, line: int, text: str) -> UseSite:
        """The function a use is in, in a few words, the condition it is under, and the use's
        kind, from the parser."""
        fh = FileHits(path, file_kind(path), language_of(path))
        syntax = self.source.syntax(fh)
        if syntax is None:
            return UseSite("", "", "reference")
        words = [w for w in _NAME.findall(text) if len(w) > 2]
        row_text = syntax.lines[line - 1] if 1 <= line <= len(syntax.lines) else ""
        at = next((row_text.find(w) for w in words if w in row_text), -1)
        spans = [(at, at + 1)] if at >= 0 else []
        syntax.prepare([line])
        info = syntax.info(line, spans)
        scope = info.scope
        if not scope or (info.extent is not None and info.extent[0] == line):
            return UseSite("", "", info.kind)  # a macro line read as a definition names nothing
        inner = scope[-1]
        short = clip(inner.split("(", 1)[0].strip(), 60) + ("()" if "(" in inner else "")
        guard = ""
        for row in syntax.context(line, spans).headers:
            head = syntax.lines[row - 1].strip() if 1 <= row <= len(syntax.lines) else ""
            if _GUARD.match(head) and (info.extent is None or row > info.extent[0]):
                guard = clip(head, GUARD_CHARS)
                break
        return UseSite(short, guard, info.kind)

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
                rows, is_body, ends = self._context(f, h, bodies > 0)
                bodies -= is_body
                self._note_cut(f, h, rows, ends)
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

    def _note_cut(self, f: ShownFile, h: Hit, rows: set[int], ends: int | None) -> None:
        """A definition shown only in part says where it ends, so one read can fetch the rest."""
        body = {r for r in rows | {h.line} if r <= ends} if ends is not None else set()
        if not body or ends is None:
            return
        last_shown = max(body)
        if last_shown < ends and last_shown not in f.earlier:
            f.cuts[last_shown] = ends

    def _whole_enough(self, f: ShownFile, rows: set[int]) -> bool:
        """A body small enough never to be cut to the budget's share (the result's fit still is)."""
        return len(rows) <= WHOLE_LINES and self._rows_cost(f, rows) <= WHOLE_CHARS

    def _context(
        self, f: ShownFile, h: Hit, body_allowed: bool
    ) -> tuple[set[int], bool, int | None]:
        """Rows to show with a hit, whether they are a whole body, and the last row of the
        definition they show (for the note where it goes on to): a definition to its end (its
        signature not counted against the cap) with the aliases right after it, the aliased
        definition of an alias line, the whole function of a hit in a small result, or the
        lines around it."""
        if f.syntax is None:
            return set(), False, None
        info = f.infos.get(h.line) or HitInfo()
        if info.whole and h.kind == "definition" and info.whole[1] > info.whole[0]:
            first, last = info.whole
            while first < h.line and _LEAD_IN.match(f.text(first)):
                first += 1  # glibc's `libc_hidden_def (x)` before a function is read as part of it
            signature_end = min(max(info.header_end or h.line, h.line), last)
            rows = self._body(f, first, signature_end, last, body_allowed)
            if info.defines:
                rows |= self._aliases_after(f, h, info.defines, last, max(rows) == last)
            return rows, body_allowed, last
        aliased = self._aliased(f, h)
        if aliased is not None:
            first, signature_end, last = aliased
            rows = self._body(f, first, signature_end, last, body_allowed) | {h.line - 1}
            rows |= set(range(last + 1, h.line))
            return rows, body_allowed, last
        if self.few and body_allowed and info.extent is not None:
            lo, hi = info.extent
            if hi - lo < FEW_BODY:
                if self._seen_before(f, lo, hi):
                    return self._around(f, h), False, None
                return set(range(lo, hi + 1)), True, None
        rows = self._around(f, h)
        macro = _MACRO_USE.match(f.text(h.line)) if info.extent is None else None
        if macro is not None:
            span = f.syntax.macro_definition(macro.group(1))
            if span is not None and span[1] - span[0] < MACRO_LINES:
                rows |= set(range(span[0], span[1] + 1))
        target = _MACRO_ALIAS.match(f.text(h.line)) if h.kind == "definition" else None
        if target is not None:  # `#define A B`: what B's own define holds, one hop on
            span = f.syntax.macro_definition(target.group(1))
            if span is not None and span[1] - span[0] < MACRO_LINES:
                rows |= set(range(span[0], span[1] + 1))
                if f.text(span[0] - 1).lstrip().startswith("#if"):
                    rows.add(span[0] - 1)
        return rows, False, None

    def _body(
        self, f: ShownFile, first: int, signature_end: int, last: int, allowed: bool
    ) -> set[int]:
        """A definition's rows: whole when it is small (or cheap, once the result's bodies are
        spent), else its signature and the head of its body, never cut a few lines short.
        One an earlier result showed already is its signature only, said so."""
        whole = set(range(first, last + 1))
        if last - signature_end > REPEAT_LINES and self._seen_before(f, signature_end + 1, last):
            f.earlier[signature_end] = (signature_end + 1, last)
            return set(range(first, signature_end + 1))
        if (allowed and self._whole_enough(f, whole)) or (
            self._rows_cost(f, whole) <= CHEAP_BODY_CHARS
        ):
            return whole
        if not allowed:
            return set(range(first, min(signature_end + 2, last) + 1))
        # a long docstring is collapsed to its opening lines first: the code after it is
        # what a reader of a cut body came for
        doc = _docstring(f, signature_end + 1, last)
        skipped = (
            set(range(doc[0] + DOC_KEEP, doc[1] + 1))
            if doc is not None and doc[1] - doc[0] + 1 > DOC_KEEP + 2
            else set()
        )
        end = last if last - signature_end - len(skipped) <= BODY_LINES else 0
        rows, size, body_rows = set(), 0, 0
        for r in range(first, last + 1):
            if r in skipped:
                continue
            if r > signature_end:
                size += min(len(f.text(r)), CONTEXT_CHARS) + 10
                body_rows += 1
                if size > BODY_CHARS or (not end and body_rows > BODY_HEAD):
                    break
            rows.add(r)
        if last - max(rows) < MIN_HIDDEN and self._rows_cost(f, whole) <= BODY_CHARS * 1.5:
            return whole  # a cut would hide only a few lines
        rows |= self._rows_naming(f, max(rows) + 1, last, size)
        f.collapsed |= skipped
        head_end = max(rows)
        if head_end - signature_end > REPEAT_LINES and self._seen_before(
            f, signature_end + 1, head_end
        ):  # the same head as an earlier result showed: not again
            f.earlier[signature_end] = (signature_end + 1, head_end)
            return set(range(first, signature_end + 1))
        return rows

    def _rows_naming(self, f: ShownFile, lo: int, hi: int, size: int) -> set[int]:
        """Below a cut body's head, the lines that use the searched name or that a hit sits
        on, while the body's share lasts: where the definition does what was asked about."""
        hits = {h.line for h in f.fh.hits}
        hits |= {h.line for fh, aside in self.inside if fh is f.fh for h in aside}
        words = [
            w for w in elsewhere.pattern_words(self.o.pattern) if len(w) >= 4 and w not in _KEYWORDS
        ]
        # as a name or a component of one (`_send_once` for `send`), never inside a word
        named = (
            re.compile(rf"(?<![A-Za-z0-9])(?:{'|'.join(map(re.escape, words))})(?![a-z0-9])", re.I)
            if words
            else None
        )
        rows: set[int] = set()
        for r in range(lo, hi + 1):
            if r in hits or (named is not None and named.search(f.text(r))):
                size += min(len(f.text(r)), CONTEXT_CHARS) + 10
                if size > BODY_CHARS * 1.5 or len(rows) >= NAMING_ROWS:
                    break
                rows.add(r)
        return rows

    def _seen_before(self, f: ShownFile, lo: int, hi: int) -> bool:
        """Most of these rows were shown by an earlier result (or read) in this conversation."""
        seen = self.source.seen.get(f.fh.path)
        if not seen or hi < lo:
            return False
        return sum(1 for r in range(lo, hi + 1) if r in seen) >= 0.9 * (hi - lo + 1)

    def _aliases_after(
        self, f: ShownFile, h: Hit, name: str, last: int, to_the_end: bool
    ) -> set[int]:
        """The alias lines right after a definition shown to its end (`weak_alias (__getdelim,
        getdelim)`), shown with it; any other alias gets a line under the hit."""
        rows: set[int] = set()
        assert f.syntax is not None
        for defined, alias, row in f.syntax.aliases():
            if defined != name or row == h.line:
                continue
            if to_the_end and last < row <= last + ALIAS_NEAR:
                rows |= set(range(last + 1, row + 1))
            else:
                note = f"↳ also named `{alias}`: line {row}, {f.text(row).strip()}"
                f.notes.setdefault(h.line, []).append(clip(note, CONTEXT_CHARS))
        return rows

    def _aliased(self, f: ShownFile, h: Hit) -> tuple[int, int, int] | None:
        """For a hit on an alias line, the rows of the definition it names in the same file."""
        if f.syntax is None or not f.syntax.aliases():
            return None
        defined = next((d for d, _, row in f.syntax.aliases() if row == h.line), None)
        if defined is None:
            return None
        return f.syntax.definition_of(defined)

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
        if order:
            text = self._whole_top_file(order[0][0], text)
        if len(text) < self.budget * WIDEN_BELOW:
            text = self._widen(order, text)
        self._text = text

    def _whole_top_file(self, f: ShownFile, text: str) -> str:
        """The top hit's file, when it is short and the budget has room for all of it, is shown
        whole: a file with gaps in it would be the next read."""
        lines = f.lines
        if not lines or len(lines) > TOP_FILE_LINES or f.fh.kind in NONCODE or f.earlier:
            return text
        every = set(range(1, len(lines) + 1))
        new = every - f.rows - f.full_lines
        if not new or self._seen_before(f, 1, len(lines)):
            return text
        if len(text) + self._rows_cost(f, new) > self.budget * 0.95:
            return text
        cuts, collapsed = f.cuts, f.collapsed
        f.rows |= new
        f.cuts, f.collapsed = {}, set()  # nothing of it goes on elsewhere now
        whole = self.write()
        if len(whole) > self.budget:
            f.rows -= new
            f.cuts, f.collapsed = cuts, collapsed
            return text
        return whole

    def _widen(self, order: list[tuple[ShownFile, Hit]], text: str) -> str:
        """Room to spare: more of each code hit's function, best hits first, so that the loop,
        the call or the formula a few lines away comes without a read; then the whole of a
        short function that only one hit is in; then the short gaps between shown lines; at
        last, the whole of a short file."""
        for stage in (*WIDER, None, "gaps", "file"):
            grown: list[tuple[ShownFile, set[int]]] = []
            room = self.budget * 0.95 - len(text)
            if stage in ("gaps", "file"):
                wanted = [(f, self._filler(f, stage)) for f in self.files if f.full]
            else:
                wanted = [(f, self._wider(f, h, stage)) for f, h in order]  # type: ignore[arg-type]
            for i, (f, rows) in enumerate(wanted):
                new = {r for r in rows if r not in f.rows and r not in f.full_lines}
                cost = self._rows_cost(f, new)
                if not new or cost > room:
                    continue
                room -= cost
                f.rows |= new
                if stage not in ("gaps", "file"):  # filler rows belong to no hit
                    for r in new:
                        f.owner.setdefault(r, order[i][1])
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

    def _filler(self, f: ShownFile, stage: str) -> set[int]:
        """Rows that leave no short gap (`gaps`), or a short file's every row (`file`)."""
        lines = f.lines
        if lines is None:
            return set()
        if f.cuts or f.earlier or f.fh.kind in NONCODE:
            return set()  # the notes of a definition shown in part stand where it stops
        if stage == "file":
            return set(range(1, len(lines) + 1)) if len(lines) <= SMALL_FILE else set()
        shown = sorted(f.rows | f.full_lines)
        rows: set[int] = set()
        for a, b in zip(shown, shown[1:], strict=False):
            if 1 < b - a <= GAP_ROWS + 1:
                rows |= set(range(a + 1, b))
        return rows

    def _wider(self, f: ShownFile, h: Hit, stage: tuple[int, int] | None) -> set[int]:
        if h.line not in f.full_lines or h.kind in ("comment", "string") or not f.lines:
            return set()
        if f.fh.kind in NONCODE:
            return set()
        info = f.infos.get(h.line)
        if info is None:
            return set()
        if stage is None:
            if info.extent is None or h.kind in ("definition", "call"):
                return set()
            lo, hi = info.extent
            alone = sum(1 for r in f.full_lines if lo <= r <= hi) == 1
            if not alone or hi - lo >= SHORT_FUNCTION or self._seen_before(f, lo, hi):
                return set()
            return set(range(lo, hi + 1))
        before, after = stage
        if h.kind == "call":  # a call site needs its function's name and a few lines around it
            before, after = min(before, CALL_AROUND), min(after, CALL_AROUND)
        if h.kind == "definition" and info.whole:
            lo, hi = h.line, info.whole[1]  # further into its own body
            if h.line in f.earlier or any(lo <= r <= hi for r in f.earlier):
                return set()  # shown by an earlier result: not again
        elif info.extent:
            lo, hi = info.extent  # more of the function it is in
        else:
            return set()  # a prototype or a top-level line: its neighbours are unrelated
        rows = set(range(max(lo, h.line - before), min(hi, h.line + after) + 1))
        return rows - f.collapsed

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
        """The lines around a hit: its statement, the blocks it is in, where its names were set,
        the entry it is part of, a comment's key or code below it; ending past a line that
        opens a block rather than on it."""
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
        if ctx.item:
            want |= set(range(max(lo, ctx.item[0]), min(hi, ctx.item[1]) + 1))
        want |= set(ctx.headers[:2]) | set(ctx.assignments[:2])
        below = info.belongs_to if info is not None else None
        if below is not None and below > h.line:
            if below - h.line <= COMMENT_BLOCK:
                want |= set(range(h.line + 1, below + 1))
            else:
                want |= {below, below + 1}
        last = max(want | {h.line})
        for _ in range(3):
            if last >= hi or not _OPENS.search(f.text(last)):
                break
            last += 1
            want.add(last)
        # a line that is blank, a lone brace or a bare comment marker says nothing on its own
        return {r for r in want if lo <= r <= hi and f.text(r).strip() not in _EMPTY_LINES}


_NAME = re.compile(r"[A-Za-z_][\w.\-]*\w|\w")  # a name, with a template name's dots
_GUARD = re.compile(
    r"(\}\s*)?(if|elif|else if|unless|while|for|foreach|switch|case|when|with)\b|\{\{-?\s*(if|with|range)\b"
)
_KEYWORDS = frozenset(
    {"class", "struct", "static", "return", "import", "async", "const", "function", "self", "this"}
)
_DOC_OPEN = re.compile(r"^\s*(?:[rRbBuU]?(\"\"\"|\'\'\')|(/\*)|(#|//))")


def _docstring(f: ShownFile, lo: int, hi: int) -> tuple[int, int] | None:
    """The rows of the docstring or comment block that opens a body at row `lo`, if any."""
    m = _DOC_OPEN.match(f.text(lo))
    if m is None:
        return None
    quote, block, line = m.groups()
    if line:
        end = lo
        while end < hi and f.text(end + 1).lstrip().startswith(line):
            end += 1
        return lo, end
    close = quote or "*/"
    rest = f.text(lo)[m.end() :]
    if close in rest:
        return lo, lo
    for r in range(lo + 1, hi + 1):
        if close in f.text(r):
            return lo, r
    return None


_LEAD_IN = re.compile(r"^\s*$|^[A-Za-z_]\w*\s*\([^()]*\)\s*$")  # blank, or a bare macro line
_MACRO_USE = re.compile(r"^([A-Z_][A-Z0-9_]{2,})\s*\(")  # a top-level line a C macro expands
_MACRO_ALIAS = re.compile(r"^\s*#\s*define\s+\w+\s+([A-Za-z_]\w*)\s*(/\*.*)?$")
# a line that opens a block goes on below: `{`, `(`, `key:`, `=>`, `do`, a YAML block scalar
_OPENS = re.compile(r"([{(\[]|:|=>|\bdo|\bthen|\\|:\s*[|>][-+]?)\s*$")
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
