"""A search result as the model reads it: ranked hits with their text, marks, scopes and context."""

from __future__ import annotations

from codeask.pathdisplay import display_path
from codeask.search.layout import (
    BUDGET,
    CONTEXT_CHARS,
    HIT_CHARS,
    PREVIEW_CHARS,
    FileSource,
    Layout,
    ShownFile,
    blank_between,
    clip,
)
from codeask.search.patterns import is_identifier
from codeask.search.query import Hit, SearchOutcome

MARKS = {
    "definition": "D",
    "assignment": "=",
    "call": ">",
    "reference": ">",
    "import": "I",
    "string": "S",
    "comment": "#",
}
SAME_ROWS_NAMED = 8
REPEATS_NAMED = 3
LEGEND = "D definition · = sets a value · > code · I import · S string · # comment"


class Writer:
    """Writes the layout's current plan: a header, then each file's hits in line order."""

    def __init__(self, outcome: SearchOutcome, layout: Layout) -> None:
        self.o = outcome
        self.layout = layout

    def text(self) -> str:
        files = self.layout.files
        blocks = [self._file_block(f) for f in files if f.full or f.preview]
        return "\n\n".join([self._head(), *blocks, *self._tail()]).rstrip()

    def _file_block(self, f: ShownFile) -> str:
        n = len(f.fh.hits)
        hits = {h.line: h for h in f.full}
        rows = sorted(set(hits) | f.rows)
        width = len(str(max(rows + [h.line for h in f.preview])))
        # a hit whose line is shown as context already is marked there, not printed twice
        inline = {h.line: h for h in f.fh.hits if h.line in f.rows and h.line not in hits}
        out = [self._file_head(f), *self._rows(f, hits, rows, width, inline)]
        previews = [h for h in f.preview if h.line not in inline]
        if previews:
            out.append("  more in this file, one line each:")
            for h in sorted(previews, key=lambda h: h.line):
                text = clip(" ".join(f.text(h.line, h.text).split()), PREVIEW_CHARS)
                scope = f.short_label(h)
                text += f"  — in {scope}" if scope else ""
                out.append(f"{MARKS[h.kind]} {h.line:>{width}}  {text}")
        counted = n - len(f.full) - len(f.preview)
        previewed = {id(h) for h in f.preview}
        counted -= sum(1 for h in inline.values() if id(h) not in previewed)
        if counted:
            out.append(f"  … and {counted} more in this file (not shown)")
        return "\n".join(out)

    @staticmethod
    def _file_head(f: ShownFile) -> str:
        n = len(f.fh.hits) + sum(map(len, f.same.values()))
        kind = "" if f.fh.kind == "source" else f" [{f.fh.kind}]"
        # a file's count is of the pattern's own case; other spellings are counted apart
        other_case = sum(1 for h in f.fh.hits if not h.exact_case)
        exact = n - other_case
        count = exact or other_case
        head = f"{display_path(f.fh.path)}{kind} — {count} match{'es' if count != 1 else ''}"
        if other_case:
            head += f" + {other_case} in another case" if exact else " in another case"
        if len(f.full) < n:
            head += f", {len(f.full)} shown" if f.full else ""
            head += f", {len(f.preview)} as previews" if f.preview else ""
        return head

    @staticmethod
    def _rows(
        f: ShownFile,
        hits: dict[int, Hit],
        rows: list[int],
        width: int,
        inline: dict[int, Hit] | None = None,
    ) -> list[str]:
        """The shown lines in order, in parts under their scope labels, with the notes under
        each hit (where it is used, its aliases, the same line elsewhere) and where a
        definition shown in part goes on."""
        groups: list[list[int]] = []
        for r in rows:
            if groups and r <= groups[-1][-1] + 2 and not blank_between(f, groups[-1][-1], r):
                groups[-1].extend(range(groups[-1][-1] + 1, r + 1))  # a one-line gap is shown
            else:
                groups.append([r])
        gap = f"  {'⋮':>{width}}"
        out: list[str] = []
        last_label: str | None = None
        for i, group in enumerate(groups):
            if i:
                out.append(gap)
            pending: list[str] = []  # lines under the hits of the part shown so far
            for r in group:
                h = hits.get(r)
                owner = h if h is not None else f.owner.get(r)
                label = f.label(owner) if owner is not None else None
                if label and label != last_label:
                    out += pending
                    pending = []
                    if out and out[-1] == gap:
                        out.pop()  # the label says a new part begins
                    out.append(f"  in {label}")
                    last_label = label
                if h is not None:
                    out.append(
                        f"{MARKS[h.kind]} {r:>{width}}  {clip(f.text(r, h.text), HIT_CHARS)}"
                    )
                    pending += _under(f, r)
                else:
                    p = (inline or {}).get(r)
                    mark = MARKS[p.kind] if p is not None else " "
                    out.append(f"{mark} {r:>{width}}  {clip(f.text(r), CONTEXT_CHARS)}")
                end = f.cuts.get(r)
                if end is not None:
                    out.append(f"{gap}  [… the definition goes on to line {end}]")
                earlier = f.earlier.get(r)
                if earlier is not None:
                    out.append(
                        f"{gap}  [… lines {earlier[0]}–{earlier[1]}, shown in an earlier result]"
                    )
            out += pending
        return out

    def _head(self) -> str:
        o = self.o
        shown_files = [f for f in self.layout.files if f.full or f.preview]
        full = sum(len(f.full) for f in self.layout.files)
        previews = sum(len(f.preview) for f in self.layout.files)
        total = o.total_matches
        inside = sum(len(hits) for _, hits in self.layout.inside)
        plus = "+" if o.stopped_early else ""
        head = (
            f"{total}{plus} {'match' if total == 1 else 'matches'} in {o.total_files}{plus} "
            f"{'file' if o.total_files == 1 else 'files'} for {o.describe()}"
        )
        if o.timed_out:
            head += " (the search timed out: results are partial)"
        elif o.stopped_early:
            head += " (the search stopped at its cap: there are more)"
        folded = self.layout.folded
        counted = total - inside - folded - full - previews
        if not counted and not inside and not o.stopped_early and not o.timed_out:
            head += "; complete: every match is shown, ranked"
            head += f" ({folded} repeats of a shown line folded)." if folded else "."
        else:
            parts = [f"{full} shown with context"]
            if previews:
                parts.append(f"{previews} as one-line previews")
            if folded:
                parts.append(f"{folded} repeats of a shown line folded")
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
        if not o.ignore_case:
            exact = total - o.case_differs
            note = f"Case: {exact} {'match has' if exact == 1 else 'matches have'} the pattern's exact case"
            if o.case_differs:
                note += (
                    f"; {o.case_differs} more match ignoring case ({self._case_examples()}), "
                    "ranked after them. Add (?-i) for exact case only."
                )
            else:
                note += "; ignoring case finds no others."
            lines.append(note)
        if inside:
            lines.append(self._inside_note(inside))
        for r in self.layout.repeated[:REPEATS_NAMED]:
            where = ", ".join(f"{display_path(p)}:{n}" for p, n in r.where[:4])
            more = f" and {len(r.where) - 4} more files" if len(r.where) > 4 else ""
            lines.append(
                f"Folded: `{clip(r.text, PREVIEW_CHARS)}` is shown once; the same line in "
                f"{len(r.where)} more files: {where}{more}."
            )
        if o.outside is not None:
            lines.append(f"Outside {filter_text(o)}: {o.outside.describe()}.")
            lines += o.outside.each_file()
        if shown_files:
            lines.append(f"Marks: {LEGEND}.")
        return "\n".join(lines)

    def _case_examples(self) -> str:
        seen: dict[str, None] = {}
        for f in self.layout.files:
            for h in f.fh.hits:
                if not h.exact_case and h.spans:
                    a, b = h.spans[0]
                    seen.setdefault(f"`{h.text[a:b]}`", None)
                    if len(seen) >= 3:
                        return ", ".join(seen)
        return ", ".join(seen) or "…"

    def _inside_note(self, inside: int) -> str:
        """Where the word was only part of longer ones: the longer words, the files, a hint."""
        o = self.o
        words: dict[str, None] = {}
        longer: dict[str, int] = {}
        for _, hits in self.layout.inside:
            for h in hits:
                alts = o.alternatives or o.plain_words[:1]
                words.setdefault(alts[h.alternative or 0] if alts else "", None)
                for a, b in h.spans[:1]:
                    lo, hi = a, b
                    while lo > 0 and (h.text[lo - 1].isalnum() or h.text[lo - 1] == "_"):
                        lo -= 1
                    while hi < len(h.text) and (h.text[hi].isalnum() or h.text[hi] == "_"):
                        hi += 1
                    name = h.text[lo:hi]
                    name = name if is_identifier(name) else name.lower()
                    longer[name] = longer.get(name, 0) + 1
        plain = [w for w in words if w in o.plain_words] or o.plain_words
        said = " or ".join(f"`{w}`" for w in plain)
        examples = ", ".join(
            f"{w} {n}" if n > 1 else w for w, n in sorted(longer.items(), key=lambda x: -x[1])[:3]
        )
        files = sorted(self.layout.inside, key=lambda fh: -len(fh[1]))
        where = ", ".join(f"{display_path(f.path)} ({len(hits)})" for f, hits in files[:4])
        if len(files) > 4:
            where += f" and {len(files) - 4} more files"
        hint = "|".join(plain)
        hint = f"\\b{hint}\\b" if len(plain) == 1 else f"\\b({hint})\\b"
        return (
            f"Not shown: {inside} matches in {len(files)} files where {said} is only part of a "
            f"longer word ({examples}): {where}; `{hint}` searches whole words only."
        )

    def _tail(self) -> list[str]:
        rest = [f for f in self.layout.files if not f.full and not f.preview]
        if not rest:
            return []
        names: list[str] = []
        size = 0
        for f in rest:
            item = f"{display_path(f.fh.path)} ({len(f.fh.hits)})"
            if size + len(item) > 1200:
                break
            names.append(item)
            size += len(item) + 2
        line = "Not shown, with their match counts: " + ", ".join(names)
        more = len(rest) - len(names)
        if more:
            line += f", and {more} more files ({sum(len(f.fh.hits) for f in rest[len(names) :])} matches)"
        return [line + "."]


def _under(f: ShownFile, row: int) -> list[str]:
    """The lines under a hit: where its definition is used, other names, the same line again."""
    out = [f"  {f.uses[row]}"] if row in f.uses else []
    out += [f"  {n}" for n in f.notes.get(row, [])]
    same = f.same.get(row)
    if same:
        where = ", ".join(map(str, same[:SAME_ROWS_NAMED]))
        more = f" and {len(same) - SAME_ROWS_NAMED} more" if len(same) > SAME_ROWS_NAMED else ""
        ls, s = ("line reads", "") if len(same) == 1 else ("lines read", "s")
        out.append(f"  ↳ {len(same)} more {ls} the same around the match: {where}{more}")
    return out


def filter_text(o: SearchOutcome) -> str:
    """The path and glob a search was limited to, as a note names them."""
    parts = [f"glob {display_path(o.glob)}"] if o.glob else []
    if o.path:
        shown = display_path(o.path)
        parts.append(shown if o.path_is_file else f"{shown}/")
    return " and ".join(parts) or "the filter"


def no_matches(o: SearchOutcome) -> str:
    """A search that found nothing: where the pattern is outside the filter, how often each of
    its words occurs alone (the quoted name was right, `include` was not), and the files too
    large to search in full."""
    large = o.large_note()
    head = f"No matches for {o.describe()}"
    if large:
        head += f" in the files up to {o.size_limit / 1024 / 1024:g} MB"
    out = [head + "."]
    if o.outside is not None:
        out.append(f"Outside {filter_text(o)}: {o.outside.describe()}.")
        out += o.outside.each_file()
    if o.near_misses:
        out.append("Each word of the pattern searched alone (ignoring case):")
        for t in o.near_misses:
            if not t.matches:
                out.append(f"- `{t.word}`: nowhere")
            elif t.capped:
                out.append(f"- `{t.word}`: {t.describe(where=False)}")  # too common to say where
            else:
                first = display_path(t.examples[0][0])
                out.append(f"- `{t.word}`: {t.describe()}; e.g. {first}: `{t.sample}`")
    if large:
        out.append(large)
    return "\n".join(out)


def render(outcome: SearchOutcome, source: FileSource, budget: int = BUDGET) -> str:
    layout = Layout(outcome, source, budget)
    text = layout.fill(Writer(outcome, layout).text)
    for f in layout.files:
        source.remember(f.fh.path, f.rows | {h.line for h in f.full})
    return text
