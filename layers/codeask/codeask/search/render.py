"""A search result as the model reads it: ranked hits with their text, scopes and context, in a budget."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from codeask.search.filekinds import says_generated
from codeask.search.query import FileHits, Hit, SearchOutcome
from codeask.search.syntax import Context, FileSyntax, HitInfo, syntax_for

# 10,000 characters (about 2,500 tokens): room for ~25 hits with their scope and a few lines of
# context each plus two or three small bodies, which is what one answer usually needs; a larger
# result mostly adds hits the model skims past, and costs every later round its tokens again.
BUDGET = 10_000
ALL_SHOWN = 25  # a result this small is shown whole, context trimmed to fit
FULL_SHARE = 0.62  # of the budget, for hits shown with their scope; then one-line previews
PREVIEW_SHARE = 0.88  # then counts per file
SMALL_BODY = 30  # a definition this many lines long or less is shown whole
MAX_BODIES = 4
FILE_CHUNK = 8  # hits a file contributes before the next file gets its turn
ALTERNATIVE_CHUNK = 6  # likewise for each alternative of an alternation
PARSE_FIRST = 8  # files parsed before ranking across files settles
PARSE_BUDGET_S = 0.6  # beyond this much parsing in one search, later files get heuristics
HIT_CHARS = 400
CONTEXT_CHARS = 220
PREVIEW_CHARS = 110
MARKS = {
    "definition": "D",
    "call": ">",
    "reference": ">",
    "import": "I",
    "string": "S",
    "comment": "#",
}
LEGEND = "D definition · > code · I import · S string · # comment"


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
        language = fh.language if self.parse_s < PARSE_BUDGET_S else None
        started = time.monotonic()
        syntax = syntax_for(self.key(fh.path), language, lines)
        self.parse_s += time.monotonic() - started
        return syntax


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f" [… line cut, {len(text) - limit} more characters]"


@dataclass
class _File:
    fh: FileHits
    syntax: FileSyntax | None = None
    infos: dict[int, HitInfo] = field(default_factory=dict)
    full: list[Hit] = field(default_factory=list)
    preview: list[Hit] = field(default_factory=list)
    rows: set[int] = field(default_factory=set)  # context rows shown
    owner: dict[int, Hit] = field(default_factory=dict)  # the hit a context row was shown for

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


class Renderer:
    """Plans which hits are shown in full, previewed or counted, then writes the result."""

    def __init__(self, outcome: SearchOutcome, source: FileSource, budget: int = BUDGET) -> None:
        self.o = outcome
        self.source = source
        self.budget = budget
        words = outcome.plain_words
        main = [f for f in outcome.files if not (words and f.only_inside_words)]
        # Matches only inside longer words are noise beside whole-word ones ('redistribute').
        self.inside = [] if not main else [f for f in outcome.files if f not in main]
        self.files = [_File(f) for f in (main or outcome.files)]
        self._by_path = {f.fh.path: f for f in self.files}

    # -- analysis --------------------------------------------------------------------------------

    def _analyse(self, f: _File) -> None:
        if f.syntax is not None or f.fh.parsed:
            return
        f.syntax = self.source.syntax(f.fh)
        f.fh.parsed = True
        if f.syntax is None:
            return
        if f.fh.kind != "generated" and says_generated(f.syntax.lines[:5]):
            f.fh.kind = "generated"
        for h in f.fh.hits:
            spans = h.spans
            lines = f.syntax.lines
            if 1 <= h.line <= len(lines) and lines[h.line - 1] != h.text:
                spans = []  # rg's line was cut to a preview: spans do not apply
            info = f.syntax.info(h.line, spans)
            f.infos[h.line] = info
            if f.syntax.parsed or info.kind in ("comment", "definition"):
                h.kind = info.kind
        f.fh.rescore()

    def _order(self) -> list[tuple[_File, Hit]]:
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
                keyed.append(((alt_chunk, rank // FILE_CHUNK, file_rank, rank), f, h))
        keyed.sort(key=lambda k: k[0])
        return [(f, h) for _, f, h in keyed]

    # -- planning --------------------------------------------------------------------------------

    def plan(self) -> None:
        order = self._order()
        show_all = len(order) <= ALL_SHOWN
        used = 0
        labels: dict[str, set[str]] = {}
        for f, h in order:
            if not f.full and not f.preview:
                used += len(f.fh.path) + 40
            if f.syntax is None and not f.fh.parsed and used < self.budget * FULL_SHARE:
                self._analyse(f)
            label = f.label(h)
            cost = len(_clip(f.text(h.line, h.text), HIT_CHARS)) + 10
            seen = labels.setdefault(f.fh.path, set())
            if label and label not in seen:
                cost += len(label) + 6
            if show_all or used + cost <= self.budget * FULL_SHARE:
                f.full.append(h)
                seen.add(label)
                used += cost
                continue
            cost = min(len(h.text.strip()), PREVIEW_CHARS) + 12
            if used + cost <= self.budget * PREVIEW_SHARE:
                f.preview.append(h)
                used += cost
        self._add_context(order)

    def _add_context(self, order: list[tuple[_File, Hit]]) -> None:
        """Bodies of small definitions, then a few lines around each hit, in rank order, while the
        budget lasts; a result that is over it loses context from its lowest hits first."""
        bodies = 0
        added: list[tuple[_File, set[int]]] = []
        for f, h in order:
            if h not in f.full or f.syntax is None:
                continue
            info = f.infos.get(h.line) or HitInfo()
            want: set[int] = set()
            if info.whole and h.kind == "definition":
                first, last = info.whole
                if last - first + 1 <= SMALL_BODY and bodies < MAX_BODIES:
                    want = set(range(first, last + 1))
                    bodies += 1
                else:
                    end = max(info.header_end or h.line, h.line)
                    want = set(range(first, min(end + 2, last) + 1))
            if not want:
                want = self._around(f, h)
            new = {r for r in want if r not in f.rows and not _is_hit(f, r)}
            if new:
                f.rows |= new
                for r in new:
                    f.owner.setdefault(r, h)
                added.append((f, new))
        text = self.render()
        while len(text) > self.budget and added:
            f, rows = added.pop()
            f.rows -= rows
            for r in rows:
                f.owner.pop(r, None)
            text = self.render()
        # Still over (long lines): the lowest previews go, then the lowest full hits become
        # previews, except in a small result, which always shows every hit.
        demotable = [(f, h) for f, h in order if h in f.full][ALL_SHOWN:]
        previews = [(f, h) for f, h in order if h in f.preview]
        while len(text) > self.budget and (previews or demotable):
            if previews:
                f, h = previews.pop()
                f.preview.remove(h)
            else:
                f, h = demotable.pop()
                f.full.remove(h)
                f.preview.append(h)
                previews.append((f, h))
            text = self.render()
        self._text = text

    def _around(self, f: _File, h: Hit) -> set[int]:
        n = len(f.lines or [])
        want = {r for r in (h.line - 1, h.line + 1, h.line + 2) if 1 <= r <= n}
        if f.syntax is None:
            return want
        ctx: Context = f.syntax.context(h.line, h.spans)
        if ctx.statement:
            want |= set(range(ctx.statement[0], ctx.statement[1] + 1))
        want |= set(ctx.headers[:2]) | set(ctx.assignments[:2])
        # a line that is only a closing brace or blank says nothing on its own
        return {r for r in want if f.text(r).strip() not in ("", "}", "};", ")", "end")}

    # -- writing ---------------------------------------------------------------------------------

    def text(self) -> str:
        self.plan()
        return self._text

    def render(self) -> str:
        blocks = [self._file_block(f) for f in self.files if f.full or f.preview]
        return "\n\n".join([self._head(), *blocks, *self._tail()]).rstrip()

    def _file_block(self, f: _File) -> str:
        n = len(f.fh.hits)
        kind = "" if f.fh.kind == "source" else f" [{f.fh.kind}]"
        head = f"{f.fh.path}{kind} — {n} match{'es' if n != 1 else ''}"
        if len(f.full) < n:
            head += f", {len(f.full)} shown" if f.full else ""
            head += f", {len(f.preview)} as previews" if f.preview else ""
        out = [head]
        hits = {h.line: h for h in f.full}
        rows = sorted(set(hits) | f.rows)
        width = len(str(max(rows + [h.line for h in f.preview])))
        groups: list[list[int]] = []
        for r in rows:
            if groups and r <= groups[-1][-1] + 2 and not _blank_between(f, groups[-1][-1], r):
                groups[-1].extend(range(groups[-1][-1] + 1, r + 1))  # a one-line gap is shown
            else:
                groups.append([r])
        last_label: str | None = None
        for i, group in enumerate(groups):
            first_hit = hits.get(group[0]) or f.owner.get(group[0])
            if first_hit is None:
                first_hit = next((hits[r] for r in group if r in hits), None)
            label = f.label(first_hit) if first_hit is not None else None
            if label and label != last_label:
                out.append(f"  in {label}")
                last_label = label
            elif i:
                out.append(f"  {'⋮':>{width}}")
            for r in group:
                h = hits.get(r)
                if h is not None:
                    text = _clip(f.text(r, h.text), HIT_CHARS)
                    out.append(f"{MARKS[h.kind]} {r:>{width}}  {text}")
                else:
                    out.append(f"  {r:>{width}}  {_clip(f.text(r), CONTEXT_CHARS)}")
        if f.preview:
            out.append("  more in this file, one line each:")
            for h in sorted(f.preview, key=lambda h: h.line):
                text = " ".join(f.text(h.line, h.text).split())
                out.append(f"{MARKS[h.kind]} {h.line:>{width}}  {_clip(text, PREVIEW_CHARS)}")
        counted = n - len(f.full) - len(f.preview)
        if counted:
            out.append(f"  … and {counted} more in this file (not shown)")
        return "\n".join(out)

    def _head(self) -> str:
        o = self.o
        shown_files = [f for f in self.files if f.full or f.preview]
        full = sum(len(f.full) for f in self.files)
        previews = sum(len(f.preview) for f in self.files)
        total = o.total_matches
        inside = sum(len(f.hits) for f in self.inside)
        plus = "+" if o.stopped_early else ""
        head = (
            f"{total}{plus} {'match' if total == 1 else 'matches'} in {o.total_files}{plus} "
            f"{'file' if o.total_files == 1 else 'files'} for {o.describe()}"
        )
        if o.timed_out:
            head += " (the search timed out: results are partial)"
        elif o.stopped_early:
            head += " (the search stopped at its cap: there are more)"
        counted = total - inside - full - previews
        if not counted and not inside and not o.stopped_early and not o.timed_out:
            head += "; complete: every match is shown, ranked."
        else:
            parts = [f"{full} shown with context"]
            if previews:
                parts.append(f"{previews} as one-line previews")
            if counted:
                parts.append(f"{counted} only counted")
            head += f"; {', '.join(parts)} (ranked: definitions and code first)."
            if counted or o.stopped_early or o.timed_out:
                head += " Narrow with glob, path or a more specific pattern to see the rest."
        lines = [head]
        if o.alternatives and o.alternative_counts:
            per = ", ".join(
                f"`{a}` {c}" for a, c in zip(o.alternatives, o.alternative_counts, strict=True)
            )
            lines.append(f"Matches per alternative: {per}.")
        if o.case_note:
            lines.append(o.case_note)
        elif not o.ignore_case and full + previews and not o.alternatives:
            lines.append("Case-sensitive (the pattern has capitals); add (?i) to ignore case.")
        if inside:
            words = " or ".join(f"`{w}`" for w in o.plain_words)
            examples = self._inside_examples()
            hint = "|".join(o.plain_words)
            hint = f"\\b{hint}\\b" if len(o.plain_words) == 1 else f"\\b({hint})\\b"
            lines.append(
                f"Not shown: {inside} matches in {len(self.inside)} files where {words} is only "
                f"part of a longer word ({examples}); `{hint}` searches whole words only."
            )
        if shown_files:
            lines.append(f"Marks: {LEGEND}.")
        return "\n".join(lines)

    def _inside_examples(self) -> str:
        seen: dict[str, None] = {}
        for f in self.inside:
            for h in f.hits[:3]:
                for a, b in h.spans[:1]:
                    lo, hi = a, b
                    while lo > 0 and h.text[lo - 1].isalnum():
                        lo -= 1
                    while hi < len(h.text) and h.text[hi].isalnum():
                        hi += 1
                    seen[h.text[lo:hi].lower()] = None
                if len(seen) >= 3:
                    return ", ".join(seen)
        return ", ".join(seen) or "…"

    def _tail(self) -> list[str]:
        rest = [f for f in self.files if not f.full and not f.preview]
        if not rest:
            return []
        names: list[str] = []
        size = 0
        for f in rest:
            item = f"{f.fh.path} ({len(f.fh.hits)})"
            if size + len(item) > 1200:
                break
            names.append(item)
            size += len(item) + 2
        line = "Not shown, with their match counts: " + ", ".join(names)
        more = len(rest) - len(names)
        if more:
            line += f", and {more} more files ({sum(len(f.fh.hits) for f in rest[len(names) :])} matches)"
        return [line + "."]


def _blank_between(f: _File, a: int, b: int) -> bool:
    return any(not f.text(r).strip() for r in range(a + 1, b))


def _is_hit(f: _File, row: int) -> bool:
    return any(h.line == row for h in f.full)


def render(outcome: SearchOutcome, source: FileSource, budget: int = BUDGET) -> str:
    return Renderer(outcome, source, budget).text()
