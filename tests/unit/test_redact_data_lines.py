"""Lines that are data (inside a multi-line string or block comment of code, or prose) have their
secret-named assignments judged as data: `password = Xy7…` in a docstring is a typed value, not
a variable. Held on every path a file's text takes: read_file, search_code, the search-only answer."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from codeask import search_only
from codeask.filewindow import LINE_KEEP, read_window
from codeask.redact import mask_file, masks_more_as_data, scan
from codeask.redact.strings import data_ranges
from codeask.search.ripgrep import RawMatch, find_rg
from codeask.search.unmasked import Signs, line_alone, stands_alone
from codeask.snapshot import RepoRef, Snapshot
from codeask.tools import Toolbox
from conftest import write_tree

# Fake secrets are assembled at runtime so this file holds no secret-shaped literal.
VALUE = "Zq8W" + "v3Rt6Yu1" + "Io5P"
DECOY = "Kd4N" + "m7Bx2Qe9" + "Lw3T"
# A bare identifier that would be judged a secret were it data: in code it is a variable.
VARIABLE = "tokenFrom" + "Vault9Xq"


def inside_and_outside(opener: str, closer: str, indent: str = "") -> str:
    """A file with the value inside a multi-line string, and the variable outside any."""
    return (
        f"{opener}\n{indent}[api]\n{indent}api_key = {VALUE}\n{closer}\n"
        f"session_token = {VARIABLE}\n"
    )


# One case per language family redact.strings scans, in its multi-line string syntax.
FAMILIES = {
    "src/python_docstring.py": inside_and_outside('CONFIG = """', '"""'),
    "src/python_single.py": inside_and_outside("CONFIG = r'''", "'''"),
    "src/template.js": inside_and_outside("const config = `", "`;"),
    "src/template.ts": inside_and_outside("const config: string = `", "`;"),
    "src/raw.go": inside_and_outside("var config = `", "`"),
    "src/raw.cpp": inside_and_outside('auto config = R"ini(', ')ini";'),
    "src/raw.rs": inside_and_outside('let config = r#"', '"#;'),
    "src/plain.rs": inside_and_outside('let config = "', '";'),
    "src/Block.java": inside_and_outside('String config = """', '""";'),
    "src/Verbatim.cs": inside_and_outside('var config = @"', '";'),
    "src/heredoc.rb": inside_and_outside("CONFIG = <<~INI", "INI", "  "),
    "src/heredoc.php": inside_and_outside("$config = <<<'INI'", "INI;"),
    "src/long.lua": inside_and_outside("local config = [==[", "]==]"),
    "src/comment.c": inside_and_outside("/* an example:", " */", " * "),
}
# Prose: every line is data, fenced, indented or not.
PROSE = {
    "README.md": f"Configure it:\n\n```ini\napi_key = {VALUE}\n```\n",
    "docs/setup.rst": f"Set it::\n\n    api_key = {VALUE}\n",
    "NOTES.txt": f"api_key = {VALUE}\n",
}


def masked(path: str, text: str) -> str:
    lines = text.split("\n")
    out, _ = mask_file(lines, path)
    return scan("\n".join(out))[0]


@pytest.mark.parametrize("path", sorted(FAMILIES))
def test_an_assignment_inside_a_multi_line_string_is_judged_as_data(path: str) -> None:
    shown = masked(path, FAMILIES[path])
    assert VALUE not in shown
    assert "api_key = [REDACTED:secret-assignment]" in shown
    assert f"session_token = {VARIABLE}" in shown  # outside, a bare word is still a variable


@pytest.mark.parametrize("path", sorted(PROSE))
def test_an_assignment_in_prose_is_judged_as_data(path: str) -> None:
    assert VALUE not in masked(path, PROSE[path])


@pytest.mark.parametrize(
    "line",
    [
        "password = password_input",
        "token = self.token",
        "api_key = settings.api_key",
        "secret_key = get_secret_key()",
        "auth_token = None",
    ],
)
def test_code_like_values_stay_visible_even_as_data(line: str) -> None:
    # Judged as data, a value still has to look typed: a variable's name, an attribute, a call
    # or a placeholder is not masked.
    assert masked("src/app.py", f'DOC = """\n{line}\n"""\n') == f'DOC = """\n{line}\n"""\n'


# --- Odd quoting: what a naive scanner gets wrong ----------------------------------------------


@pytest.mark.parametrize(
    ("path", "text"),
    [
        # A triple quote inside a one-line string opens nothing; the docstring after it does.
        ("src/a.py", f'X = "\\"\\"\\""  # """\nDOC = """\napi_key = {VALUE}\n"""\n'),
        # Escaped delimiters inside the string do not close it.
        ("src/b.js", f"const s = `a \\` b\napi_key = {VALUE}\n`;\n"),
        ("src/c.py", f'DOC = """a \\""" b\napi_key = {VALUE}\n"""\n'),
        # A string left open runs to the end of the file.
        ("src/d.py", f'DOC = """\napi_key = {VALUE}\n'),
        ("src/e.go", f"var s = `\napi_key = {VALUE}\n"),
        # The secret on the closing line, and on the opening line.
        ("src/f.py", f'DOC = """\napi_key = {VALUE}"""\n'),
        ("src/g.ts", f"const s = `api_key = {VALUE}\n`;\n"),
        # CRLF line ends.
        ("src/h.py", f'DOC = """\r\napi_key = {VALUE}\r\n"""\r\n'),
        # A Rust lifetime's quote opens no char literal that could eat the string's quote.
        ("src/i.rs", f"fn f<'a>(x: &'a str) {{ let s = \"\napi_key = {VALUE}\n\"; }}\n"),
        # A quote inside a char literal opens nothing.
        ("src/j.c", f"char q = '\"'; /*\napi_key = {VALUE}\n*/\n"),
        # Nested templates keep the outer one open.
        ("src/k.js", f"const s = `${{x ? `a` : 'b'}}\napi_key = {VALUE}\n`;\n"),
        # A line ended by a carriage return alone (the whole file is then one line).
        ("src/o.py", f'DOC = """\rapi_key = {VALUE}\r"""\r'),
        # Ruby's percent literals, brackets nested.
        ("src/p.rb", f"q = %q{{a {{b}}\napi_key = {VALUE}\n}}\n"),
        ("src/q.rb", f"q = %(\napi_key = {VALUE}\n)\n"),
        # A quote inside a regular expression literal opens nothing.
        ("src/m.js", f"const re = /`/;\nconst s = `\napi_key = {VALUE}\n`;\n"),
        ("src/n.rb", f"ok = s =~ /'/\nq = '\napi_key = {VALUE}\n'\n"),
        # C#'s interpolated verbatim strings, either order.
        ("src/t.cs", f'var s = $@"{{x}}\napi_key = {VALUE}\n";\n'),
        ("src/u.cs", f'var s = @$"{{x}}\napi_key = {VALUE}\n";\n'),
        # A string on one line: a request body, not code.
        ("src/r.py", f'body = "token={VALUE}&team_id=T1"\n'),
        ("src/s.go", f'x := f("a", "api_key = {VALUE}")\n'),
        # A string continued with a backslash.
        ("src/l.c", f'const char *s = "a \\\napi_key = {VALUE}";\n'),
    ],
)
def test_odd_quoting_still_finds_the_string(path: str, text: str) -> None:
    assert VALUE not in masked(path, text)


@pytest.mark.parametrize(
    ("path", "text"),
    [
        # Quotes inside a comment open nothing.
        ("src/a.py", f'# it\'s """ here\nsession_token = {VARIABLE}\n'),
        ("src/b.js", f"// a ` in a comment\nsession_token = {VARIABLE};\n"),
        # A closed string before the code.
        ("src/c.py", f'DOC = """\ntext\n"""\nsession_token = {VARIABLE}\n'),
        # A C++ digit separator is no char literal.
        ("src/d.cpp", f"int n = 1'000'000;\nauto session_token = {VARIABLE};\n"),
        # A comment on one line is as often code commented out.
        ("src/g.py", f"# session_token = {VARIABLE}\n"),
        # A keyword argument after a string on its line is outside it.
        ("src/h.py", f'f("a", session_token = {VARIABLE})\n'),
        # A modulo is no percent literal.
        ("src/f.rb", f"x = a % (b)\nsession_token = {VARIABLE}\n"),
        # A Ruby shift into a constant is no heredoc when no line ends it.
        ("src/e.rb", f"list <<ITEM\nsession_token = {VARIABLE}\n"),
    ],
)
def test_code_outside_any_string_stays_code(path: str, text: str) -> None:
    assert VARIABLE in masked(path, text)


def test_data_ranges_cover_the_string_from_its_openers_line_to_its_closers() -> None:
    text = 'x = 1\nDOC = """\nbody\n"""  # end\ny = "2"\n'
    [(start, end), (start2, end2)] = data_ranges(text, "m.py")
    assert text[start:end] == 'DOC = """\nbody\n"""  # end'
    assert text[start2:end2] == '"2"'
    # One-line strings ahead of a multi-line one on its line are joined into its range.
    text = 'a = "x" + """\nbody\n"""\n'
    assert data_ranges(text, "m.py") == [(0, len(text) - 1)]
    assert data_ranges(text, "notes.unknown") == [(0, len(text))]


def test_a_window_cut_from_a_large_file_is_judged_as_data(tmp_path: Path) -> None:
    # The string opens far above the window's context: only the whole file shows it is open, so
    # a window judges every line as data.
    root = tmp_path / "repo"
    root.mkdir()
    filler = "".join(f"line {i}\n" for i in range(3000))
    (root / "big.py").write_text(f'DOC = """\n{filler}api_key = {VALUE}\n"""\n')
    box = Toolbox(Snapshot(root, "c" * 40, RepoRef("acme", str(root))), large_file_bytes=1000)
    shown = box.run("read_file", {"path": "big.py", "start_line": 3000, "end_line": 3003})
    assert not shown.is_error, shown.text
    assert "api_key = [REDACTED:secret-assignment]" in shown.text
    assert VALUE not in shown.text


# --- Through the tools ----------------------------------------------------------------------------

FILES = {**FAMILIES, **PROSE}


def small_repo(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "repo", FILES)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = small_repo(tmp_path)
    # A flood of plain files, so that search_code asks rg which files stand alone (Signs).
    for i in range(2 * Signs.BATCH_MIN):
        p = root / "pkg" / f"m{i}.py"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"def handler_{i}(event):\n    return api_key_route(event)\n")
    return root


def toolbox(root: Path) -> Toolbox:
    return Toolbox(Snapshot(root, "c" * 40, RepoRef("acme", str(root))))


def run(root: Path, tool: str, args: dict[str, object]) -> str:
    result = toolbox(root).run(tool, args)
    assert not result.is_error, result.text
    return result.text


@pytest.mark.parametrize("path", sorted(FILES))
def test_read_file_shows_no_value_of_a_data_line(repo: Path, path: str) -> None:
    shown = run(repo, "read_file", {"path": path})
    assert VALUE not in shown
    assert "[REDACTED:secret-assignment]" in shown


@pytest.mark.parametrize("pattern", ["api_key = ", VALUE[:8], "api_key|api_key_route"])
def test_search_code_shows_no_value_of_a_data_line(repo: Path, pattern: str) -> None:
    shown = run(repo, "search_code", {"pattern": pattern})
    assert VALUE not in shown and VALUE[8:] not in shown


@pytest.mark.parametrize("flood", [True, False], ids=["rg-sorts-the-files", "each-file-read"])
def test_search_code_for_the_value_reads_as_a_search_for_text_in_no_file(
    tmp_path: Path, flood: bool
) -> None:
    # A match only inside a masked value counts as none: no oracle on the value. With a flood
    # of hits rg sorts the files that stand alone (Signs); with a few each file is read.
    root = small_repo(tmp_path)
    for i in range(2 * Signs.BATCH_MIN if flood else 1):
        p = root / "pkg" / f"m{i}.py"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"def handler_{i}(event):\n    return api_key_route(event)\n")
    repo = root
    shown = run(repo, "search_code", {"pattern": f"{VALUE[:8]}|api_key_route"})
    expected = run(repo, "search_code", {"pattern": f"{DECOY[:8]}|api_key_route"})
    assert shown.replace(VALUE[:8], DECOY[:8]) == expected


def test_the_search_only_answer_shows_no_value_of_a_data_line(repo: Path) -> None:
    shown = search_only.answer("Where is the api_key config set?", toolbox(repo)).text
    assert "api_key" in shown
    assert VALUE not in shown


def test_a_hit_line_that_would_be_secret_as_data_is_judged_on_its_file(repo: Path) -> None:
    # The files stand alone (no sign of a whole-file rule), yet their hit lines are judged on
    # the whole file, which knows they are inside a string.
    path = "src/template.js"
    assert stands_alone(FILES[path], path)
    line = f"api_key = {VALUE}"
    assert masks_more_as_data(line) and not line_alone(line)
    assert line_alone(f"session_token = {VARIABLE};") is False  # a variable's name, as data
    assert line_alone("return api_key_route(event)")
    signs = Signs(find_rg(), repo, timeout_s=10.0)
    plain = [RawMatch(f"pkg/m{i}.py", 2, "    return api_key_route(event)") for i in range(150)]
    hit = RawMatch(path, 3, line)
    signs.sort([*plain, hit])
    assert all(signs.alone(m) for m in plain)
    assert not signs.alone(hit)


# --- Hostile review: costs and shapes the first review did not try --------------------------------


@pytest.mark.parametrize("path", ["src/re.js", "src/re.rb"])
def test_a_line_of_unclosed_regex_classes_costs_linear_time(path: str) -> None:
    # Each `=/[` opens a regular expression literal whose class never closes: read to the line's
    # end from every opener, a 60 KB line took seconds (quadratic), past any deadline.
    text = f"api_key = {VALUE}\nx" + "=/[a/ " * 10_000 + "\n"
    started = time.perf_counter()
    data_ranges(text, path)
    mask_file(text.split("\n"), path)
    assert time.perf_counter() - started < 2.0


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("src/doc.py", f'DOC = """\napi_key = \\\n{VALUE}\n"""\n'),
        ("src/t.js", f"const s = `\napi_key = \\\n    {VALUE}\n`;\n"),
        ("README.md", f"api_key = \\\n  {VALUE}\n"),
    ],
)
def test_a_value_continued_with_a_backslash_on_data_lines_is_judged_joined(
    path: str, text: str
) -> None:
    assert VALUE not in masked(path, text)
    # In code the same continued line is a variable, as before.
    assert VARIABLE in masked("src/code.py", f"session_token = \\\n    {VARIABLE}\n")


def test_a_window_that_starts_on_a_continued_value_masks_it(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    filler = "x = 1\n" * 2000
    (root / "big.py").write_text(f'{filler}DOC = """\napi_key = \\\n{VALUE}\n"""\n')
    box = Toolbox(Snapshot(root, "c" * 40, RepoRef("acme", str(root))), large_file_bytes=1000)
    for start in (2001, 2002, 2003):
        shown = box.run("read_file", {"path": "big.py", "start_line": start, "end_line": 2004})
        assert not shown.is_error, shown.text
        assert VALUE not in shown.text


def test_a_window_whose_line_lost_a_strings_opener_past_its_cut_judges_as_data(
    tmp_path: Path,
) -> None:
    # A window keeps LINE_KEEP bytes of a line: a docstring opened past them is unseen, and the
    # lines inside it would read as code. A window with a cut line judges every line as data.
    root = tmp_path / "repo"
    root.mkdir()
    long_line = "x = 1  # " + "a" * (LINE_KEEP + 10) + ' ; DOC = """'
    (root / "big.py").write_text(f'{long_line}\napi_key = {VALUE}\n"""\n' + "pass\n" * 200)
    box = Toolbox(Snapshot(root, "c" * 40, RepoRef("acme", str(root))), large_file_bytes=1000)
    shown = box.run("read_file", {"path": "big.py", "start_line": 1, "end_line": 4})
    assert not shown.is_error, shown.text
    assert VALUE not in shown.text
    assert read_window(root / "big.py", "big.py", 2, 1).lines == [
        "api_key = [REDACTED:secret-assignment]"
    ]


@pytest.mark.parametrize(
    ("path", "text"),
    [
        # A quote inside an interpolation's code belongs to a string of that code: it neither
        # closes the outer string nor opens one of its kind. Read wrongly, the outer string
        # closes early and its closing quote opens a string below: the lines between read as code.
        ("src/a.js", f'const s = `${{"`"}}\napi_key = {VALUE}\n`;\n'),
        ("src/b.js", f"const s = `${{'`'}}\napi_key = {VALUE}\n`;\n"),
        ("src/c.js", f"const s = `${{/`/.test(x)}}\napi_key = {VALUE}\n`;\n"),
        ("src/d.js", f"const s = `${{x /* ` */}}\napi_key = {VALUE}\n`;\n"),
        ("src/e.ts", f"const s = `${{f({{a: `${{'`'}}`}})}}\napi_key = {VALUE}\n`;\n"),
        ("src/f.rb", f"x = \"#{{'\"'}}\"\ny = '\napi_key = {VALUE}\n'\n"),
        ("src/g.rb", f'x = "#{{h["a"] + "}}"}}\napi_key = {VALUE}\n"\n'),
        ("src/h.php", f"$x = \"{{$a['\"']}}\";\n$y = '\napi_key = {VALUE}\n';\n"),
    ],
)
def test_a_quote_inside_an_interpolation_opens_nothing_outside_it(path: str, text: str) -> None:
    assert VALUE not in masked(path, text)


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("src/a.js", f"const s = `${{a}}-${{'b'}}`;\nsession_token = {VARIABLE};\n"),
        ("src/b.js", f"const s = `${{`${{x}}`}}`; // `\nsession_token = {VARIABLE};\n"),
        ("src/c.rb", f'x = "#{{a}}" + "b"\nsession_token = {VARIABLE}\n'),
        ("src/d.php", f'$x = "{{$a}} ${{b}}";\n$session_token = {VARIABLE};\n'),
    ],
)
def test_code_after_a_closed_interpolated_string_stays_code(path: str, text: str) -> None:
    assert VARIABLE in masked(path, text)


def test_deeply_nested_interpolations_cost_linear_time() -> None:
    text = f"api_key = {VALUE}\n" + "`${'`'}` + `${" * 20_000 + "\n"
    started = time.perf_counter()
    data_ranges(text, "src/deep.js")
    assert time.perf_counter() - started < 2.0


@pytest.mark.parametrize(
    "path", ["src/a.rs", "src/b.swift", "src/c.kt", "src/d.scala", "src/e.dart"]
)
def test_a_nested_block_comment_runs_to_the_close_of_its_opener(path: str) -> None:
    # These languages nest block comments: the first `*/` closes the inner one only.
    assert VALUE not in masked(path, f"/* a /* b */\napi_key = {VALUE}\n*/\n")
    assert VARIABLE in masked(path, f"/* a /* b */ c */\nsession_token = {VARIABLE}\n")


def test_a_block_comment_that_does_not_nest_closes_at_its_first_end() -> None:
    # Java's and C's do not: the code after the first `*/` is code.
    for path in ("src/A.java", "src/a.c", "src/a.go", "src/a.js"):
        assert VARIABLE in masked(path, f"/* a /* b */\nsession_token = {VARIABLE}\n")


@pytest.mark.parametrize(
    ("path", "text"),
    [
        # C#'s raw string literals close on as many quotes as opened them: fewer stand inside.
        ("src/a.cs", f'var s = """"\n""" inner\napi_key = {VALUE}\n"""";\n'),
        ("src/b.cs", f'var s = $$"""""\n"""" {{{{x}}}}\napi_key = {VALUE}\n""""";\n'),
        # Swift's raw multi-line string closes on the quotes and as many `#`.
        ("src/c.swift", f'let s = #"""\n"""\napi_key = {VALUE}\n"""#\n'),
    ],
)
def test_a_run_of_fewer_quotes_does_not_close_a_raw_string(path: str, text: str) -> None:
    assert VALUE not in masked(path, text)


def test_code_after_a_closed_raw_string_stays_code() -> None:
    assert VARIABLE in masked(
        "src/a.cs", f'var s = """"\na\n"""";\nvar session_token = {VARIABLE};\n'
    )
    assert VARIABLE in masked(
        "src/b.swift", f'let s = #"""\na\n"""#\nlet session_token = {VARIABLE}\n'
    )
    assert VARIABLE in masked(
        "src/C.java", f'String s = """\na\n""";\nString session_token = {VARIABLE};\n'
    )


@pytest.mark.parametrize(
    ("path", "text"),
    [
        # Heredocs opened on one line have their bodies one after the other.
        ("src/a.rb", f"f(<<~A, <<~B)\n  a\nA\n  api_key = {VALUE}\nB\n"),
        ("src/b.rb", f"f(<<~A, <<-B, <<C)\n  a\nA\n b\n B\napi_key = {VALUE}\nC\n"),
    ],
)
def test_every_heredoc_opened_on_a_line_is_read(path: str, text: str) -> None:
    assert VALUE not in masked(path, text)
    # A shift after a heredoc opens nothing more.
    assert VARIABLE in masked(path, f"f(<<~A, x <<y)\n  a\nA\nsession_token = {VARIABLE}\n")


@pytest.mark.parametrize(
    "text",
    [
        f"def s = $/\napi_key = {VALUE}\n/$\n",
        f"def s = /\napi_key = {VALUE}\n/\n",
        f"def s = /a\napi_key = {VALUE}\nb/\n",
    ],
)
def test_a_groovy_slashy_string_spans_lines(text: str) -> None:
    assert VALUE not in masked("build.gradle", text)
    assert VALUE not in masked("src/a.groovy", text)


def test_groovy_division_opens_no_slashy_string() -> None:
    text = f"def x = a / b\nsession_token = {VARIABLE}\ndef y = c / d\n"
    assert VARIABLE in masked("src/a.groovy", text)


@pytest.mark.parametrize(
    "line",
    [
        f'API_KEY = """{VALUE}',
        f"api_key = '''{VALUE}'''",
        f'api_key = r"""{VALUE}"""  # raw',
    ],
)
def test_a_triple_quoted_value_opened_on_its_names_line_is_judged(line: str) -> None:
    # Read as `""` and a quote, the value was empty: the gate itself showed the line.
    assert VALUE not in scan(line)[0]
    assert VALUE not in masked("src/a.py", f'{line}\n"""\n')
    # Prose in a triple-quoted string is no secret.
    assert scan('auth_token = """The token for the API."""')[0].endswith('API."""')


# A secret-named key whose value sits on the line below: wrapped (as black wraps a long string),
# a string spanning lines opened after the name, a JSON or YAML key with its value below.
VALUE_BELOW = {
    "src/wrapped.py": f'SECRET_KEY = (\n    "{VALUE}"\n)\n',
    "src/triple.py": f'API_KEY = """\n{VALUE}\n"""\n',
    "src/template.js": f"const apiKey = `\n{VALUE}\n`;\n",
    "src/next.js": f'const apiKey =\n  "{VALUE}";\n',
    "src/raw.go": f"var apiKey = `\n{VALUE}\n`\n",
    "src/dict.py": f'x = {{\n  "api_key":\n    "{VALUE}",\n}}\n',
    "conf/app.json": f'{{"api_key":\n  "{VALUE}"}}\n',
    "README.md": f"```yaml\napi_key: |\n  {VALUE}\n```\n\n```yaml\nauth_token:\n  {VALUE}\n```\n",
}


@pytest.mark.parametrize("path", sorted(VALUE_BELOW))
def test_a_value_on_the_line_below_its_secret_name_is_masked(path: str) -> None:
    shown = masked(path, VALUE_BELOW[path])
    assert VALUE not in shown
    assert "[REDACTED:secret-assignment]" in shown


@pytest.mark.parametrize(
    "text",
    [
        f"if session_token:\n    return {VARIABLE}\n",
        f"session_token = (\n    {VARIABLE}\n)\n",  # in code a bare word is a variable
        "api_key = (\n    settings.API_KEY\n)\n",
        'auth_token = (\n    "The token for the API."\n)\n',
        'secret_key = (\n    os.environ["SECRET_KEY"]\n)\n',
        "for key in keys:\n    print(key)\n",
        'headers = {\n    "Authorization":\n        f"Bearer {token}",\n}\n',
    ],
)
def test_code_below_a_secret_name_that_holds_no_value_stays_visible(text: str) -> None:
    assert masked("src/code.py", text) == text


@pytest.mark.parametrize(
    ("path", "text"),
    [
        # An HCL heredoc's body is text (a user_data script, a config template), though HCL
        # reads an unquoted value outside one as an expression.
        (
            "infra/main.tf",
            f'resource "x" "y" {{\n  user_data = <<-EOT\n    api_key = {VALUE}\n  EOT\n}}\n',
        ),
        ("jobs/app.nomad", f"template {{\n  data = <<EOT\napi_key = {VALUE}\nEOT\n}}\n"),
        # A YAML key's plain scalar on the line below it.
        ("deploy/values.yaml", f"api_key:\n  {VALUE}\n"),
        ("compose.yml", f"services:\n  app:\n    auth_token:\n      {VALUE}\n"),
    ],
)
def test_config_data_its_own_rules_left_is_masked(path: str, text: str) -> None:
    assert VALUE not in masked(path, text)


@pytest.mark.parametrize(
    ("path", "text"),
    [
        (
            "infra/main.tf",
            "user_data = <<-EOT\n  api_key = ${var.api_key}\nEOT\npassword = var.db_password\n",
        ),
        (
            "deploy/values.yaml",
            "secrets:\n  db_password:\n    file: ./db_password.txt\napi_token:\n  ${API_TOKEN}\n",
        ),
        ("deploy/values.yaml", "auth:\n  token_file: /x\ncredentials:\n  - name: foo\n"),
    ],
)
def test_config_structure_below_a_secret_name_stays_visible(path: str, text: str) -> None:
    assert masked(path, text) == text


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("README.md", f"| Name | Value |\n|---|---|\n| `DB_PASSWORD` | `{VALUE}` |\n"),
        ("docs/staging.md", f"| api_key | {VALUE} | staging |\n"),
        ("src/doc.py", f'DOC = """\n| api_key | {VALUE} |\n"""\n'),
    ],
)
def test_a_secret_in_a_table_row_of_prose_is_masked(path: str, text: str) -> None:
    assert VALUE not in masked(path, text)
    # A search hit on the row in a file that stands alone is judged on the whole file.
    assert not line_alone(f"| api_key | {VALUE} |")


def test_a_table_that_documents_secrets_stays_visible() -> None:
    text = (
        "| Name | Type | Description |\n|---|---|---|\n"
        "| api_key | string | Your API key |\n| auth_token | str | None |\n"
    )
    assert masked("README.md", text) == text


@pytest.mark.parametrize(
    "text",
    [
        # An apostrophe in PHP's inline HTML opens no string: read as one, the string below
        # closes early and its lines read as code.
        f"<p>Don't</p>\n<?php $s = '\napi_key = {VALUE}\n'; ?>\n",
        f"<?php $a = 1; ?>\n<p>Don't</p>\n<?= $s = '\napi_key = {VALUE}\n' ?>\n",
        # Inline HTML is prose: data.
        f"<?php $a = 1; ?>\n<p>api_key = {VALUE}</p>\n",
    ],
)
def test_php_inline_html_is_text(text: str) -> None:
    assert VALUE not in masked("views/page.php", text)
    assert VARIABLE in masked("src/a.php", f"<?php\n$session_token = {VARIABLE};\n")


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("README.md", f"```\nrequirepass {VALUE}\n```\n"),
        ("src/doc.py", f'DOC = """\nmasterauth {VALUE}\n"""\n'),
        ("docs/docker.md", f"```dockerfile\nENV API_KEY {VALUE}\n```\n"),
    ],
)
def test_a_config_directive_on_a_data_line_is_masked(path: str, text: str) -> None:
    assert VALUE not in masked(path, text)
    assert not line_alone(f"    requirepass {VALUE}")


@pytest.mark.parametrize(
    "line", ["password reset", "Token expired", "api_key YOUR_API_KEY", "auth_token None"]
)
def test_two_words_of_prose_are_no_directive(line: str) -> None:
    assert masked("README.md", f"{line}\n") == f"{line}\n"


@pytest.mark.parametrize(
    "line",
    ["API Key: {}", "- **Secret Access Key**: `{}`", "Storage account key = {}", "Private key: {}"],
)
def test_a_label_in_words_naming_a_key_is_masked_on_data_lines(line: str) -> None:
    assert VALUE not in masked("docs/staging.md", line.format(VALUE) + "\n")
    assert VALUE not in masked("src/doc.py", 'DOC = """\n' + line.format(VALUE) + '\n"""\n')
    assert not line_alone(line.format(VALUE))


@pytest.mark.parametrize(
    "line", ["Primary key: id", "Sort key: created_at", "API key: required", "Hot key: Ctrl2Shift"]
)
def test_a_label_naming_no_secret_key_stays_visible(line: str) -> None:
    assert masked("README.md", f"{line}\n") == f"{line}\n"


def test_a_list_below_a_secret_name_is_judged_as_on_one_line() -> None:
    # Items of a list are not one value: `"DkimTokens": [` then `"…",` shows as its one-line form.
    text = f'result = {{\n    "DkimTokens": [\n        "{VALUE.lower()}",\n    ]\n}}\n'
    assert masked("src/fake.py", text) == text


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("src/a.rb", f"puts DATA.read\n__END__\napi_key = {VALUE}\n"),
        ("src/b.php", f"<?php\n__HALT_COMPILER();\napi_key = {VALUE}\n"),
    ],
)
def test_the_data_after_a_files_end_marker_is_data(path: str, text: str) -> None:
    assert VALUE not in masked(path, text)


@pytest.mark.parametrize(
    ("text", "start"),
    [
        (f'SECRET_KEY = (\n    "{VALUE}"\n)\n', 2),
        (f'DOC = """\napi_key = \\\n{VALUE}\n"""\n', 3),
    ],
)
def test_a_window_keeps_the_lines_just_above_it_when_its_context_is_trimmed(
    tmp_path: Path, text: str, start: int
) -> None:
    # Long lines after the window push the context past CONTEXT_BYTES: far lines go, but the
    # name of a value on the window's first line stays.
    fat = ("x = '" + "a" * 16_000 + "'\n") * 300
    (tmp_path / "big.py").write_text("y = 1\n" * 50 + text + fat)
    window = read_window(tmp_path / "big.py", "big.py", 50 + start, 3)
    assert not any(VALUE in line for line in window.lines)


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("src/a.py", f"# Example config:\n#   api_key = {VALUE}\nx = 1\n"),
        ("src/b.go", f"// Example:\n//\tapi_key = {VALUE}\nfunc f() {{}}\n"),
        ("src/c.rb", f"x = 1\n  # Set:\n  #   api_key = {VALUE}\n"),
    ],
)
def test_a_block_of_line_comments_is_data(path: str, text: str) -> None:
    assert VALUE not in masked(path, text)


def test_a_line_comment_alone_or_after_code_stays_code() -> None:
    assert VARIABLE in masked("src/a.py", f"# session_token = {VARIABLE}\n\n# other\n")
    assert VARIABLE in masked("src/b.py", f"x = 1  # a\ny = 2  # session_token = {VARIABLE}\n")


@pytest.mark.parametrize("path", ["src/a.kt", "src/B.java", "src/c.scala", "src/d.dart"])
def test_a_raw_string_opened_by_more_quotes_outside_csharp_closes_on_three(path: str) -> None:
    # Only C# counts the quotes; elsewhere the quotes after the opening three are text.
    text = f'val s = """"quoted"""\nval session_token = {VARIABLE}\n'
    assert VARIABLE in masked(path, text)
