"""Scopes, hit kinds, key paths and context from tree-sitter, on realistic snippets of each language."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from codeask.search.filekinds import language_of
from codeask.search.patterns import Pattern
from codeask.search.syntax import FileSyntax, HitInfo, syntax_for

FIXTURES = Path(__file__).parent / "fixtures" / "search"
_parsed: dict[str, FileSyntax] = {}


def syntax(name: str) -> FileSyntax:
    if name not in _parsed:
        lines = (FIXTURES / name).read_text().splitlines()
        _parsed[name] = FileSyntax(language_of(name), lines)
    return _parsed[name]


def line_of(name: str, needle: str, nth: int = 1) -> int:
    rows = [i for i, line in enumerate(syntax(name).lines, 1) if needle in line]
    assert len(rows) >= nth, f"{needle!r} not in {name}"
    return rows[nth - 1]


def info(name: str, needle: str, pattern: str | None = None, nth: int = 1) -> HitInfo:
    row = line_of(name, needle, nth)
    spans = Pattern.smart(pattern or re.escape(needle)).spans(syntax(name).lines[row - 1])
    assert spans, f"{pattern!r} does not match line {row} of {name}"
    return syntax(name).info(row, spans)


CASES = [
    # C: every call site names its function, also under a multi-line K&R signature and deep in loops
    ("refs.c", "sleep_millisec(backoff);", "sleep_millisec", "call",
     "int lock_ref(struct ref_lock *lock, const char *refname, int timeout_ms)"),
    ("refs.c", "return read_packed_ref(refname, oid, flags);", "read_packed_ref", "call",
     "static int resolve_ref_unsafe(const char *refname, int resolve_flags, struct object_id *oid, int *flags)"),
    ("refs.c", "resolve_ref_unsafe(const char *refname,", "resolve_ref_unsafe", "definition", ""),
    ("refs.c", "if (resolve_ref_unsafe(refname", "resolve_ref_unsafe", "call",
     "int update_ref(const char *msg, const char *refname, const struct object_id *oid)"),
    ("refs.c", "struct ref_lock {", "ref_lock", "definition", ""),
    ("refs.c", "int lock_ref(struct ref_lock", "ref_lock", "reference",
     "int lock_ref(struct ref_lock *lock, const char *refname, int timeout_ms)"),
    ("refs.c", "#define REF_NAME_MAX 256", "REF_NAME_MAX", "definition", ""),
    ("refs.c", "static char sb_refname[REF_NAME_MAX];", "REF_NAME_MAX", "reference",
     "static int resolve_ref_unsafe(const char *refname, int resolve_flags, struct object_id *oid, int *flags)"),
    ("refs.c", "the ref may be packed", "packed", "comment",
     "static int resolve_ref_unsafe(const char *refname, int resolve_flags, struct object_id *oid, int *flags)"),
    ("refs.c", '#include "refs.h"', "refs", "import", ""),
    ("refs.c", "Redistribution permitted", "Redistribution", "comment", ""),
    ("refs.c", 'return error("unable to lock %s", refname);', "unable to lock", "string",
     "int update_ref(const char *msg, const char *refname, const struct object_id *oid)"),
    ("refs.c", "\tunsigned int flags;", "flags", "definition", "struct ref_lock"),
    # a glibc-style macro line without a semicolon is not part of the next function's name
    ("refs.c", 'return update_ref ("delete"', "update_ref", "call", "int delete_ref (const char *refname)"),
    # Python: nested functions, a multi-line signature, decorators, docstrings, imports
    ("session.py", "time.sleep(delay * 2**attempt)", "sleep", "call",
     "def retry › def decorate › def wrapper(*args, **kwargs)"),
    ("session.py", "response = adapter.send(", r"adapter\.send", "call",
     "class Session › def send(self, request, *, stream: bool = False, timeout: float | None = None, verify: bool = True)"),
    ("session.py", "def get_adapter", "get_adapter", "definition", "class Session"),
    ("session.py", "    def send(", "send", "definition", "class Session"),
    ("session.py", "redirects are resolved by the caller", "redirects", "comment",
     "class Session › def send(self, request, *, stream: bool = False, timeout: float | None = None, verify: bool = True)"),
    ("session.py", '"""Send a prepared request', "prepared", "string",
     "class Session › def send(self, request, *, stream: bool = False, timeout: float | None = None, verify: bool = True)"),
    ("session.py", "times: how many attempts in all.", "attempts", "string",
     "def retry(times: int = DEFAULT_RETRIES) -> Callable"),
    ("session.py", "from .exceptions import RetryError", "RetryError", "import", ""),
    ("session.py", "except RetryError:", "RetryError", "reference",
     "def retry › def decorate › def wrapper(*args, **kwargs)"),
    ("session.py", "DEFAULT_BACKOFF = 0.5", "DEFAULT_BACKOFF", "definition", ""),
    ("session.py", "    timeout = 30", "timeout", "definition", "class Session"),
    ("session.py", "timeout = self.timeout", r"timeout =", "assignment",
     "class Session › def send(self, request, *, stream: bool = False, timeout: float | None = None, verify: bool = True)"),
    # C: the one place that sets a flag, the places that test it or pass it on
    ("arena.c", "fp->_flags |= _IO_LINE_BUF;", "_IO_LINE_BUF", "assignment",
     "static void set_line_buffered (FILE *fp, int tty)"),
    ("arena.c", "if (fp->_flags & _IO_LINE_BUF)", "_IO_LINE_BUF", "reference",
     "static void set_line_buffered (FILE *fp, int tty)"),
    ("arena.c", "flush_line (fp, _IO_LINE_BUF);", "_IO_LINE_BUF", "reference",
     "static void set_line_buffered (FILE *fp, int tty)"),
    ("arena.c", "int mode = fp->_flags & _IO_LINE_BUF;", "_IO_LINE_BUF", "reference",
     "static int line_buffered_p (FILE *fp)"),
    # TypeScript/TSX components
    ("Dashboard.tsx", "const rows = await fetchMetrics(teamId);", "fetchMetrics", "call",
     "function Dashboard › const load = async ()"),
    ("Dashboard.tsx", "return this.entries.get(teamId);", r"entries\.get", "call",
     "class MetricCache › get(teamId: string): Metric[] | undefined"),
    ("Dashboard.tsx", "refreshMs?: number;", "refreshMs", "definition", "interface DashboardProps"),
    ("Dashboard.tsx", 'import { fetchMetrics, type Metric }', "fetchMetrics", "import", ""),
    ("Dashboard.tsx", "<MetricRow key={m.name} metric={m} />", "MetricRow", "reference",
     "function Dashboard({ teamId, refreshMs = REFRESH_DEFAULT_MS }: DashboardProps)"),
    ("Dashboard.tsx", "export const REFRESH_DEFAULT_MS", "REFRESH_DEFAULT_MS", "definition", ""),
    # JavaScript
    ("api.js", "res.status(401).end();", "status", "call", "class WebhookRouter › handle(req, res)"),
    ("api.js", "const router = new WebhookRouter(secret);", "WebhookRouter", "call",
     "const makeApp = (secret)"),
    ("api.js", 'const express = require("express");', "express", "import", ""),
    # Go: methods with receivers, struct fields
    ("server.go", "return s.srv.Shutdown(ctx)", "Shutdown", "call", "func (s *Server) Shutdown() error"),
    ("server.go", "errs <- s.srv.ListenAndServe()", "ListenAndServe", "call",
     "func (s *Server) Start(ctx context.Context) error"),
    ("server.go", "srv     *http.Server", "srv", "definition", "type Server struct"),
    ("server.go", "func (s *Server) Shutdown() error", "Shutdown", "definition", ""),
    ('server.go', '"net/http"', "net/http", "import", ""),
    # Java: annotations, a signature over several lines, nested classes
    ("AccountService.java", "throw new IllegalArgumentException", "IllegalArgumentException", "call",
     "public class AccountService › public Optional<Account> applyCredit(String accountId, int amount, String reason)"),
    ("AccountService.java", "System.out.println", "println", "call",
     "public class AccountService › static class Audit › void record(String accountId)"),
    ("AccountService.java", "private static final int MAX_CREDIT", "MAX_CREDIT", "definition",
     "public class AccountService"),
    ("AccountService.java", "import java.util.Optional;", "Optional", "import", ""),
    # C#
    ("InvoiceService.cs", "await _mailer.SendAsync", "SendAsync", "call",
     "namespace Billing.Invoices › public class InvoiceService › public async Task SendAsync(Invoice invoice)"),
    ("InvoiceService.cs", "private const int MaxLines = 200;", "MaxLines", "definition",
     "namespace Billing.Invoices › public class InvoiceService : IInvoiceService"),
    ("InvoiceService.cs", "using System.Threading.Tasks;", "Tasks", "import", ""),
    # Rust: impl blocks, trait impls, macros
    ("parser.rs", "let rhs = self.parse_term()?;", "parse_term", "call",
     "impl<'a> Parser<'a> › pub fn parse_expr(&mut self, depth: usize) -> Result<f64, String>"),
    ("parser.rs", 'write!(f, "{:?}", self)', "write!", "call",
     "impl fmt::Display for Token › fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result"),
    ("parser.rs", "fn parse_term(&mut self)", "parse_term", "definition", "impl<'a> Parser<'a>"),
    ("parser.rs", "pub const MAX_DEPTH", "MAX_DEPTH", "definition", ""),
    ("parser.rs", "use std::collections::HashMap;", "HashMap", "import", ""),
    # Ruby modules
    ("notifier.rb", "@mailer.deliver", "deliver", "call",
     "module Billing › class Notifier › def remind(customer, invoice)"),
    ("notifier.rb", 'require "net/http"', "net/http", "import", ""),
    ("notifier.rb", "DEFAULT_CHANNEL = :email", "DEFAULT_CHANNEL", "definition",
     "module Billing › class Notifier"),
    ("notifier.rb", "# Sends payment reminders.", "reminders", "comment", "module Billing"),
    # PHP classes
    ("UserController.php", "$user = User::findOrFail($id);", "findOrFail", "call",
     "class UserController › public function show(int $id)"),
    ("UserController.php", "private const PAGE_SIZE = 25;", "PAGE_SIZE", "definition",
     "class UserController extends Controller"),
    ("UserController.php", "use App\\Models\\User;", "Models", "import", ""),
    ("UserController.php", "findOrFail throws a 404", "throws", "comment",
     "class UserController › public function show(int $id)"),
    # Bash functions
    ("deploy.sh", "sleep $((attempt * 5))", "sleep", "call", "deploy_service()"),
    ("deploy.sh", 'log "rollout failed in $env"', "log", "call", "deploy_service()"),
    ("deploy.sh", "deploy_service() {", "deploy_service", "definition", ""),
    ("deploy.sh", "RETRIES=${RETRIES:-3}", "RETRIES=", "definition", ""),
    # C++
    ("widget.cpp", "width_ = width;", "width_", "assignment",
     "namespace ui › void Widget::Resize(int width, int height)"),
    ("widget.cpp", "return value < lo", "value", "reference", "namespace ui › T Clamp(T value, T lo, T hi)"),
    ("widget.cpp", "void Resize(int width, int height);", "Resize", "definition",
     "namespace ui › class Widget"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "needle", "pattern", "kind", "scope"), CASES)
def test_scope_and_kind(name: str, needle: str, pattern: str, kind: str, scope: str) -> None:
    got = info(name, needle, pattern)
    assert (got.kind, " › ".join(got.scope)) == (kind, scope)


CONFIG = [
    # the same key under two parents is told apart by its path
    ("values.yaml", "    redis:", "redis", 1, "definition", "plugin_routing › modules › redis"),
    ("values.yaml", "    redis:", "redis", 2, "definition", "plugin_routing › cache › redis"),
    ("values.yaml", "host: redis-master", "redis-master", 1, "reference",
     "plugin_routing › cache › redis › host"),
    ("values.yaml", "backoff: exponential", "backoff", 1, "definition",
     "plugin_routing › retries › [1] › backoff"),
    ("values.yaml", "# Default values", "Default", 1, "comment", ""),
    ("settings.toml", "[cache.redis]", "redis", 1, "definition", "cache.redis"),
    ("settings.toml", 'host = "localhost"', "host", 1, "definition", "cache.redis › host"),
    ("settings.toml", 'name = "billing"', "billing", 1, "reference", "workers[] › name"),
    ("package.json", '"redis": {', "redis", 1, "definition", "config › redis"),
    ("package.json", '"host": "localhost"', "localhost", 1, "reference", "config › redis › host"),
    ("main.tf", 'engine          = "redis"', "redis", 1, "reference",
     'resource "aws_elasticache_cluster" "redis" › engine'),
    ("main.tf", "enabled = true", "enabled", 1, "definition",
     'resource "aws_s3_bucket" "logs" › versioning › enabled'),
    ("main.tf", 'resource "aws_elasticache_cluster" "redis"', "redis", 1, "definition",
     'resource "aws_elasticache_cluster" "redis"'),
]  # fmt: skip


@pytest.mark.parametrize(("name", "needle", "pattern", "nth", "kind", "path"), CONFIG)
def test_config_key_paths(
    name: str, needle: str, pattern: str, nth: int, kind: str, path: str
) -> None:
    got = info(name, needle, pattern, nth)
    assert (got.kind, " › ".join(got.scope)) == (kind, path)


@pytest.mark.parametrize(
    ("name", "needle", "pattern", "decorated"),
    [
        ("session.py", "@retry(times=5)", "retry",
         "def send(self, request, *, stream: bool = False, timeout: float | None = None, verify: bool = True)"),
        ("session.py", "@property", "property", "def is_closed(self) -> bool"),
        ("AccountService.java", "@Transactional", "Transactional",
         "public Optional<Account> applyCredit(String accountId, int amount, String reason)"),
        ("InvoiceService.cs", '[Obsolete("use SendAsync")]', "Obsolete", "public void Send(Invoice invoice)"),
        ("parser.rs", "#[derive(Debug, Clone, PartialEq)]", "derive", "pub enum Token"),
    ],
)  # fmt: skip
def test_a_decorator_names_what_it_decorates(
    name: str, needle: str, pattern: str, decorated: str
) -> None:
    assert info(name, needle, pattern).decorates == decorated


def test_a_definition_knows_its_extent_and_where_its_signature_ends() -> None:
    # a decorated method whose signature spans nine lines
    send = info("session.py", "    def send(", "send")
    assert send.whole == (
        line_of("session.py", "@retry(times=5)"),
        line_of("session.py", "return response"),
    )
    assert send.header_end == line_of("session.py", "    ):")
    small = info("session.py", "def get_adapter", "get_adapter")
    assert small.whole == (67, 71)
    c_func = info("refs.c", "resolve_ref_unsafe(const char *refname,", "resolve_ref_unsafe")
    assert c_func.whole == (31, 84)
    assert c_func.header_end == 35  # the `{` on a line of its own is not the signature


def test_context_shows_the_loop_and_the_values_a_hit_uses() -> None:
    sleep = line_of("session.py", "time.sleep(delay * 2**attempt)")
    ctx = syntax("session.py").context(sleep, Pattern.smart("sleep").spans("time.sleep(delay)"))
    # the enclosing except/try/for, nearest first, and `delay = DEFAULT_BACKOFF` two lines up
    assert ctx.headers[:3] == [sleep - 1, sleep - 3, sleep - 4]
    assert line_of("session.py", "delay = DEFAULT_BACKOFF") in ctx.assignments
    c_sleep = line_of("refs.c", "sleep_millisec(backoff);")
    ctx = syntax("refs.c").context(c_sleep, [])
    assert line_of("refs.c", "while ((lock->fd = open(") in ctx.headers
    assert line_of("refs.c", "long backoff = 1;") in ctx.assignments


def test_a_name_the_hit_assigns_itself_brings_no_earlier_assignment() -> None:
    row = line_of("refs.c", "refname = sb_refname;")
    ctx = syntax("refs.c").context(row, [])
    assert line_of("refs.c", "resolve_ref_unsafe(const char *refname,") not in ctx.assignments


def test_languages_without_a_grammar_fall_back_to_heuristics() -> None:
    lines = ["class Greeter {", "  func greet(name: String) {", '    print("hi", name)', "  }", "}"]
    got = FileSyntax("swift", lines).info(3, [(4, 9)])
    assert not FileSyntax("swift", lines).parsed
    assert got.kind == "reference" and got.scope == ["class Greeter › func greet(name: String) {"]
    assert FileSyntax("swift", lines).info(2, [(7, 12)]).kind == "definition"


def test_parses_are_cached_per_snapshot_file_and_redone_when_the_text_differs() -> None:
    lines = ["def f():", "    return 1"]
    first = syntax_for(("/snap/a", "x.py"), "python", lines)
    assert syntax_for(("/snap/a", "x.py"), "python", list(lines)) is first
    assert syntax_for(("/snap/b", "x.py"), "python", lines) is not first
    assert syntax_for(("/snap/a", "x.py"), "python", ["def g():", "    pass"]) is not first


def test_a_big_c_file_is_parsed_only_around_its_hits_with_the_same_scopes() -> None:
    # Given a 200 KB C file of many functions, with goto labels and #if at column 0 inside them
    body = "".join(
        f"static int\nhandler_{i}(struct req *r,\n          int flags)\n{{\n\tint rc = 0;\n"
        f"#ifdef DEBUG\n\ttrace({i});\n#endif\n\tif (flags)\n\t\tgoto out;\n"
        f"\trc = dispatch_{i}(r);\nout:\n\treturn finish(r, rc);\n}}\n\n"
        for i in range(1500)
    )
    lines = body.splitlines()
    target = next(
        i for i, line in enumerate(lines, 1) if "return finish(r, rc)" in line and i > 15000
    )
    sliced = FileSyntax("c", lines)
    got = sliced.info(target, [(8, 14)])
    full = FileSyntax("c", lines, slicing=False)
    assert sliced.sliced and len(sliced.source) < len(full.source) // 10
    assert got.scope == full.info(target, [(8, 14)]).scope
    assert got.scope[0].startswith("static int handler_") and got.kind == "call"


def test_a_c_function_the_parser_cannot_close_still_names_its_call_sites() -> None:
    # Given glibc-style #if branches that each open a brace (the grammar gives up on the function)
    source = """\
static void
helper (void)
{
}

static void *
_int_malloc (mstate av, size_t bytes)
{
  void *p = NULL;
#if USE_TCACHE
  if (tcache_available (av)) {
#else
  if (bin_available (av)) {
#endif
      p = take (av);
      alloc_perturb (p, bytes);
    }
  return p;
}
"""
    lines = source.splitlines()
    row = next(i for i, line in enumerate(lines, 1) if "alloc_perturb (p" in line)
    got = FileSyntax("c", lines).info(row, [(6, 19)])
    assert got.kind == "call"
    assert got.scope == ["static void * _int_malloc (mstate av, size_t bytes)"]
    assert got.extent is not None and got.extent[0] == 6
