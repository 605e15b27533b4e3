"""The `codeask` command line: ask a question, run one tool, or verify an answer, on a terminal."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from codeask.errors import BadInput, CodeaskError, first_line


def _progress(msg: str) -> None:
    print(f"· {msg}", file=sys.stderr, flush=True)


class _Terminal:
    """Prints the answer as it is written: only what is settled, each path checked first, and
    an unverified one followed by its mark (holdback.marked), exactly as in the final text."""

    def __init__(self) -> None:
        self.printed = ""

    def show(self, settled: Any) -> None:
        from codeask.holdback import marked

        text = marked(settled.text, settled.verification, settled.marks)
        if text.startswith(self.printed):
            sys.stdout.write(text[len(self.printed) :])
            sys.stdout.flush()
            self.printed = text


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="codeask",
        description="Answer 'where is / how does' questions about a git repository, with verified citations.",
    )
    sub = p.add_subparsers(dest="command", required=True)

    ask = sub.add_parser("ask", help="ask a question about a repository")
    ask.add_argument("question", help="the question, in quotes")
    ask.add_argument("--repo", action="append", help="local path or git URL (default: .)")
    ask.add_argument("--branch", help="branch to read (default: the remote's default branch)")
    ask.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    ask.add_argument("--quiet", action="store_true", help="no progress on stderr")
    ask.add_argument(
        "--deadline",
        type=float,
        metavar="SECONDS",
        help="wall-clock budget for the answer (default: CODEASK_DEADLINE_S, else 300)",
    )

    tool = sub.add_parser(
        "tool", help="run one tool and print exactly what the model would receive"
    )
    tool.add_argument("name", help="search_code, read_file or list_files")
    tool.add_argument("args", nargs="?", default="{}", help="the tool's arguments as JSON")
    tool.add_argument("--repo", default=".", help="local path or git URL (default: .)")
    tool.add_argument("--branch")

    ev = sub.add_parser(
        "eval",
        help="run questions with known answers and score the citations",
        description="Run questions with known answers and score the citations. Every case's "
        "result and the summary are printed whatever happens. Exit 0 when every case ran (a "
        "miss is a measurement, not a failure), 1 when any case errored (its repository could "
        "not be synced, or it raised), 2 for a bad case file or option.",
    )
    ev.add_argument("cases", help="JSONL: {id, repo, question, expected: [{path, line?}]} per line")
    ev.add_argument(
        "--repo",
        action="append",
        default=[],
        metavar="NAME=PATH_OR_URL",
        help="where a case's repo name lives (else CODEASK_CONFIG, else the name is a path/URL)",
    )
    ev.add_argument("--json", action="store_true", help="one JSON result per case, then a summary")

    fb = sub.add_parser("feedback", help="what people said about answers (👍/👎)")
    fb_sub = fb.add_subparsers(dest="feedback_command", required=True)
    exp = fb_sub.add_parser("export", help="write the 👎 answers as evaluation cases (JSONL)")
    exp.add_argument("--out", default="-", help="file to write (default: stdout)")

    sub.add_parser(
        "doctor",
        help="check a configuration end to end: settings, secrets, Slack, repos, model, AWS",
    )

    ver = sub.add_parser("verify", help="verify the paths an answer (on stdin) cites")
    ver.add_argument("--repo", default=".", help="local path or git URL (default: .)")
    ver.add_argument("--branch")
    ver.add_argument("--json", action="store_true")
    return p


def _logs_to_stderr() -> None:
    """The engine logs through powertools, which writes to stdout for Lambda; on a terminal
    stdout is the command's output (`tool` prints exactly what the model reads), so logs go to
    stderr."""
    import logging

    import codeask.ops  # noqa: F401 - makes the powertools logger, whose handler is moved

    for handler in logging.getLogger("codeask").handlers:
        if isinstance(handler, logging.StreamHandler):
            handler.setStream(sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    # `codeask tool NAME --repo R 'JSON'`: argparse leaves a positional after an option unclaimed.
    if args.command == "tool" and args.args == "{}" and len(extra) == 1:
        args.args = extra.pop()
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        if args.command == "ask":
            return _ask(args)
        if args.command == "tool":
            _logs_to_stderr()
            return _tool(args)
        if args.command == "eval":
            return _eval(args)
        if args.command == "feedback":
            return _feedback_export(args)
        if args.command == "doctor":
            from codeask.doctor import run_doctor

            return run_doctor(out=lambda line: print(line, flush=True))
        return _verify(args)
    except CodeaskError as e:
        print(f"codeask: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `codeask ask … | head`: the reader left; say nothing more, and do not trace back.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _spec(repo: str, branch: str | None) -> Any:
    from codeask.mirror import RepoSpec

    return RepoSpec.parse(repo, branch=branch)


def _store(settings: Any) -> Any:
    """The mirrors and snapshots, telling stderr about damage they found and rebuilt."""
    from codeask.mirror import MirrorStore

    return MirrorStore.from_settings(
        settings, on_repair=lambda r: print(f"⚠️ {r.message()}", file=sys.stderr, flush=True)
    )


def _say_uncommitted(synced: Any) -> None:
    """On stderr, so that stdout stays exactly what the tool or check produced."""
    if synced.uncommitted is not None:
        print(f"⚠️ {synced.uncommitted.message()}", file=sys.stderr)


def _ask(args: argparse.Namespace) -> int:
    from codeask.answer import ask
    from codeask.pathdisplay import display_path
    from codeask.settings import Settings

    repos = args.repo or ["."]
    if not args.question.strip():
        raise BadInput("the question is empty")
    settings = Settings.from_env()
    if args.deadline is not None and args.deadline <= 0:
        raise BadInput("--deadline must be a positive number of seconds")
    started = time.monotonic()
    specs = [_spec(r, args.branch) for r in repos]
    if len({s.name for s in specs}) < len(specs):
        raise BadInput("two --repo values have the same name; give repos with distinct names")
    terminal = None if args.json else _Terminal()
    ans = ask(
        args.question,
        specs,
        settings,
        store=_store(settings),
        on_event=None if args.quiet else _progress,
        deadline=started + args.deadline if args.deadline else None,
        sink=terminal,
    )
    if args.json:
        print(json.dumps(ans.to_json(), indent=2, ensure_ascii=False))
        return 0
    if terminal is not None and terminal.printed:
        print()  # the answer streamed; end its last line
    else:
        from codeask.holdback import marked

        print(marked(ans.text, ans.verification))
    if ans.warning:
        print("\n" + ans.warning)
    cites = ans.verification.citations
    if cites:
        print("\nCitations:")
        for m in cites:
            where = display_path(m.path) + (f":{m.start_line}" if m.start_line else "")
            if m.end_line and m.end_line != m.start_line:
                where += f"-{m.end_line}"
            print(f"  {where}" + (f"  {m.url}" if m.url else ""))
    where = ", ".join(f"{name}@{snap.short_sha}" for name, snap in ans.snapshot.parts.items())
    footer = f"\n{where} ({ans.branch}) · {ans.mode}"
    footer += f" · {ans.tool_calls} tool calls · {ans.timings_ms['total'] / 1000:.1f} s"
    if not ans.search_only:
        footer += f" · ${ans.usage['cost_usd']:.3f}"
    print(footer)
    if ans.stale:
        print(f"⚠️ {ans.stale.message()}")
    for note in ans.uncommitted:
        print(f"⚠️ {note.message()}")
    return 0


def _tool(args: argparse.Namespace) -> int:
    from codeask.settings import Settings
    from codeask.tools import Toolbox

    try:
        tool_args = json.loads(args.args)
    except (
        ValueError,
        RecursionError,
    ) as e:  # bad JSON, a number past Python's digit limit, deep nesting
        raise BadInput(f"tool arguments must be a JSON object: {first_line(e)}") from None
    if not isinstance(tool_args, dict):
        raise BadInput('tool arguments must be a JSON object, e.g. \'{"pattern": "retry"}\'')
    settings = Settings.from_env()
    synced = _store(settings).sync(_spec(args.repo, args.branch))
    _say_uncommitted(synced)
    toolbox = Toolbox(
        synced.snapshot, rg_path=settings.rg_path, search_timeout_s=settings.search_timeout_s
    )
    if args.name not in toolbox.tools:
        raise BadInput(f"unknown tool {args.name!r}; the tools are {', '.join(toolbox.tools)}")
    result = toolbox.run(args.name, tool_args)
    print(result.text)
    return 1 if result.is_error else 0


def _eval(args: argparse.Namespace) -> int:
    from pathlib import Path

    from codeask import evaluate
    from codeask.settings import Settings

    repos: dict[str, str] = {}
    for item in args.repo:
        name, sep, where = item.partition("=")
        if not sep or not name or not where:
            raise BadInput(f"--repo takes NAME=PATH_OR_URL, got {item!r}")
        repos[name] = where
    cases = evaluate.load_cases(Path(args.cases))
    emit = evaluate.as_json if args.json else evaluate.line_for
    results = evaluate.run_eval(
        cases, Settings.from_env(), repos=repos, on_result=lambda r: print(emit(r), flush=True)
    )
    summary = evaluate.summarise(results)
    if args.json:
        print(json.dumps({"summary": summary}))
    else:
        print(
            f"\n{summary['cases']} cases ({', '.join(summary['modes'])}): "
            f"{summary['hit_rate']:.0%} hit the expected location, "
            f"{summary['top3_rate']:.0%} had the right file in the top 3, "
            f"{summary['invented_paths']} invented paths, "
            f"{summary['mean_tool_calls']:.1f} tool calls and {summary['mean_seconds']:.1f} s per case, "
            f"{summary['total_tokens']} tokens"
            + (f", {summary['errors']} errors" if summary["errors"] else "")
        )
    # A case that could not run measured nothing: the run is incomplete, whatever the rates say.
    return 1 if summary["errors"] else 0


def _feedback_export(args: argparse.Namespace) -> int:
    from codeask import clients
    from codeask.feedback import export_cases
    from codeask.settings import Settings
    from codeask.state import StateStore

    settings = Settings.from_env()
    if not settings.table_name:
        raise BadInput("TABLE_NAME is not set: name the deployed stack's StateTableName output")
    if settings.bot_config is None:
        raise BadInput(
            "CODEASK_CONFIG is not set: it says which repos each channel may still read, and an "
            "answer is exported only while its channel may read them"
        )
    rows = export_cases(
        StateStore(settings.table_name, clients.aws("dynamodb")).votes(), settings.bot_config
    )
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    if args.out == "-":
        sys.stdout.write(text)
    else:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"{len(rows)} 👎 cases written to {args.out}", file=sys.stderr)
    return 0


def _verify(args: argparse.Namespace) -> int:
    from codeask.settings import Settings
    from codeask.verify import verify_answer, warning_text

    text = sys.stdin.read()
    settings = Settings.from_env()
    synced = _store(settings).sync(_spec(args.repo, args.branch))
    _say_uncommitted(synced)
    v = verify_answer(text, synced.snapshot)
    if args.json:
        print(json.dumps({
            "sha": synced.sha,
            "ok": v.ok,
            "mentions": [
                {"text": m.text, "path": m.path, "start_line": m.start_line, "end_line": m.end_line,
                 "verified": m.verified, "reason": m.reason, "url": m.url}
                for m in v.mentions
            ],
        }, indent=2, ensure_ascii=False))  # fmt: skip
    else:
        for m in v.mentions:
            mark = "✓" if m.verified else "✗"
            print(
                f"{mark} {m.text}"
                + (f"  — {m.reason}" if m.reason else "")
                + (f"  {m.url}" if m.url else "")
            )
        warn = warning_text(v, [])
        print(warn if warn else f"All {len(v.mentions)} references verified at {synced.sha[:7]}.")
    return 0 if v.ok else 1


if __name__ == "__main__":
    sys.exit(main())
