"""The read-only tools the model drives (search_code, read_file, list_files), all behind one redaction gate."""

from __future__ import annotations

import math
import os
import re
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from codeask.deadline import Aborted, within
from codeask.errors import CodeaskError, ToolRefused, public
from codeask.filewindow import read_window
from codeask.ops import logger
from codeask.pathdisplay import display_path
from codeask.pathglob import GlobError, select
from codeask.redact import RedactionGate, mask_file, scan
from codeask.search import (
    BUDGET,
    RAW_MATCH_CAP,
    FileHits,
    FileSource,
    SearchOutcome,
    elsewhere,
    no_matches,
    render,
    search,
)
from codeask.search.patterns import per_line
from codeask.search.query import LargeFile, rg_globs
from codeask.search.ripgrep import (
    MAX_FILESIZE,
    RawMatch,
    clean_lines,
    clean_whole,
    find_rg,
    split_lines,
)
from codeask.search.unmasked import Hider, Signs, hider, line_alone, stands_alone
from codeask.snapshot import BINARY_SNIFF, Snapshot, is_binary

# Caps: what one tool result may cost the model. Tuned so a result fits a round without crowding it.
SEARCH_MAX_CHARS = BUDGET  # codeask.search.layout says why
READ_MAX_LINES = 300
READ_MAX_CHARS = 24000
LINE_MAX_CHARS = 400
LIST_MAX_ENTRIES = 200
LIST_DIRS = 40  # directories a glob names, listed beside its files
# What one argument may be: longer strings and bigger numbers are refused, never attempted.
PATTERN_MAX_CHARS = 1000
GLOB_MAX_CHARS = 500
PATH_MAX_CHARS = 4096
LINE_NUMBER_MAX = 1_000_000_000
DEADLINE_SLACK_S = 10.0  # a tool's deadline: the search timeout plus this, for ranking and reading


class ToolTimeout(ToolRefused):
    """A tool ran past its deadline."""


# The deadline of the tool call running in this thread, for the loops that check it.
_DEADLINE: ContextVar[float | None] = ContextVar("codeask_tool_deadline", default=None)


def check_deadline(what: str) -> None:
    """Raise ToolTimeout if the running tool call is past its deadline (called between steps)."""
    deadline = _DEADLINE.get()
    if deadline is not None and time.monotonic() > deadline:
        raise ToolTimeout(f"{what} ran out of time; narrow it with a path or a glob")


def _search_deadline() -> None:
    check_deadline("search_code")


@dataclass
class ToolResult:
    text: str
    is_error: bool = False


@dataclass
class ToolCall:
    name: str
    args: dict[str, Any]
    is_error: bool
    elapsed_ms: float
    chars: int
    summary: str


@dataclass
class Tool:
    """A tool as the model sees it (name, description, JSON schema) and the function that runs it."""

    name: str
    description: str
    schema: dict[str, Any]
    run: Callable[[dict[str, Any]], str]

    def definition(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": self.schema}


def _clip(line: str, limit: int = LINE_MAX_CHARS) -> str:
    if len(line) <= limit:
        return line
    return line[:limit] + f" [… line cut, {len(line) - limit} more characters]"


SEARCH_DESCRIPTION = (
    "Search the repository's files with a regular expression (ripgrep syntax). A lowercase "
    "pattern ignores case; one with capitals also finds other spellings of case, listed after "
    "the exact ones (add (?-i) for exact case only). Hits are grouped by file and ranked: "
    "definitions and code before imports, strings and comments; source before config, tests, "
    "docs, vendored and generated files; whole words before matches inside longer words. Every "
    "hit shown has its text, a mark (D definition, = sets a value, > code, I import, S string, "
    "# comment), its enclosing scope (`class Session › def send(self, request)`, a C function's "
    "signature, a Helm `define`, or a config key path such as `cache › redis › host`) and the "
    "lines around it that make it readable; a definition is shown to its end (up to 60 lines of "
    "body, else where it ends), and in a small result it says where it is called from. A result "
    "of up to 25 matches shows every one; a bigger one shows the best with context, then one-line "
    "previews, then counts per file, and the header says whether the list is complete and how "
    "many matches a glob or path left out. No match: each word of the pattern is counted alone. "
    "In an alternation ('send_request|RetryPolicy') every alternative gets its share. Lines are "
    "matched one at a time: a \\n in the pattern searches its lines apart. Narrow with "
    "`glob` ('*.{c,h}', '!**/tests/**') or `path` (a directory or one file)."
)
READ_DESCRIPTION = (
    "Read numbered lines of one file. Give start_line/end_line to read the part you need (a search "
    f"hit's line ± 40 is usually enough); at most {READ_MAX_LINES} lines come back per call, and the "
    "footer says how to continue. Paths are relative to the repository root, exactly as search_code "
    "and list_files print them."
)
LIST_DESCRIPTION = (
    "List files that exist in the repository, optionally under a directory `path` and/or matching "
    "a `glob` ('*.go', 'src/**/handlers/*.ts'). Use it to see a project's layout or to check that a "
    f"path exists before you cite it. At most {LIST_MAX_ENTRIES} paths come back; larger listings "
    "are summarised by directory with file counts."
)


class Toolbox:
    """The tools over one snapshot, with a log of what ran; every result passes the redaction gate."""

    def __init__(
        self,
        snapshot: Snapshot,
        *,
        gate: RedactionGate | None = None,
        rg_path: str | None = None,
        search_timeout_s: float = 10.0,
        on_event: Callable[[str], None] | None = None,
        timeout_s: float | None = None,
        large_file_bytes: int = MAX_FILESIZE,
    ) -> None:
        self.snapshot = snapshot
        self.on_event = on_event
        self.gate = gate or RedactionGate()
        self.rg = find_rg(rg_path)
        self.search_timeout_s = search_timeout_s
        # Every call has a deadline: a search's rg runs share search_timeout_s, then ranking and
        # reading the files shown need a little more.
        self.timeout_s = timeout_s if timeout_s is not None else search_timeout_s + DEADLINE_SLACK_S
        # Files bigger than this are skipped by search and read by streaming a window.
        self.large_file_bytes = large_file_bytes
        self.calls: list[ToolCall] = []
        self.searches: list[str] = []
        self._lines_cache: dict[str, list[str] | None] = {}
        self._alone_cache: dict[str, list[str]] = {}  # files a search judges line by line
        self._signs: dict[str, Signs] = {}  # by repo prefix
        self._scanned: dict[str, str] = {}  # lines rg printed, as the scanner masks them
        self._shown_cache: dict[tuple[str, int], str | None] = {}
        # rows already shown to the model by path (search results, reads): a search does not
        # print a long body again
        self.shown_rows: dict[str, set[int]] = {}
        self.tools: dict[str, Tool] = {
            t.name: t
            for t in (
                Tool(
                    "search_code",
                    SEARCH_DESCRIPTION,
                    {
                        "type": "object",
                        "properties": {
                            "pattern": {
                                "type": "string",
                                "description": "Regular expression.",
                                "maxLength": PATTERN_MAX_CHARS,
                            },
                            "glob": {
                                "type": "string",
                                "description": "Optional file filter, e.g. '*.py' or '!*test*'.",
                                "maxLength": GLOB_MAX_CHARS,
                            },
                            "path": {
                                "type": "string",
                                "description": "Optional directory or file to search in.",
                                "maxLength": PATH_MAX_CHARS,
                            },
                        },
                        "required": ["pattern"],
                        "additionalProperties": False,
                    },
                    self._search_code,
                ),
                Tool(
                    "read_file",
                    READ_DESCRIPTION,
                    {
                        "type": "object",
                        "properties": {
                            "path": {"type": "string", "maxLength": PATH_MAX_CHARS},
                            "start_line": {
                                "type": "integer",
                                "minimum": 1,
                                "maximum": LINE_NUMBER_MAX,
                            },
                            "end_line": {
                                "type": "integer",
                                "minimum": 1,
                                "maximum": LINE_NUMBER_MAX,
                            },
                        },
                        "required": ["path"],
                        "additionalProperties": False,
                    },
                    self._read_file,
                ),
                Tool(
                    "list_files",
                    LIST_DESCRIPTION,
                    {
                        "type": "object",
                        "properties": {
                            "glob": {"type": "string", "maxLength": GLOB_MAX_CHARS},
                            "path": {
                                "type": "string",
                                "description": "Directory to list.",
                                "maxLength": PATH_MAX_CHARS,
                            },
                        },
                        "additionalProperties": False,
                    },
                    self._list_files,
                ),
            )
        }

        if len(snapshot.parts) > 1:
            self._add_repo_argument(list(snapshot.parts))

    def _add_repo_argument(self, names: list[str]) -> None:
        """With several repos, the tools say so and take an optional `repo` to stay inside one."""
        note = (
            " Several repositories are searched together; each is a top-level directory named "
            f"after it ({', '.join(n + '/' for n in names)}), and every path starts with it."
        )
        for name in ("search_code", "list_files"):
            tool = self.tools[name]
            tool.description += note
            tool.schema["properties"]["repo"] = {
                "type": "string",
                "enum": names,
                "description": "Optional: only this repository.",
            }
        self.tools["read_file"].description += note

    # -- the one entry point -------------------------------------------------------------------

    def definitions(self) -> list[dict[str, Any]]:
        return [t.definition() for t in self.tools.values()]

    @property
    def redactions(self) -> dict[str, int]:
        return dict(self.gate.totals)

    def run(self, name: Any, args: Any) -> ToolResult:
        """Run a tool by name. This is the boundary between the model and the tools: whatever
        comes in (any name, any arguments of any type), an error result comes back that the
        model can act on, never an exception. Expected failures say what to change; anything
        else is logged with its type and reported as a fault of codeask's."""
        started = time.monotonic()
        is_error = False
        shown_args: dict[str, Any] = {}
        tool_name = name if isinstance(name, str) else repr(name)
        try:
            tool = self.tools.get(name) if isinstance(name, str) else None
            if tool is None:
                raise ToolRefused(
                    f"unknown tool {_show(name)}; the tools are {', '.join(self.tools)}"
                )
            shown_args = check_args(tool, args)
            raw = self._call(tool, shown_args)
        except CodeaskError as e:  # ToolRefused and every other expected failure
            raw, is_error = f"Error: {public(str(e), self._roots())}", True
        except Exception as e:  # noqa: BLE001 - the boundary: one bad call never ends an answer
            logger.exception(
                "tool failed", extra={"tool": tool_name[:40], "error": type(e).__name__}
            )
            raw, is_error = (
                f"Error: {display_path(tool_name[:40])} failed inside codeask ({type(e).__name__}); "
                "that is a fault of the tool, not of your arguments. Try another way to the same "
                "answer (another search, path or line range).",
                True,
            )
        redaction = self.gate.apply(_plain_text(raw))
        elapsed = (time.monotonic() - started) * 1000
        summary = _summary(tool_name, shown_args)
        self.calls.append(
            ToolCall(tool_name[:60], shown_args, is_error or redaction.withheld, elapsed,
                     len(redaction.text), summary)
        )  # fmt: skip
        self.notify(f"{summary}{' (error)' if is_error else ''} [{elapsed:.0f} ms]")
        return ToolResult(redaction.text, is_error or redaction.withheld)

    def _roots(self) -> dict[str, str]:
        """Where each repo's tree lies on this machine, and how the model names it: an error
        that carries such a path shows it as the model's own, relative to the repo."""
        parts = self.snapshot.parts
        if len(parts) == 1:
            return {str(s.root): "" for s in parts.values()}
        return {str(s.root): f"{name}/" for name, s in parts.items()}

    def _call(self, tool: Tool, args: dict[str, Any]) -> str:
        """Run the tool in its own thread within its deadline; loops inside check it too."""
        deadline = time.monotonic() + self.timeout_s

        def work() -> str:
            _DEADLINE.set(deadline)
            return tool.run(args)

        try:
            return within(work, self.timeout_s, f"codeask-{tool.name}")
        except TimeoutError:
            raise ToolTimeout(
                f"{tool.name} ran out of time after {self.timeout_s:g} s; narrow it (a path, a "
                "glob, a more specific pattern, a smaller line range)"
            ) from None
        except Aborted as e:
            raise RuntimeError(f"the tool's thread ended with {e.type_name}") from None

    def notify(self, message: str) -> None:
        """Progress for whoever watches (stderr on a terminal, the Slack status in the worker)."""
        if self.on_event is not None:
            self.on_event(message)

    # -- file access shared by the tools ---------------------------------------------------------

    def lines(self, rel: str) -> list[str] | None:
        """A text file's lines with the secrets only the whole file shows masked (mask_file), or
        None for a binary file or one too large to load whole; every slice the tools show is cut
        from these."""
        if rel in self._lines_cache:
            return self._lines_cache[rel]
        return self._masked(rel, self._text_bytes(rel))

    def _masked(self, rel: str, data: bytes | None) -> list[str] | None:
        out = None if data is None else mask_file(clean_lines(data), rel)[0]
        self._lines_cache[rel] = out
        return out

    def _text_bytes(self, rel: str) -> bytes | None:
        """A file's bytes, or None for a binary file or one too large to load whole (read_file
        streams a window of it)."""
        _, real = self.snapshot.resolve(rel)
        with open(real, "rb") as f:
            if os.fstat(f.fileno()).st_size > self.large_file_bytes:
                return None
            data = f.read()
        return None if b"\x00" in data[:BINARY_SNIFF] else data

    def _judged_lines(self, rel: str) -> list[str] | None:
        """The lines a search judges its hits on before the scanner: `lines`, or a file's own
        lines when it stands alone (unmasked.stands_alone: masking it whole would add nothing
        to the scanner's line by line). A search may hit thousands of files; this spares most
        of them the whole-file masking."""
        if rel in self._lines_cache:
            return self._lines_cache[rel]
        if rel not in self._alone_cache:
            data = self._text_bytes(rel)
            text = None if data is None else clean_whole(data)
            if text is None or not stands_alone(text, rel):
                return self._masked(rel, data)
            self._alone_cache[rel] = split_lines(text)
        return self._alone_cache[rel]

    def shown_line(self, rel: str, line: int) -> str | None:
        """Line `line` (from 1) of a file as the redaction gate lets it be seen (the whole-file
        masking where it can matter, then the gate's scanner), or None when it cannot be read."""
        key = (rel, line)
        if key in self._shown_cache:
            return self._shown_cache[key]
        out = None
        try:
            lines = self._judged_lines(rel)
            if (
                lines is None
            ):  # too large to load whole (or binary): its window, as read_file masks it
                _, real = self.snapshot.resolve(rel)
                lines = (
                    []
                    if is_binary(real)
                    else read_window(real, rel, line, 1, check=_search_deadline).lines
                )
                line = 1
            if 0 < line <= len(lines):
                shown: str | None = lines[line - 1]
                if lines is self._alone_cache.get(rel) and not line_alone(lines[line - 1]):
                    whole = self.lines(rel)  # maybe data, as a string's line: the file decides
                    shown = whole[line - 1] if whole is not None else None
                out = None if shown is None else scan(shown)[0]
        except Exception:  # noqa: BLE001 - a line that cannot be judged hides its match
            out = None
        self._shown_cache[key] = out
        return out

    def _hider(self, part: Snapshot, prefix: str) -> Hider:
        """What a search drops: matches only inside a secret the gate masks (unmasked.py), for
        paths of the repo `part` under `prefix`. A match in a file that stands alone is judged
        on its line as rg printed it (unmasked.Signs); any other on the file read (and masked
        whole unless it stands alone)."""
        signs = self._signs.get(prefix)
        if signs is None:
            signs = self._signs[prefix] = Signs(self.rg, part.root, self.search_timeout_s)
        admitted: set[str] = set()  # the search's runs meet the same files again

        def masked_line(m: RawMatch) -> str | None:
            if not signs.alone(m):
                return self.shown_line(prefix + m.path, m.line)
            if m.path not in admitted:
                try:
                    part.normalise(m.path)  # the deny-list and the scope, as reading it would
                except ToolRefused:
                    return None
                admitted.add(m.path)
            # The scanner is a function of the line alone, and a flood repeats lines (a licence
            # header's in every file).
            shown = self._scanned.get(m.text)
            if shown is None:
                shown = self._scanned[m.text] = scan(m.text)[0]
            return shown

        return hider(masked_line, signs.sort)

    # -- search_code -----------------------------------------------------------------------------

    def _search_code(self, args: dict[str, Any]) -> str:
        pattern = args["pattern"]
        if not pattern:
            raise ToolRefused("pattern is empty; give a regular expression to search for")
        try:
            pattern, note = per_line(pattern)
        except ValueError as e:
            raise ToolRefused(str(e)) from None
        outcome = self.search_outcome(
            pattern, glob=args.get("glob") or None, path=_in_repo(args) or None
        )
        self.searches.append(outcome.describe())
        text = self.render_search(outcome)
        return f"{note}\n{text}" if note else text

    def search_outcome(
        self,
        pattern: str,
        *,
        glob: str | None = None,
        path: str | None = None,
        max_matches: int = RAW_MATCH_CAP,
        stable: bool = False,
    ) -> SearchOutcome:
        """One search over the snapshot, or over every repo of a workspace at once, merged."""
        snap = self.snapshot
        if len(snap.parts) == 1:
            return search(snap, self.rg, pattern, glob=glob, path=path, stable=stable,
                          timeout_s=self.search_timeout_s, max_matches=max_matches,
                          max_filesize=self.large_file_bytes, hide=self._hider(snap, ""))  # fmt: skip
        targets: list[tuple[Snapshot, str | None]] = [(p, None) for p in snap.parts.values()]
        rel = snap.normalise(path) if path else ""
        if rel:
            part, rest = snap.locate(rel)
            targets = [(part, rest or None)]

        def one(target: tuple[Snapshot, str | None]) -> SearchOutcome:
            part, inner = target
            return search(part, self.rg, pattern, glob=_glob_in(glob, part.repo.name), path=inner,
                          stable=stable, timeout_s=self.search_timeout_s,
                          max_matches=max_matches, max_filesize=self.large_file_bytes,
                          hide=self._hider(part, f"{part.repo.name}/"))  # fmt: skip

        with ThreadPoolExecutor(max_workers=min(4, len(targets))) as pool:
            outcomes = list(pool.map(one, targets))
        files: list[FileHits] = []
        large: list[LargeFile] = []
        for (part, _), o in zip(targets, outcomes, strict=True):
            for fh in o.files:
                fh.path = f"{part.repo.name}/{fh.path}"
                files.append(fh)
            for big in o.large:
                big.path = f"{part.repo.name}/{big.path}"
                large.append(big)
        files.sort(key=lambda f: (-f.score, f.path))
        first = outcomes[0]
        counts = [sum(c) for c in zip(*(o.alternative_counts for o in outcomes), strict=True)]
        repos = [part.repo.name for part, _ in targets]
        return SearchOutcome(
            pattern=pattern,
            glob=glob,
            path=rel or None,
            files=files,
            total_matches=sum(o.total_matches for o in outcomes),
            stopped_early=any(o.stopped_early for o in outcomes),
            timed_out=any(o.timed_out for o in outcomes),
            elapsed_ms=max(o.elapsed_ms for o in outcomes),
            path_is_file=len(outcomes) == 1 and first.path_is_file,
            ignore_case=first.ignore_case,
            case_differs=sum(o.case_differs for o in outcomes),
            alternatives=first.alternatives,
            alternative_counts=counts,
            plain_words=first.plain_words,
            large=large,
            size_limit=self.large_file_bytes,
            outside=elsewhere.merged(list(zip(repos, (o.outside for o in outcomes), strict=True))),
            near_misses=[]
            if files
            else elsewhere.merged_words(repos, [o.near_misses for o in outcomes]),
            lookup=elsewhere.joined(list(zip(repos, (o.lookup for o in outcomes), strict=True))),
        )

    def render_search(self, o: SearchOutcome) -> str:
        where = o.describe()
        if o.timed_out and not o.files:
            return (
                f"Search {where} timed out after {self.search_timeout_s:g} s with no matches; "
                "narrow it with glob or path, or a more specific pattern."
            )
        large = o.large_note()
        if not o.files:
            return no_matches(o)
        text = render(o, FileSource(self.lines, self._syntax_key, self.shown_rows))
        return f"{text}\n\n{large}" if large else text

    def _syntax_key(self, rel: str) -> tuple[str, str]:
        """Parses are cached per snapshot file: snapshots never change under a path."""
        part, inner = self.snapshot.locate(rel)
        return str(part.root), inner

    # -- read_file -------------------------------------------------------------------------------

    def _read_file(self, args: dict[str, Any]) -> str:
        rel, real = self.snapshot.resolve(args["path"])
        shown = display_path(rel)
        if not rel or real.is_dir():
            raise ToolRefused(
                f"'{display_path(args['path'])}' is a directory; use list_files to see what is in it"
            )
        if not real.is_file():
            raise ToolRefused(
                f"no file '{shown}' at {self.snapshot.short_sha}; use list_files or search_code "
                "to find the right path"
            )
        start = args.get("start_line", 1)
        end = args.get("end_line")
        if end is not None and end < start:
            raise ToolRefused(f"end_line {end} is before start_line {start}")
        size = real.stat().st_size
        if size > self.large_file_bytes:
            return self._read_large(rel, real, size, start, end)
        lines = self.lines(rel)
        if lines is None:
            raise ToolRefused(f"'{shown}' is a binary file; it cannot be shown as text")
        return self._numbered(rel, lines, len(lines), start, end, 1)

    def _read_large(self, rel: str, real: Any, size: int, start: int, end: int | None) -> str:
        """A file too big to load whole: one streamed pass for the wanted lines and the lines
        around them, masked together (filewindow says what that keeps of whole-file masking)."""
        if is_binary(real):
            raise ToolRefused(f"'{display_path(rel)}' is a binary file; it cannot be shown as text")
        count = READ_MAX_LINES if end is None else min(READ_MAX_LINES, end - start + 1)
        window = read_window(real, rel, start, count, check=lambda: check_deadline("read_file"))
        note = f" (a large file, {size / 1024 / 1024:.0f} MB, read a window at a time)"
        return self._numbered(rel, window.lines, window.total, start, end, start, note)

    def _numbered(
        self, rel: str, lines: list[str], total: int, start: int, end: int | None, first: int,
        note: str = "",
    ) -> str:  # fmt: skip
        """Lines start..end (lines[0] is line `first`) with numbers, a header and a footer."""
        shown = display_path(rel)
        if total == 0:
            return f"{shown} is empty (0 lines) at {self.snapshot.short_sha}."
        if start > total:
            raise ToolRefused(f"{shown} has {total} lines; start_line {start} is past the end")
        wanted_end = total if end is None else min(end, total)
        end = min(wanted_end, start + READ_MAX_LINES - 1)
        width = len(str(end))
        body: list[str] = []
        size = 0
        last = start - 1
        for n in range(start, end + 1):
            row = f"{n:>{width}}  {_clip(lines[n - first])}"
            if size + len(row) > READ_MAX_CHARS and body:
                break
            body.append(row)
            size += len(row) + 1
            last = n
        sha = self.snapshot.locate(rel)[0].short_sha
        self.shown_rows.setdefault(rel, set()).update(range(start, last + 1))
        head = f"{shown} lines {start}-{last} of {total} at {sha}{note}"
        foot = ""
        if last < wanted_end:
            foot = f"\n[… {total - last} more lines; continue with start_line={last + 1}]"
        return head + "\n" + "\n".join(body) + foot

    # -- list_files ------------------------------------------------------------------------------

    def _list_files(self, args: dict[str, Any]) -> str:
        rel = ""
        where_arg = _in_repo(args)
        if where_arg:
            rel, real = self.snapshot.resolve(where_arg)
            if rel and rel in self.snapshot.file_set:
                return f"{display_path(rel)} is a file ({self.snapshot.line_count(rel)} lines)."
            if rel and rel not in self.snapshot.dir_set:
                raise ToolRefused(
                    f"no directory '{display_path(rel)}' at {self.snapshot.short_sha}"
                )
        prefix = rel + "/" if rel else ""
        every = [f for f in self.snapshot.files if f.startswith(prefix)]
        files = every
        check_deadline("list_files")
        glob = args.get("glob")
        dirs = ""
        if glob:
            try:
                # The glob as search_code's rg reads it, also from `path` when it names a directory.
                globs = rg_globs(glob, rel or None)
                files = select(globs, every)
                dirs = _matching_dirs(globs, self.snapshot.dir_set, prefix, every)
            except GlobError as e:
                raise ToolRefused(f"bad glob '{display_path(glob)}': {e}") from None
        check_deadline("list_files")
        where = f"under {display_path(rel)}/" if rel else "in the repository"
        what = f" matching '{display_path(glob)}'" if glob else ""
        if not files:
            return f"No files {where}{what} at {self.snapshot.short_sha}." + dirs
        head = f"{_count(len(files), 'file')} {where}{what} at {self.snapshot.short_sha}"
        if len(files) <= LIST_MAX_ENTRIES:
            return head + ":\n" + "\n".join(map(display_path, files)) + dirs
        return head + "; too many to list, so by directory:\n" + _summarise(files, prefix) + dirs


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _matching_dirs(globs: list[str], dir_set: frozenset[str], prefix: str, files: list[str]) -> str:
    """Directories whose own name the glob matches (`*postgresql*` names the chart's folder,
    not only its files), with their file counts, as lines to add to a listing."""
    if all(g.startswith("!") for g in globs):
        return ""
    under = sorted(d for d in dir_set if d.startswith(prefix) and d != prefix.rstrip("/"))
    matched = [d for d in select(globs, under)]
    matched = [d for d in matched if not any(d.startswith(m + "/") for m in matched)]
    if not matched:
        return ""
    counts = Counter(d for f in files for d in matched if f.startswith(d + "/"))
    rows = [f"{display_path(d)}/ ({_count(counts[d], 'file')})" for d in matched[:LIST_DIRS]]
    more = f"\n[… {len(matched) - LIST_DIRS} more directories]" if len(matched) > LIST_DIRS else ""
    return f"\nDirectories whose name matches ({len(matched)}):\n" + "\n".join(rows) + more


def _summarise(files: list[str], prefix: str) -> str:
    """The loose files at the top level (README, LICENSE), then directory counts, deep enough
    to fit the cap."""
    depth = 1
    best: list[str] = []
    while depth < 8:
        counts: Counter[str] = Counter()
        loose: list[str] = []
        for f in files:
            parts = f[len(prefix) :].split("/")
            if len(parts) > depth:
                counts[prefix + "/".join(parts[:depth]) + "/"] += 1
            else:
                loose.append(f)
        check_deadline("list_files")
        rows = list(map(display_path, loose))
        rows += [f"{display_path(d)} ({_count(c, 'file')})" for d, c in sorted(counts.items())]
        if len(rows) > LIST_MAX_ENTRIES:
            break
        best = rows
        if len(rows) == len(files):
            break
        depth += 1
    if not best:
        best = rows[:LIST_MAX_ENTRIES] + [f"[… {len(rows) - LIST_MAX_ENTRIES} more entries]"]
    return "\n".join(best) + "\nNarrow with path or glob to see individual files."


def _glob_in(glob: str | None, repo: str) -> str | None:
    """A workspace glob as one repo sees it: `billing/src/**` is `src/**` inside billing."""
    if not glob:
        return glob
    negative = glob.startswith("!")
    body = glob[1:] if negative else glob
    if body.startswith(repo + "/"):
        return ("!" if negative else "") + body[len(repo) + 1 :]
    return glob


def _in_repo(args: dict[str, Any]) -> str:
    """`path` joined under `repo` when the model names one (workspaces of several repos)."""
    path = str(args.get("path") or "")
    repo = args.get("repo")
    if repo:
        return f"{repo}/{path}" if path else str(repo)
    return path


def _summary(name: str, args: dict[str, Any]) -> str:
    """One line for progress and logs, every argument shown escaped and cut short."""

    def arg(key: str) -> str:
        value = args.get(key)
        return _show(value, quote=False) if value is not None else ""

    if name == "search_code":
        s = f"search `{arg('pattern')}`"
        if args.get("glob"):
            s += f" in {arg('glob')}"
        if args.get("path"):
            s += f" under {arg('path')}"
        return s
    if name == "read_file":
        s = f"read {arg('path')}"
        if args.get("start_line") or args.get("end_line"):
            s += f":{args.get('start_line') or 1}-{args.get('end_line') or ''}"
        return s
    if name == "list_files":
        return f"list {arg('path') or '.'} {arg('glob')}".rstrip()
    return _show(name, quote=False)


def _show(value: Any, *, quote: bool = True, limit: int = 80) -> str:
    """Any value from a model, safe to put in a message: escaped, cut short, never converted
    whole (a 5,000-digit number would raise on the way to a string)."""
    if isinstance(value, bool) or value is None:
        return json_word(value)
    if isinstance(value, int):
        if value.bit_length() > 64:
            digits = int(value.bit_length() * math.log10(2)) + 1
            return f"a number with about {digits} digits"
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        text = display_path(value[:limit]) + ("…" if len(value) > limit else "")
        return f"'{text}'" if quote else text
    return f"a {type(value).__name__}"


def json_word(value: bool | None) -> str:
    return "null" if value is None else ("true" if value else "false")


_ASCII_NUMBER = re.compile(r"[0-9]{1,10}")


def check_args(tool: Tool, args: Any) -> dict[str, Any]:
    """The tool's arguments checked against its JSON schema, as a new dict; ToolRefused saying
    what to change for anything else. A null is an absent argument; an integer may come as a
    whole float (3.0) or a plain decimal string ("12"), and nothing else ("²", "1e3", " 7 ")."""
    schema = tool.schema
    props: dict[str, Any] = schema.get("properties", {})
    if not isinstance(args, dict):
        raise ToolRefused(
            f"{tool.name} takes its arguments as a JSON object of {', '.join(props)}; got {_show(args)}"
        )
    for key in args:
        if key not in props:
            raise ToolRefused(
                f"{tool.name} has no argument {_show(key)}; it takes {', '.join(props)}"
            )
    clean: dict[str, Any] = {}
    for key, value in args.items():
        if value is not None:
            clean[key] = _check_value(key, props[key], value)
    for key in schema.get("required", []):
        if key not in clean:
            raise ToolRefused(f"{tool.name} needs {key!r}")
    return clean


def _check_value(key: str, spec: dict[str, Any], value: Any) -> Any:
    if spec["type"] == "integer":
        return _check_integer(key, spec, value)
    if not isinstance(value, str):
        raise ToolRefused(f"{key} must be a string, got {_show(value)}")
    if "\x00" in value:
        raise ToolRefused(f"{key} contains a NUL byte; remove it")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolRefused(
            f"{key} contains a lone surrogate (half of a UTF-16 pair), which is not text; remove it"
        ) from None
    limit = spec.get("maxLength")
    if limit is not None and len(value) > limit:
        raise ToolRefused(f"{key} is {len(value)} characters long; at most {limit} are accepted")
    if "enum" in spec and value not in spec["enum"]:
        raise ToolRefused(f"{key} must be one of {', '.join(spec['enum'])}; got {_show(value)}")
    return value


def _check_integer(key: str, spec: dict[str, Any], value: Any) -> int:
    low, high = spec.get("minimum"), spec.get("maximum")
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and _ASCII_NUMBER.fullmatch(value):
        number = int(value)
    if number is None:
        raise ToolRefused(f"{key} must be a whole number, like 120; got {_show(value)}")
    if low is not None and number < low:
        raise ToolRefused(
            f"{key} must be at least {low} (line numbers start at 1); got {_show(number)}"
        )
    if high is not None and number > high:
        raise ToolRefused(f"{key} must be at most {high}; got {_show(number)}")
    return number


def _plain_text(text: str) -> str:
    """A result as valid UTF-8 text: a lone surrogate that slipped through becomes an escape."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
