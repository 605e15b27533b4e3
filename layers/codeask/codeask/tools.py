"""The read-only tools the model drives (search_code, read_file, list_files), all behind one redaction gate."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from codeask.errors import CodeaskError, ToolRefused
from codeask.pathglob import compile_glob
from codeask.redact import RedactionGate, mask_file
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
from codeask.search.ripgrep import clean_text, find_rg
from codeask.snapshot import Snapshot

# Caps: what one tool result may cost the model. Tuned so a result fits a round without crowding it.
SEARCH_MAX_CHARS = BUDGET  # codeask.search.layout says why
READ_MAX_LINES = 300
READ_MAX_CHARS = 24000
LINE_MAX_CHARS = 400
LIST_MAX_ENTRIES = 200
BINARY_SNIFF = 8000


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
    "In an alternation ('send_request|RetryPolicy') every alternative gets its share. Narrow with "
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
    ) -> None:
        self.snapshot = snapshot
        self.on_event = on_event
        self.gate = gate or RedactionGate()
        self.rg = find_rg(rg_path)
        self.search_timeout_s = search_timeout_s
        self.calls: list[ToolCall] = []
        self.searches: list[str] = []
        self._lines_cache: dict[str, list[str] | None] = {}
        self.tools: dict[str, Tool] = {
            t.name: t
            for t in (
                Tool(
                    "search_code",
                    SEARCH_DESCRIPTION,
                    {
                        "type": "object",
                        "properties": {
                            "pattern": {"type": "string", "description": "Regular expression."},
                            "glob": {
                                "type": "string",
                                "description": "Optional file filter, e.g. '*.py' or '!*test*'.",
                            },
                            "path": {
                                "type": "string",
                                "description": "Optional directory or file to search in.",
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
                            "path": {"type": "string"},
                            "start_line": {"type": "integer", "minimum": 1},
                            "end_line": {"type": "integer", "minimum": 1},
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
                            "glob": {"type": "string"},
                            "path": {"type": "string", "description": "Directory to list."},
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

    def run(self, name: str, args: dict[str, Any] | None) -> ToolResult:
        """Run a tool by name; expected failures come back as error results the model can act on."""
        started = time.monotonic()
        args = args if isinstance(args, dict) else {}
        tool = self.tools.get(name)
        is_error = False
        try:
            if tool is None:
                raise ToolRefused(f"unknown tool {name!r}; the tools are {', '.join(self.tools)}")
            _check_args(tool, args)
            raw = tool.run(args)
        except CodeaskError as e:  # ToolRefused and every other expected failure
            raw, is_error = f"Error: {e}", True
        redaction = self.gate.apply(raw)
        elapsed = (time.monotonic() - started) * 1000
        self.calls.append(
            ToolCall(name, dict(args), is_error or redaction.withheld, elapsed, len(redaction.text),
                     _summary(name, args))
        )  # fmt: skip
        self.notify(f"{_summary(name, args)}{' (error)' if is_error else ''} [{elapsed:.0f} ms]")
        return ToolResult(redaction.text, is_error or redaction.withheld)

    def notify(self, message: str) -> None:
        """Progress for whoever watches (stderr on a terminal, the Slack status in the worker)."""
        if self.on_event is not None:
            self.on_event(message)

    # -- file access shared by the tools ---------------------------------------------------------

    def lines(self, rel: str) -> list[str] | None:
        """A text file's lines with the secrets only the whole file shows masked (mask_file), or
        None for a binary file; every slice the tools show is cut from these."""
        if rel in self._lines_cache:
            return self._lines_cache[rel]
        _, real = self.snapshot.resolve(rel)
        data = real.read_bytes()
        if b"\x00" in data[:BINARY_SNIFF]:
            out = None
        else:
            raw = data.split(b"\n") if data else []
            if raw and raw[-1] == b"":
                raw.pop()
            out, _ = mask_file([clean_text(r) for r in raw], rel)
        self._lines_cache[rel] = out
        return out

    # -- search_code -----------------------------------------------------------------------------

    def _search_code(self, args: dict[str, Any]) -> str:
        pattern = args["pattern"]
        if not pattern:
            raise ToolRefused("pattern is empty; give a regular expression to search for")
        outcome = self.search_outcome(
            pattern, glob=args.get("glob") or None, path=_in_repo(args) or None
        )
        self.searches.append(outcome.describe())
        return self.render_search(outcome)

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
                          timeout_s=self.search_timeout_s, max_matches=max_matches)  # fmt: skip
        targets: list[tuple[Snapshot, str | None]] = [(p, None) for p in snap.parts.values()]
        rel = snap.normalise(path) if path else ""
        if rel:
            part, rest = snap.locate(rel)
            targets = [(part, rest or None)]

        def one(target: tuple[Snapshot, str | None]) -> SearchOutcome:
            part, inner = target
            return search(part, self.rg, pattern, glob=_glob_in(glob, part.repo.name), path=inner,
                          stable=stable, timeout_s=self.search_timeout_s,
                          max_matches=max_matches)  # fmt: skip

        with ThreadPoolExecutor(max_workers=min(4, len(targets))) as pool:
            outcomes = list(pool.map(one, targets))
        files: list[FileHits] = []
        for (part, _), o in zip(targets, outcomes, strict=True):
            for fh in o.files:
                fh.path = f"{part.repo.name}/{fh.path}"
                files.append(fh)
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
        if not o.files:
            return no_matches(o)
        return render(o, FileSource(self.lines, self._syntax_key))

    def _syntax_key(self, rel: str) -> tuple[str, str]:
        """Parses are cached per snapshot file: snapshots never change under a path."""
        part, inner = self.snapshot.locate(rel)
        return str(part.root), inner

    # -- read_file -------------------------------------------------------------------------------

    def _read_file(self, args: dict[str, Any]) -> str:
        rel, real = self.snapshot.resolve(args["path"])
        if not rel or real.is_dir():
            raise ToolRefused(
                f"{args['path']!r} is a directory; use list_files to see what is in it"
            )
        if not real.is_file():
            raise ToolRefused(
                f"no file {rel!r} at {self.snapshot.short_sha}; use list_files or search_code to "
                "find the right path"
            )
        lines = self.lines(rel)
        if lines is None:
            raise ToolRefused(f"{rel!r} is a binary file; it cannot be shown as text")
        total = len(lines)
        start = args.get("start_line")
        end = args.get("end_line")
        start = 1 if start is None else start
        if start < 1 or (end is not None and end < 1):
            raise ToolRefused("line numbers start at 1")
        if end is not None and end < start:
            raise ToolRefused(f"end_line {end} is before start_line {start}")
        if total == 0:
            return f"{rel} is empty (0 lines) at {self.snapshot.short_sha}."
        if start > total:
            raise ToolRefused(f"{rel} has {total} lines; start_line {start} is past the end")
        wanted_end = total if end is None else min(end, total)
        end = min(wanted_end, start + READ_MAX_LINES - 1)
        width = len(str(end))
        body: list[str] = []
        size = 0
        last = start - 1
        for n in range(start, end + 1):
            row = f"{n:>{width}}  {_clip(lines[n - 1])}"
            if size + len(row) > READ_MAX_CHARS and body:
                break
            body.append(row)
            size += len(row) + 1
            last = n
        head = f"{rel} lines {start}-{last} of {total} at {self.snapshot.locate(rel)[0].short_sha}"
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
                return f"{rel} is a file ({self.snapshot.line_count(rel)} lines)."
            if rel and rel not in self.snapshot.dir_set:
                raise ToolRefused(f"no directory {rel!r} at {self.snapshot.short_sha}")
        prefix = rel + "/" if rel else ""
        files = [f for f in self.snapshot.files if f.startswith(prefix)]
        glob = args.get("glob")
        if glob:
            try:
                rx = compile_glob(glob)
            except ValueError as e:
                raise ToolRefused(f"bad glob {glob!r}: {e}") from None
            files = [f for f in files if rx.match(f) or rx.match(f[len(prefix) :])]
        where = f"under {rel}/" if rel else "in the repository"
        what = f" matching {glob!r}" if glob else ""
        if not files:
            return f"No files {where}{what} at {self.snapshot.short_sha}."
        head = f"{len(files)} files {where}{what} at {self.snapshot.short_sha}"
        if len(files) <= LIST_MAX_ENTRIES:
            return head + ":\n" + "\n".join(files)
        return head + "; too many to list, so by directory:\n" + _summarise(files, prefix)


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _summarise(files: list[str], prefix: str) -> str:
    """Directory counts, deep enough to fit the cap, then the loose files at the top level."""
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
        rows = [f"{d} ({c} files)" for d, c in sorted(counts.items())] + loose
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
    if name == "search_code":
        s = f"search `{args.get('pattern', '')}`"
        if args.get("glob"):
            s += f" in {args['glob']}"
        if args.get("path"):
            s += f" under {args['path']}"
        return s
    if name == "read_file":
        s = f"read {args.get('path', '')}"
        if args.get("start_line") or args.get("end_line"):
            s += f":{args.get('start_line') or 1}-{args.get('end_line') or ''}"
        return s
    if name == "list_files":
        return f"list {args.get('path') or '.'} {args.get('glob') or ''}".rstrip()
    return name


def _check_args(tool: Tool, args: dict[str, Any]) -> None:
    """A small JSON-schema check: required keys, no unknown keys, and the declared types."""
    props = tool.schema.get("properties", {})
    for key in tool.schema.get("required", []):
        if key not in args:
            raise ToolRefused(f"{tool.name} needs {key!r}")
    for key, value in list(args.items()):
        spec = props.get(key)
        if spec is None:
            raise ToolRefused(f"{tool.name} has no argument {key!r}; it takes {', '.join(props)}")
        if value is None:
            continue
        if spec["type"] == "integer":
            if isinstance(value, str) and value.strip().lstrip("-").isdigit():
                value = args[key] = int(value)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ToolRefused(f"{key} must be a whole number, got {value!r}")
        elif spec["type"] == "string" and not isinstance(value, str):
            raise ToolRefused(f"{key} must be a string, got {value!r}")
