"""Finds the paths an answer mentions and checks each one against the snapshot it claims to cite."""

from __future__ import annotations

import re
import weakref
from dataclasses import dataclass, field
from typing import Literal

from codeask.errors import ToolRefused
from codeask.snapshot import Snapshot

MentionKind = Literal["file", "ambiguous", "dir", "missing"]


@dataclass(frozen=True)
class Mention:
    """One path mentioned in an answer, where it was written, and what the snapshot says of it."""

    text: str  # as written, minus backticks and asterisks
    span: tuple[int, int]  # character offsets in the answer
    path: str  # the snapshot path if it resolved to one thing, else as written (no leading ./)
    start_line: int | None
    end_line: int | None  # None for a single line
    verified: bool
    reason: str | None  # why it is not verified
    url: str | None  # permalink at the SHA, for verified files on a known host
    kind: MentionKind  # "ambiguous": several files or directories match a bare name or suffix


# Goes right after a reference that could not be verified, wherever the answer is shown, so the
# reader never sees it bare, not even while the answer is still being written.
UNVERIFIED_MARK = " (⚠️ unverified)"


@dataclass
class Verification:
    """Every path mention found in one answer, checked against one snapshot."""

    sha: str
    mentions: list[Mention] = field(default_factory=list)

    @property
    def citations(self) -> list[Mention]:
        """Verified mentions of a single file, each path and range once."""
        seen: set[tuple[str, int | None, int | None]] = set()
        out: list[Mention] = []
        for m in self.mentions:
            key = (m.path, m.start_line, m.end_line)
            if m.verified and m.kind == "file" and key not in seen:
                seen.add(key)
                out.append(m)
        return out

    @property
    def unverified(self) -> list[Mention]:
        return [m for m in self.mentions if not m.verified]

    @property
    def ok(self) -> bool:
        return not self.unverified

    def marks(self, answer: str) -> list[tuple[int, str]]:
        """Where UNVERIFIED_MARK goes in `answer`: after each unverified mention, or after the
        code span holding it (`` `nope.py:3` `` is marked after its closing backtick); each
        place once, in order."""
        spans = code_spans(answer)
        places: set[int] = set()
        for m in self.unverified:
            s, e = m.span
            code = next(((cs, ce) for cs, ce in spans if cs <= s < ce), None)
            places.add(code[1] + 1 if code is not None else e)
        return [(p, UNVERIFIED_MARK) for p in sorted(places)]


# Extensions that make a bare name (`settings.py`) a claim to be a file even when it does not
# exist. Deliberately excludes ones that read as prose or domains (io, com, net, dev, ai).
COMMON_EXTENSIONS = frozenset(
    """
    py pyi pyx ipynb ts tsx mts cts js jsx mjs cjs go rs java kt kts groovy rb php c h cc cpp cxx
    hpp hh hxx cs fs swift scala clj ex exs erl hs ml lua pl dart zig sql prisma yaml yml toml json
    jsonc json5 ini cfg conf properties sh bash zsh ps1 bat tf hcl proto graphql gql vue svelte
    astro css scss sass less html htm md mdx rst txt lock xml gradle csv tsv mk cmake bzl bazel
    nix j2 jinja jinja2 tmpl ejs hbs pem crt tfvars
    """.split()
)
# Extension-less names that are unmistakably files when quoted or cited with a line.
_FILE_NAMES = frozenset(
    """
    Makefile GNUmakefile Dockerfile Containerfile Jenkinsfile Gemfile Rakefile Procfile Vagrantfile
    Pipfile Brewfile Justfile Tiltfile Earthfile Caddyfile CODEOWNERS LICENSE README CHANGELOG
    """.split()
)
# Product names spelt like files. Matched exactly inside paths, case-insensitively when bare.
_PRODUCT_NAMES = frozenset(
    """
    Node.js Vue.js Next.js Nuxt.js Nest.js NestJS Express.js React.js Angular.js AngularJS Ember.js
    Backbone.js Three.js D3.js Chart.js P5.js Alpine.js Solid.js Svelte.js Deno.js Discord.js
    Moment.js Day.js Knockout.js Handlebars.js Require.js Ext.js Meteor.js Babylon.js Pixi.js
    Phaser.js Video.js Leaflet.js Highlight.js Marked.js Anime.js Web3.js Ethers.js Socket.io
    Sails.js Koa.js Hapi.js Fastify.js Mocha.js Jest.js Vite.js Bun.js Preact.js Remix.js
    ASP.NET VB.NET ADO.NET .NET
    """.split()
)
_PRODUCT_NAMES_LOWER = frozenset(n.lower() for n in _PRODUCT_NAMES)
# Endings that make `x.y` a host name rather than a file, unless the ending is also a common
# file extension (`.sh`, `.rs`, `.md` are countries too, and files far more often).
_TLDS = frozenset(
    """
    com org net io dev co ai app edu gov mil info biz me us uk de fr nl jp cn ru eu ca au in ch se
    be it es pl br local internal localhost cloud xyz tech site online gg tv so to ly
    """.split()
)
# `request.json`, `mutex.lock`: attribute access on a receiver, not a file, when written bare.
_RECEIVERS = frozenset(
    """
    self this cls super request req response resp res ctx context mutex lock rlock obj el element
    document window event evt err error np pd r e
    """.split()
)
_MAX_AMBIGUOUS_READS = 50

_TOKEN = re.compile(r"[\w.\-/+@~\[\]]+")
# A path shown with escapes (`new\nline.py`, pathdisplay): a token with a backslash in it.
_ESCAPED_TOKEN = re.compile(r"[\w.\-/+@~\[\]]*\\[\w.\-/+@~\[\]\\]+")
_LETTER = re.compile(r"[^\W\d_]")
_EXTENSION = re.compile(r"[a-z0-9]*[a-z][a-z0-9]*")
_DOTFILE = re.compile(r"\.[A-Za-z][\w.-]*")  # .env, .gitignore, .eslintrc.json
_ABBREVIATION = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]?")  # e.g, i.e, a.m, U.S
_DASH = r"(?:-|[ \t]?[–—][ \t]?)"
# Right after a path: `:141`, `:10-20`, `:10–20`, `:10:5` (line:col), `#L10`, `#L10-L20`. A
# closing backtick or bold marker may sit between the path and the suffix.
_DIRECT_SUFFIX = re.compile(
    rf"[`*]{{0,3}}(?::L?(?P<a>\d+)(?:{_DASH}L?(?P<b>\d+))?(?::\d+)?"
    r"|#L(?P<c>\d+)(?:C\d+)?(?:-L?(?P<d>\d+)(?:C\d+)?)?)(?!\w|\.\d)"
)
_PHRASE_SUFFIX = re.compile(
    r"[`*]{0,3}(?P<open>[ \t]*\(|,|[ \t])[ \t]*(?:at[ \t]+|on[ \t]+)?lines?[ \t]+L?(?P<a>\d+)"
    rf"(?:(?:{_DASH}|[ \t]+(?:to|through)[ \t]+)L?(?P<b>\d+))?(?!\w)(?P<close>\))?",
    re.IGNORECASE,
)
_PHRASE_PREFIX = re.compile(
    r"\blines?[ \t]+L?(?P<a>\d+)"
    rf"(?:(?:{_DASH}|[ \t]+(?:to|through)[ \t]+)L?(?P<b>\d+))?"
    r"[ \t]+(?:of|in)[ \t]+(?:the[ \t]+file[ \t]+)?[`*\"']*$",
    re.IGNORECASE,
)
_PREFIX_WINDOW = 60  # characters before a path searched for such a phrase
_WHOLE_CODE = re.compile(
    rf"(?P<p>.+?)(?::L?(?P<a>\d+)(?:{_DASH}L?(?P<b>\d+))?(?::\d+)?|#L(?P<c>\d+)(?:-L?(?P<d>\d+))?)?"
)
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_INLINE_CODE = re.compile(r"`([^`\n]+)`")
# Regions whose contents are never paths in the snapshot; blanked before scanning.
_MASKS = (
    re.compile(r"<(?:[A-Za-z][A-Za-z0-9+.\-]*:|[@#!])[^<>\n]*>"),  # Slack <url|label>, <@U1>
    re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s<>|`\"']*"),
    re.compile(r"\b(?:mailto|tel|urn|data|javascript):[^\s<>|`\"']+", re.IGNORECASE),
    re.compile(r"[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+(?::[\w./~\-]*)?"),  # e-mail, git@host:o/r.git
    re.compile(r"\bwww\.[^\s<>|`\"']+"),
)

_dir_indexes: weakref.WeakKeyDictionary[Snapshot, dict[str, list[str]]] = (
    weakref.WeakKeyDictionary()
)


def _dirs_by_basename(snapshot: Snapshot) -> dict[str, list[str]]:
    index = _dir_indexes.get(snapshot)
    if index is None:
        index = {}
        for d in sorted(snapshot.dir_set):
            index.setdefault(d.rpartition("/")[2], []).append(d)
        _dir_indexes[snapshot] = index
    return index


def _mask(answer: str) -> str:
    chars = list(answer)
    text = answer
    for pattern in _MASKS:
        for m in pattern.finditer(text):
            chars[m.start() : m.end()] = " " * (m.end() - m.start())
        text = "".join(chars)
    return text


def _regions(answer: str) -> tuple[str, list[tuple[int, int]], list[tuple[int, int]]]:
    """The answer with links and addresses blanked, its fenced blocks, and its inline code spans
    (content offsets, backticks excluded) outside those blocks."""
    text = _mask(answer)
    fences = [m.span() for m in _FENCE.finditer(text)]
    unfenced = list(text)
    for s, e in fences:
        unfenced[s:e] = " " * (e - s)
    return text, fences, [m.span(1) for m in _INLINE_CODE.finditer("".join(unfenced))]


def code_spans(answer: str) -> list[tuple[int, int]]:
    """The inline code spans the scanner sees (content offsets; the backticks sit just outside)."""
    return _regions(answer)[2]


def _lines(n: int) -> str:
    return "1 line" if n == 1 else f"{n} lines"


def _extension(name: str) -> str | None:
    """The lowercase extension of a file-like name, or None for dotfiles, versions and hosts."""
    stem, dot, ext = name.rpartition(".")
    if not dot or not _LETTER.search(stem) or len(ext) > 12 or not _EXTENSION.fullmatch(ext):
        return None
    if ext in _TLDS and ext not in COMMON_EXTENSIONS:
        return None
    return ext


def _is_host(component: str) -> bool:
    if "." not in component:
        return False
    return component.startswith("www.") or component.rpartition(".")[2].lower() in _TLDS


def _claims_file(raw: str, *, quoted: bool, in_fence: bool, has_lines: bool) -> bool:
    """Whether a string that is not in the snapshot was clearly meant as a file path."""
    if raw.startswith(("~", "@")):
        return False
    absolute = raw.startswith("/")
    body = raw.strip("/")
    while body.startswith("./"):
        body = body[2:]
    if not body:
        return False
    parts = body.split("/")
    last = parts[-1]
    nested = len(parts) > 1
    if nested and _is_host(parts[0]):
        return False  # a URL written without its scheme: github.com/acme/billing
    if last in _PRODUCT_NAMES or (not nested and last.lower() in _PRODUCT_NAMES_LOWER):
        return False
    if _ABBREVIATION.fullmatch(last):
        return False
    ext = _extension(last)
    # A dotted word that is an extension (`.py` files) or the repository's own `.git` is no file.
    dotfile = (
        _DOTFILE.fullmatch(last) is not None
        and last != ".git"
        and last[1:] not in COMMON_EXTENSIONS
        and last[1:] not in _TLDS
    )
    named = last in _FILE_NAMES
    # Strong enough to be a file even where nothing else says so; `db.prod:5432` and
    # `bitnami/redis:7` (a host and an image, not files with lines) fall short of it.
    recognisable = ext in COMMON_EXTENSIONS or dotfile or named or (nested and ext is not None)
    if in_fence and absolute:
        return False  # stack traces and shell sessions: paths on some machine, not in the repo
    if in_fence or absolute:
        # Code samples and absolute paths talk about runtime files; only a line number makes
        # them a citation of the repository.
        return has_lines and recognisable
    if ext is not None and not nested and last.rpartition(".")[0] in _RECEIVERS:
        return False
    if has_lines or quoted:
        return recognisable
    if nested:
        return ext is not None or dotfile
    # A capitalised `X.js` in running prose is a library far more often than a file.
    return ext in COMMON_EXTENSIONS and not (ext == "js" and last[:1].isupper())


@dataclass(frozen=True)
class _Found:
    kind: MentionKind
    path: str
    files: tuple[str, ...] = ()  # candidate files when ambiguous


def _trim(text: str, s: int, e: int) -> tuple[int, int]:
    """Token bounds without sentence punctuation and unbalanced markdown brackets."""
    while s < e:
        tok = text[s:e]
        if tok[-1] in ".-" or (tok[-1] == "]" and tok.count("]") > tok.count("[")):
            e -= 1
        elif tok[0] == "[" and tok.count("[") > tok.count("]"):
            s += 1
        else:
            break
    return s, e


def _phrase_before(text: str, s: int) -> re.Match[str] | None:
    """A `lines 3-5 of` phrase ending at s, where a path starts (the scan and `settled` alike)."""
    return _PHRASE_PREFIX.search(text, max(0, s - _PREFIX_WINDOW), s)


def _pair(a: str | None, b: str | None) -> tuple[int, int | None]:
    assert a is not None
    return int(a), int(b) if b is not None else None


class _Scanner:
    def __init__(self, answer: str, snapshot: Snapshot) -> None:
        self.answer = answer
        self.snap = snapshot
        self.text, self.fences, self.codes = _regions(answer)
        self.taken: list[tuple[int, int]] = []
        self.mentions: list[Mention] = []

    def run(self) -> list[Mention]:
        for cs, ce in self.codes:
            self._whole_code(cs, ce)
        for tok in _ESCAPED_TOKEN.finditer(self.text):
            self._escaped(*tok.span())
        resume = 0
        for tok in _TOKEN.finditer(self.text):
            s, e = tok.span()
            if s < resume or self._taken(s):
                continue
            resume = self._token(s, e)
        self.mentions.sort(key=lambda m: m.span)
        return self.mentions

    def _lookup(self, raw: str) -> _Found | None:
        """What a written path names in the snapshot; None when it is no path at all (`./`)."""
        try:
            rel = self.snap.normalise(raw.lstrip("/"))
        except ToolRefused:
            # Outside the tree or deny-listed: both are simply not in the snapshot.
            return _Found("missing", raw.removeprefix("./"))
        if not rel:
            return None
        if rel in self.snap.file_set:
            return _Found("file", rel)
        if rel in self.snap.dir_set:
            return _Found("dir", rel)
        name = rel.rpartition("/")[2]
        tail = "/" + rel
        nested = "/" in rel
        files = [f for f in self.snap.by_basename.get(name, ()) if not nested or f.endswith(tail)]
        dirs = [
            d for d in _dirs_by_basename(self.snap).get(name, ()) if not nested or d.endswith(tail)
        ]
        if len(files) + len(dirs) == 1:
            return _Found("file", files[0]) if files else _Found("dir", dirs[0])
        if files or dirs:
            return _Found("ambiguous", rel, tuple(files))
        while raw.startswith("./"):
            raw = raw[2:]
        return _Found("missing", raw)

    def _check_lines(self, found: _Found, start: int, end: int | None) -> str | None:
        """Why the cited lines do not hold, or None if they do."""
        if found.kind == "dir" or (found.kind == "ambiguous" and not found.files):
            return f"{found.path} is a directory, so it has no line {start}"
        if start < 1:
            return f"line {start} does not exist (lines start at 1)"
        if end is not None and end < start:
            return f"reversed range {start}-{end}"
        last = end if end is not None else start
        if found.kind == "file":
            n = self.snap.line_count(found.path)
            if n is None:
                return "the file could not be read to check its lines"
            return f"line {last} is past the end (file has {_lines(n)})" if last > n else None
        if len(found.files) > _MAX_AMBIGUOUS_READS:
            return None  # too many namesakes to read them all; it is not a citation anyway
        counts = [n for n in map(self.snap.line_count, found.files) if n is not None]
        if any(last <= n for n in counts):
            return None
        longest = max(counts, default=0)
        return (
            f"line {last} is past the end of every file named {found.path} "
            f"(longest has {_lines(longest)})"
        )

    def _emit(
        self, found: _Found, span: tuple[int, int], start: int | None, end: int | None
    ) -> None:
        if found.kind == "missing":
            reason: str | None = f"no such file at {self.snap.short_sha}"
        elif start is None:
            reason = None
        else:
            reason = self._check_lines(found, start, end)
        url = None
        if reason is None and found.kind == "file":
            url = self.snap.link(found.path, start, end)
        text = self.answer[span[0] : span[1]].replace("`", "").replace("*", "").strip()
        self.mentions.append(
            Mention(
                text=text,
                span=span,
                path=found.path,
                start_line=start,
                end_line=end,
                verified=reason is None,
                reason=reason,
                url=url,
                kind=found.kind,
            )
        )

    def _whole_code(self, cs: int, ce: int) -> None:
        """A code span holding one existing path with spaces or parentheses (`docs/my notes.md`)."""
        content = self.text[cs:ce].strip()
        m = _WHOLE_CODE.fullmatch(content)
        if not content or m is None or _TOKEN.fullmatch(m["p"]):
            return  # simple tokens are handled, with their context, by the main scan
        found = self._lookup(m["p"])
        if found is None or found.kind == "missing":
            return
        span = self.text[cs:ce]
        lo = cs + len(span) - len(span.lstrip())
        hi = lo + len(content)
        lines: tuple[int, int | None] | None = None
        if m["a"] or m["c"]:
            lines = _pair(m["a"] or m["c"], m["b"] or m["d"])
        else:
            after = _DIRECT_SUFFIX.match(self.text, hi)
            if after:
                lines = _pair(after["a"] or after["c"], after["b"] or after["d"])
                hi = after.end()
        start, end = lines if lines else (None, None)
        self._emit(found, (lo, hi), start, end)
        self.taken.append((cs - 1, max(hi, ce + 1)))

    def _escaped(self, s: int, e: int) -> None:
        """A path the tools showed with escapes, cited as shown; only one that names a file or
        directory counts (a regex like `\bword\b` in prose is left to the main scan)."""
        if self._taken(s):
            return
        s, e = _trim(self.text, s, e)
        found = self._lookup(self.text[s:e])
        if found is None or found.kind not in ("file", "dir"):
            return
        start, end, span_start, span_end = self._lines_around(s, e)
        self._emit(found, (span_start, span_end), start, end)
        self.taken.append((span_start, span_end))

    def _suffix(self, e: int) -> tuple[int, int | None, int] | None:
        m = _DIRECT_SUFFIX.match(self.text, e)
        if m:
            start, end = _pair(m["a"] or m["c"], m["b"] or m["d"])
            return start, end, m.end()
        m = _PHRASE_SUFFIX.match(self.text, e)
        if m:
            start, end = _pair(m["a"], m["b"])
            stop = m.end() if "(" in m["open"] else m.end("b") if m["b"] else m.end("a")
            return start, end, stop
        return None

    def _taken(self, s: int) -> bool:
        """Whether offset s is inside a mention already found (a code span's or an escaped path)."""
        return any(ts <= s < te for ts, te in self.taken)

    def _prefix(self, s: int) -> tuple[int, int | None, int] | None:
        m = _phrase_before(self.text, s)
        if m is None:
            return None
        start, end = _pair(m["a"], m["b"])
        return start, end, m.start()

    def _lines_around(self, s: int, e: int) -> tuple[int | None, int | None, int, int]:
        """The lines cited with the token at s:e (`path:12`, `lines 3-5 of path`), if any, and
        the span of the mention once they are included."""
        lines = self._suffix(e)
        if lines is not None:
            start, end, span_end = lines
            return start, end, s, span_end
        before = self._prefix(s)
        if before is not None:
            start, end, span_start = before
            return start, end, span_start, e
        return None, None, s, e

    def _quoted(self, s: int, e: int) -> bool:
        """Whether the token stands alone as a path: all of a code span, or a link's target.
        (Only asked of a token without lines: with them, it is a citation either way.)"""
        code = next(((cs, ce) for cs, ce in self.codes if cs <= s < ce), None)
        if code is None:
            # A markdown link target; before offset 2 the slice is empty.
            return self.text[s - 2 : s] == "]("
        content = self.text[code[0] : code[1]]
        lo = code[0] + len(content) - len(content.lstrip())
        hi = code[1] - len(content) + len(content.rstrip())
        return s == lo and e == hi

    def _token(self, s: int, e: int) -> int:
        """Consider one token as a path mention; returns where scanning may resume."""
        s, e = _trim(self.text, s, e)
        raw = self.text[s:e]
        if not raw or not _LETTER.search(raw):
            return e

        start, end, span_start, span_end = self._lines_around(s, e)
        has_lines = start is not None
        quoted = self._quoted(s, e)
        in_fence = any(fs <= s < fe for fs, fe in self.fences)

        glob_after = self.text[e : e + 1] == "*" and raw[-1] in "/."
        glob_before = s > 0 and self.text[s - 1] == "*" and raw[0] in "/."
        if glob_after or glob_before:
            return e  # a piece of a glob (`src/**/*.test.ts`), not a path of its own
        plain = "/" not in raw and "." not in raw
        if plain and not quoted and not has_lines and raw == raw.lower():
            return e  # an ordinary word: `build` or `billing` in a sentence is English

        found = self._lookup(raw)
        if found is not None and found.kind == "missing":
            # `_worker.py_` (Slack italics) or `~old.py~` (strike-through); `__init__.py` is real.
            if len(raw) > 2 and raw[0] == raw[-1] and raw[0] in ("_", "~"):
                inner = self._lookup(raw[1:-1])
                if inner is not None:
                    found, raw = inner, raw[1:-1]
                    if span_start == s:
                        span_start += 1
                    if span_end == e:
                        span_end -= 1
                    s, e = s + 1, e - 1
        if found is None:
            return e

        if in_fence and not has_lines:
            # Paths inside code samples are the code's own strings; only a cited line (a
            # `# billing/worker.py:141` header) makes one a claim worth checking or linking.
            return e
        if found.kind == "missing":
            called = self.text[e : e + 1] == "("  # `response.json()` is a call, not a file
            if called or not _claims_file(
                raw, quoted=quoted, in_fence=in_fence, has_lines=has_lines
            ):
                return e
        elif plain and not quoted and not has_lines and found.kind != "file":
            # Capitalised words count only as extension-less files (Makefile, LICENSE), and
            # only when one file has that name: `Worker` is more likely a class.
            return e
        self._emit(found, (span_start, span_end), start, end)
        return span_end


def verify_answer(answer: str, snapshot: Snapshot) -> Verification:
    """Find every path the answer mentions and check it (and any lines) against the snapshot."""
    return Verification(sha=snapshot.sha, mentions=_Scanner(answer, snapshot).run())


# A regex and the regex of all its prefixes, built together: what may still follow a path and
# become its line suffix. Until the text after a path leaves every prefix of _DIRECT_SUFFIX and
# _PHRASE_SUFFIX, the citation may still grow (`worker.py` then `:6`, then `-11`).
_Rx = tuple[str, str]


def _lit(s: str) -> _Rx:
    return re.escape(s), "".join(f"(?:{re.escape(c)}" for c in s) + ")?" * len(s)


def _one(cls: str) -> _Rx:
    return cls, f"(?:{cls})?"


def _many(cls: str, *, least: int) -> _Rx:
    return f"{cls}{'+' if least else '*'}", f"{cls}*"


def _opt(part: _Rx) -> _Rx:
    return f"(?:{part[0]})?", part[1]


def _alt(*parts: _Rx) -> _Rx:
    return "(?:" + "|".join(f for f, _ in parts) + ")", "(?:" + "|".join(p for _, p in parts) + ")"


def _seq(*parts: _Rx) -> _Rx:
    # A prefix of p1 p2 … pn is a prefix of p1, or p1 whole and a prefix of p2, and so on.
    alts = ["".join(f for f, _ in parts[:i]) + pre for i, (_, pre) in enumerate(parts)]
    return "(?:" + "".join(f for f, _ in parts) + ")", "(?:" + "|".join(alts) + ")"


def _suffix_prefixes() -> tuple[re.Pattern[str], re.Pattern[str]]:
    marks = (r"[`*]{0,3}", r"[`*]{0,3}")
    space = r"[ \t]"
    num, line = _many(r"\d", least=1), _opt(_lit("L"))
    dash = _alt(_lit("-"), _seq(_opt(_one(space)), _one("[–—]"), _opt(_one(space))))
    direct = _seq(
        marks,
        _alt(
            _seq(_lit(":"), line, num, _opt(_seq(dash, line, num)), _opt(_seq(_lit(":"), num))),
            _seq(_lit("#L"), num, _opt(_seq(_lit("C"), num)),
                 _opt(_seq(_lit("-"), line, num, _opt(_seq(_lit("C"), num))))),
        ),
    )  # fmt: skip
    spaces = _many(space, least=1)
    phrase = _seq(
        marks,
        _alt(_seq(_many(space, least=0), _lit("(")), _lit(","), _one(space)),
        _many(space, least=0),
        _opt(_seq(_alt(_lit("at"), _lit("on")), spaces)),
        _lit("line"), _opt(_lit("s")), spaces, line, num,
        _opt(_seq(_alt(dash, _seq(spaces, _alt(_lit("to"), _lit("through")), spaces)), line, num)),
        _opt(_lit(")")),
    )  # fmt: skip
    return re.compile(direct[1]), re.compile(phrase[1], re.IGNORECASE)


SUFFIX_PREFIXES = _suffix_prefixes()
# A `<` that may yet become a special mention spanning lines: `<!here|…>`, `<` + newline + `!`.
_SPECIAL_START = re.compile(r"<\s*(?:!|\Z)")


def _viable(rx: re.Pattern[str], text: str, start: int) -> int:
    """How many characters from `start` are still a prefix of something `rx`'s language holds
    (never a line break: no suffix holds one, so the run ends on its line)."""
    k = 0
    while start + k < len(text) and rx.fullmatch(text, start, start + k + 1):
        k += 1
    return k


def _decided(text: str, end: int) -> bool:
    """Whether what follows a path ending at `end` can no longer become its line suffix."""
    viable = max(_viable(rx, text, end) for rx in SUFFIX_PREFIXES)
    # The suffixes look up to two characters past their end (`12.5` is no line 12).
    after = text[end + viable : end + viable + 2]
    return len(after) == 2 or "\n" in after


def settled(text: str, snapshot: Snapshot) -> tuple[int, Verification]:
    """For an answer still being written: how much of `text` is final, and the mentions in it.

    Final means nothing that can follow changes how that part reads: no path in it may still grow
    a line suffix (`worker.py` + `:6`), no inline code span or Slack `<…>` is still open, and the
    cut falls outside every mention, code span and `<…>`. Only whole words settle, never the
    spaces after the last one. The mentions are checked against the snapshot as `verify_answer`
    checks them; they are exactly those the finished answer will have in that part.
    """
    masked, _fences, codes = _regions(text)
    n = len(text)
    cut = n
    while cut > 0 and not text[cut - 1].isspace():
        cut -= 1  # the last word may still be growing
    line_start = text.rfind("\n") + 1
    forbidden: list[tuple[int, int]] = []  # a cut strictly inside one falls back to its start
    closed = [(cs - 1, ce + 1) for cs, ce in codes]  # with their backticks
    for i in range(line_start, n):
        if masked[i] == "`" and not any(a <= i < b for a, b in closed):
            # An unmatched backtick on the last line: a code span may still be opening here.
            # (Inside a fence the whole line is code; holding it to its end costs nothing.)
            cut = min(cut, i)
            break
    for cs, ce in codes:
        # The closing backtick and the character after it decide whether a path is linked.
        forbidden.append((cs - 1, ce + 1 if ce + 1 < n else ce + 2))
    for m in re.finditer("<", text):
        p = m.start()
        # Slack's `<…>` ends on its own line: a `>` lines later does not make an earlier `<` one
        # (it would take back text already settled past it).
        eol = text.find("\n", p)
        close = text.find(">", p, n if eol < 0 else eol)
        if close >= 0:
            forbidden.append((p, close + 1))
        elif p >= line_start or _SPECIAL_START.match(text, p):
            cut = min(cut, p)
    for tok in _TOKEN.finditer(masked):
        s, e = _trim(masked, *tok.span())
        if s >= cut:
            break
        if not _LETTER.search(masked, s, e) or _decided(text, e):
            continue  # a number or a mark is never a path of its own
        hold = s  # in a code span, the span's forbidden region takes the cut back to its backtick
        prefix = _phrase_before(masked, s)
        if prefix is not None:
            hold = min(hold, prefix.start())
        cut = min(cut, hold)
    verification = verify_answer(text, snapshot)
    for mention in verification.mentions:
        a, b = mention.span
        code = next(((cs, ce) for cs, ce in codes if cs <= a < ce), None)
        if code is not None:
            a, b = min(a, code[0] - 1), max(b, code[1] + 1 if code[1] + 1 < n else code[1] + 2)
        forbidden.append((a, b))
    cut = _fall_back(text, cut, forbidden)
    mentions = [m for m in verification.mentions if m.span[1] <= cut]
    return cut, Verification(sha=verification.sha, mentions=mentions)


def _fall_back(text: str, cut: int, forbidden: list[tuple[int, int]]) -> int:
    """The cut moved back out of every region it falls strictly inside, and off trailing spaces."""
    while True:
        while cut > 0 and text[cut - 1].isspace():
            cut -= 1
        inside = [a for a, b in forbidden if a < cut < b]
        if not inside:
            return cut
        cut = min(inside)


def _brief(reason: str, short_sha: str) -> str:
    # The SHA is already in the warning's first words, and nested brackets read badly in Slack.
    reason = reason.removesuffix(f" at {short_sha}")
    m = re.fullmatch(r"(.*) \(((?:file|longest) has .*)\)", reason)
    return f"{m[1]}; the {m[2]}" if m else reason


def warning_text(v: Verification, searches: list[str]) -> str | None:
    """A plain-text warning listing what could not be verified and what was searched; None if ok."""
    if v.ok:
        return None
    short = v.sha[:7]
    items: list[str] = []
    for m in v.unverified:
        item = f"`{m.text}` ({_brief(m.reason or 'unverified', short)})"
        if item not in items:
            items.append(item)
    noun = "reference" if len(items) == 1 else "references"
    head = f"⚠️ Could not verify {len(items)} {noun} at {short}: {', '.join(items)}."
    done = [" ".join(s.split()).rstrip(".") for s in searches if s.strip()]
    tail = f"Searches run: {', '.join(done)}." if done else "No searches were run."
    return f"{head} {tail}"
