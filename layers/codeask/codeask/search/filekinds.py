"""What a file is (source, config, test, docs, vendored, generated) from its path and language together."""

from __future__ import annotations

import re
from functools import lru_cache

# Weights for the kind of file a hit is in; users ask about the code, rarely its tests or its lockfile.
KIND_WEIGHT = {
    "source": 1.0,
    "config": 0.75,
    "test": 0.45,
    "docs": 0.35,
    "vendored": 0.2,
    "generated": 0.1,
}

# Extensions of programming languages: such a file is code unless its directory says otherwise.
LANGUAGE_BY_EXT = {
    ".py": "python", ".pyi": "python", ".pyw": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".go": "go", ".java": "java", ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".c++": "cpp", ".hh": "cpp", ".hpp": "cpp",
    ".hxx": "cpp", ".h++": "cpp", ".ipp": "cpp", ".inl": "cpp", ".cs": "c_sharp", ".rs": "rust",
    ".rb": "ruby", ".rake": "ruby", ".gemspec": "ruby", ".php": "php", ".phtml": "php",
    ".sh": "bash", ".bash": "bash", ".zsh": "bash", ".ksh": "bash",
    ".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".json": "json", ".jsonc": "json",
    ".tf": "hcl", ".tfvars": "hcl", ".hcl": "hcl", ".nomad": "hcl",
    # No grammar shipped: heuristics read these, but they are still code.
    ".kt": "kotlin", ".kts": "kotlin", ".scala": "scala", ".swift": "swift", ".m": "objc",
    ".mm": "objc", ".lua": "lua", ".pl": "perl", ".pm": "perl", ".ex": "elixir", ".exs": "elixir",
    ".erl": "erlang", ".hs": "haskell", ".ml": "ocaml", ".clj": "clojure", ".dart": "dart",
    ".r": "r", ".jl": "julia", ".groovy": "groovy", ".gradle": "groovy", ".vue": "vue",
    ".svelte": "svelte", ".sql": "sql", ".proto": "protobuf", ".zig": "zig", ".nim": "nim",
    ".f90": "fortran", ".asm": "assembly", ".s": "assembly", ".ps1": "powershell", ".vim": "vim",
    ".tcl": "tcl", ".cmake": "cmake", ".mk": "make", ".xml": "xml", ".ini": "ini", ".cfg": "ini",
    ".conf": "conf", ".properties": "ini", ".env": "dotenv", ".tpl": "gotmpl", ".gotmpl": "gotmpl",
}  # fmt: skip
LANGUAGE_BY_NAME = {
    "makefile": "make", "gnumakefile": "make", "dockerfile": "dockerfile", "rakefile": "ruby",
    "gemfile": "ruby", "vagrantfile": "ruby", "cmakelists.txt": "cmake", "jenkinsfile": "groovy",
}  # fmt: skip
CONFIG_LANGUAGES = {"yaml", "toml", "json", "hcl", "xml", "ini", "conf", "dotenv"}
_PROSE_EXT = {".md", ".markdown", ".rst", ".txt", ".adoc", ".asciidoc", ".org", ".html", ".htm",
              ".ipynb", ".tex", ".pod", ".rdoc", ".textile", ".1", ".5", ".8", ".texi",
              ".texinfo", ".po", ".pot"}  # fmt: skip

# Path rules, after GitHub linguist's vendor.yml, documentation.yml, test.yml and generated.rb.
_VENDORED = re.compile(
    r"(^|/)(vendors?|[Vv]endor|third[-_]?party|3rd[-_]?party|extern(al)?|node_modules|"
    r"bower_components|site-packages|_vendor|vendored|Pods|Carthage|Godeps/_workspace|"
    r"dist)/|^deps/|(^|/)(jquery|bootstrap|d3|angular|react(-[^./]*)?)[^/]*\.(js|css)$|"
    r"\.d\.ts$|(^|/)(configure|config\.guess|config\.sub|gradlew(\.bat)?)$|(^|/)gradle/wrapper/"
)
_GENERATED = re.compile(
    r"(\.|-)min\.(js|css)$|\.(js|css)\.map$|_pb2(_grpc)?\.pyi?$|\.pb\.(go|cc|h|c)$|"
    r"_pb\.(rb|js|ts)$|\.pbobjc\.[hm]$|\.designer\.cs$|\.g\.(dart|cs)$|\.generated\.\w+$|"
    r"(^|/)(__generated__|generated)/|\.abilist$|(^|/)(package-lock\.json|npm-shrinkwrap\.json|yarn\.lock|"
    r"pnpm-lock\.yaml|poetry\.lock|[Cc]argo\.lock|go\.sum|[Gg]opkg\.lock|composer\.lock|"
    r"[Gg]emfile\.lock|[Pp]ipfile\.lock|uv\.lock|flake\.lock|pdm\.lock|bun\.lockb)$"
)
_DOCS_DIR = re.compile(
    r"^[Dd]ocs?/|(^|/)[Cc]hange[Ll]og[^/]*/|(^|/)([Dd]ocumentation|[Jj]avadoc|[Gg]roovydoc)/|^[Mm]an/|^[Ee]xamples?/|"
    r"^[Dd]emos?/|^[Ss]amples?/|(^|/)inst/doc/|(^|/)docs?/_?(build|themes?|templates?|static)/"
)
_DOCS_NAME = re.compile(
    r"^(README|[Rr]eadme|CHANGE(S|LOG)?|[Cc]hange[Ll]og|CONTRIBUTING|COPYING|INSTALL|"
    r"LICEN[CS]E|[Ll]icen[cs]e|NOTICE|AUTHORS|HISTORY|NEWS|CITATION)(\.|$)"
)
_TEST_DIR = re.compile(
    r"(^|/)(tests?|testing|__tests__|spec|specs|testdata|test_?data|fixtures|e2e|"
    r"t|[Tt]est[Ss]uite|[Uu]nit[Tt]ests?)/"
)
_TEST_NAME = re.compile(
    r"^(test_.*\.py|.*_test\.(py|go|rb|c|cc|cpp|rs|exs?)|conftest\.py|.*\.(test|spec)\.[jt]sx?|"
    r".*_spec\.rb|.*Tests?\.(java|cs|kt|scala|swift|php)|.*IT\.java|test-.*\.sh|tst-.*)$"
)


def language_of(path: str) -> str | None:
    """The language a file is written in, from its name (None when the name does not say)."""
    name = path.rsplit("/", 1)[-1]
    lower = name.lower()
    if lower in LANGUAGE_BY_NAME:
        return LANGUAGE_BY_NAME[lower]
    if lower.startswith("dockerfile"):
        return "dockerfile"
    if lower.endswith(".in") and len(lower) > 3:  # a configure input: `ldd.bash.in`, `Makefile.in`
        return language_of(path[:-3])
    dot = lower.rfind(".")
    if dot <= 0:
        return None
    return LANGUAGE_BY_EXT.get(lower[dot:])


@lru_cache(maxsize=65536)
def file_kind(path: str) -> str:
    """source, config, test, docs, vendored or generated.

    The directory decides first (vendored, generated, tests, docs); then the language: a file in a
    programming language is source (`history.c`), a prose file or a conventional name such as
    README or LICENSE is docs, a YAML/TOML/JSON/HCL file is config."""
    if _GENERATED.search(path):
        return "generated"
    if _VENDORED.search(path):
        return "vendored"
    name = path.rsplit("/", 1)[-1]
    if _TEST_DIR.search(path) or _TEST_NAME.match(name):
        return "test"
    if _DOCS_DIR.search(path):
        return "docs"
    language = language_of(path)
    if language in CONFIG_LANGUAGES:
        return "config"
    if language is not None:
        return "source"
    dot = name.rfind(".")
    if (dot > 0 and name[dot:].lower() in _PROSE_EXT) or _DOCS_NAME.match(name):
        return "docs"
    return "source"


_GENERATED_MARK = re.compile(
    r"Code generated .* DO NOT EDIT|@generated|[Aa]utogenerated|[Aa]uto-generated|"
    r"[Gg]enerated by .*(DO NOT EDIT|do not edit)|This file (is|was) (automatically )?generated"
)


def says_generated(head: list[str]) -> bool:
    """A generator's marker in a file's first lines (Go's 'Code generated … DO NOT EDIT', '@generated')."""
    return any(_GENERATED_MARK.search(line) for line in head[:5])


_CPP_MARK = re.compile(r"^\s*(class|namespace|template\s*<|using\s+namespace|public:|private:)\b")
_CHART_TEMPLATE = re.compile(r"(^|/)templates/(.*/)?[^/]+\.(ya?ml|txt)$")


_SHEBANG = re.compile(r"^#!\s*\S*?(?:/env\s+(?:-\S+\s+)*)?/?(\w+?)[\d.]*(?:\s|$)")
_INTERPRETERS = {
    "sh": "bash", "bash": "bash", "dash": "bash", "ksh": "bash", "zsh": "bash", "ash": "bash",
    "python": "python", "ruby": "ruby", "node": "javascript", "php": "php", "perl": "perl",
}  # fmt: skip


def refine_language(language: str | None, lines: list[str], path: str = "") -> str | None:
    """What the first lines say: a script without an extension is in its `#!` interpreter's
    language; a `.h` header is C++ when it has a class, a namespace or a template; a chart's
    `templates/*.yaml` or `NOTES.txt` with `{{ }}` actions is a Go template."""
    if language is None and lines and lines[0].startswith("#!"):
        m = _SHEBANG.match(lines[0])
        return _INTERPRETERS.get(m.group(1)) if m is not None else None
    if language == "c" and any(_CPP_MARK.match(line) for line in lines[:400]):
        return "cpp"
    if _CHART_TEMPLATE.search(path) and any("{{" in line for line in lines[:400]):
        return "gotmpl-yaml" if language == "yaml" else "gotmpl"
    return language
