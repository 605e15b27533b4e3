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
from codeask.search.query import SearchOutcome

MARKS = {
    "definition": "D",
    "call": ">",
    "reference": ">",
    "import": "I",
    "string": "S",
    "comment": "#",
}
LEGEND = "D definition · > code · I import · S string · # comment"


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
        kind = "" if f.fh.kind == "source" else f" [{f.fh.kind}]"
        head = f"{display_path(f.fh.path)}{kind} — {n} match{'es' if n != 1 else ''}"
        if len(f.full) < n:
            head += f", {len(f.full)} shown" if f.full else ""
            head += f", {len(f.preview)} as previews" if f.preview else ""
        out = [head]
        hits = {h.line: h for h in f.full}
        rows = sorted(set(hits) | f.rows)
        width = len(str(max(rows + [h.line for h in f.preview])))
        groups: list[list[int]] = []
        for r in rows:
            if groups and r <= groups[-1][-1] + 2 and not blank_between(f, groups[-1][-1], r):
                groups[-1].extend(range(groups[-1][-1] + 1, r + 1))  # a one-line gap is shown
            else:
                groups.append([r])
        last_label: str | None = None
        for i, group in enumerate(groups):
            first_hit = next((hits[r] for r in group if r in hits), None) or f.owner.get(group[0])
            label = f.label(first_hit) if first_hit is not None else None
            if label and label != last_label:
                out.append(f"  in {label}")
                last_label = label
            elif i:
                out.append(f"  {'⋮':>{width}}")
            for r in group:
                h = hits.get(r)
                if h is not None:
                    text = clip(f.text(r, h.text), HIT_CHARS)
                    out.append(f"{MARKS[h.kind]} {r:>{width}}  {text}")
                else:
                    out.append(f"  {r:>{width}}  {clip(f.text(r), CONTEXT_CHARS)}")
        if f.preview:
            out.append("  more in this file, one line each:")
            for h in sorted(f.preview, key=lambda h: h.line):
                text = " ".join(f.text(h.line, h.text).split())
                out.append(f"{MARKS[h.kind]} {h.line:>{width}}  {clip(text, PREVIEW_CHARS)}")
        counted = n - len(f.full) - len(f.preview)
        if counted:
            out.append(f"  … and {counted} more in this file (not shown)")
        return "\n".join(out)

    def _head(self) -> str:
        o = self.o
        shown_files = [f for f in self.layout.files if f.full or f.preview]
        full = sum(len(f.full) for f in self.layout.files)
        previews = sum(len(f.preview) for f in self.layout.files)
        total = o.total_matches
        inside = sum(len(f.hits) for f in self.layout.inside)
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
            words = " or ".join(f"`{w}`" for w in o.plain_words)
            examples = self._inside_examples()
            hint = "|".join(o.plain_words)
            hint = f"\\b{hint}\\b" if len(o.plain_words) == 1 else f"\\b({hint})\\b"
            lines.append(
                f"Not shown: {inside} matches in {len(self.layout.inside)} files where {words} is only "
                f"part of a longer word ({examples}); `{hint}` searches whole words only."
            )
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

    def _inside_examples(self) -> str:
        seen: dict[str, None] = {}
        for f in self.layout.inside:
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


def render(outcome: SearchOutcome, source: FileSource, budget: int = BUDGET) -> str:
    layout = Layout(outcome, source, budget)
    return layout.fill(Writer(outcome, layout).text)
