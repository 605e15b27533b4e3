"""Gitignore-style globs over snapshot-relative paths (the same meaning ripgrep's --glob gives them)."""

from __future__ import annotations

import functools
import re


def _segment_regex(glob: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(glob):
        c = glob[i]
        if c == "*":
            if glob.startswith("**", i):
                # `**/` is zero or more directories; a trailing `**` is everything below.
                if glob.startswith("**/", i):
                    out.append("(?:.*/)?")
                    i += 3
                    continue
                out.append(".*")
                i += 2
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "{" and (end := glob.find("}", i)) != -1:
            # `*.{c,h}`: one of the alternatives, as ripgrep's globs have it
            alternatives = glob[i + 1 : end].split(",")
            out.append("(?:" + "|".join(_segment_regex(a) for a in alternatives) + ")")
            i = end
        elif c == "[":
            end = glob.find("]", i + 2 if glob[i + 1 : i + 2] in ("!", "]") else i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = glob[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


@functools.lru_cache(maxsize=512)
def compile_glob(glob: str) -> re.Pattern[str]:
    """Compile a glob: without a `/` it matches a name at any depth, with one the path from the root.

    A match on a directory covers everything below it, so `secrets/` or `deploy/keys` deny a tree.
    """
    g = glob.strip()
    if not g:
        raise ValueError("empty glob")
    g = g.rstrip("/") or "/"
    anchored = "/" in g
    g = g.lstrip("/")
    body = _segment_regex(g)
    prefix = "" if anchored else "(?:.*/)?"
    return re.compile(f"^{prefix}{body}(?:/.*)?$", re.DOTALL)


def matches(glob: str, path: str) -> bool:
    return compile_glob(glob).match(path) is not None
