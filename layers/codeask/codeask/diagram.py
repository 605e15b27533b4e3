"""Mermaid diagrams in answers: find them, check they parse, and link them to a Mermaid editor."""

from __future__ import annotations

import base64
import json
import re
import zlib

EDITOR_HOME = "https://mermaid.live/edit"
EDITOR = EDITOR_HOME + "#pako:"
_FENCE_RE = re.compile(r"^```mermaid[ \t]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
_HEADER_RE = re.compile(r"^(flowchart|graph)(?:\s+(TB|TD|BT|RL|LR))?\s*;?$")
_ID = r"[A-Za-z_][\w.-]*"
# Node shapes: [x] (x) ([x]) [[x]] [(x)] ((x)) >x] {x} {{x}} [/x/] [\x\]; labels may be quoted.
_SHAPES = [
    (r"\(\[", r"\]\)"), (r"\[\[", r"\]\]"), (r"\[\(", r"\)\]"), (r"\(\(", r"\)\)"),
    (r"\{\{", r"\}\}"), (r"\[/", r"/\]"), (r"\[\\", r"\\\]"), (r"\[", r"\]"), (r"\(", r"\)"),
    (r"\{", r"\}"), (r">", r"\]"),
]  # fmt: skip
_LABEL = r'(?:"[^"\n]*"|[^\[\]\(\)\{\}"\n|]*)'
_NODE = re.compile(
    rf"^({_ID})(?:" + "|".join(f"{o}{_LABEL}{c}" for o, c in _SHAPES) + r")?(?::::\w+)?$"
)
_EDGE = re.compile(
    r"\s*(?:<?(?:--+|==+|-\.+-?)(?:[ox>]|\|[^|\n]*\|)?"
    r"|--[^->\n][^\n]*?--+>|==[^=>\n][^\n]*?==+>|-\.[^.\n]*?\.->)"
    r"(?:\|[^|\n]*\|)?\s*"
)
_KEYWORD_RE = re.compile(r"^(classDef|class|style|linkStyle|click|direction)\b")


def blocks(text: str) -> list[str]:
    """The source of every ```mermaid fenced block in an answer."""
    return [m.group(1).strip("\n") for m in _FENCE_RE.finditer(text)]


def _split_edges(stmt: str) -> list[str] | None:
    """`A --> B -->|x| C` -> ["A", "B", "C"]; None when the statement has no edge."""
    parts: list[str] = []
    pos = 0
    depth_chars = "[({"
    i = 0
    while i < len(stmt):
        ch = stmt[i]
        if ch == '"':
            j = stmt.find('"', i + 1)
            i = len(stmt) if j < 0 else j + 1
            continue
        if ch in depth_chars:
            close = {"[": "]", "(": ")", "{": "}"}[ch]
            j = stmt.find(close, i + 1)
            i = len(stmt) if j < 0 else j + 1
            continue
        m = _EDGE.match(stmt, i) if ch in "-=<" else None
        if m and m.end() > i + 1:
            parts.append(stmt[pos:i].strip())
            pos = i = m.end()
            continue
        i += 1
    if not parts:
        return None
    parts.append(stmt[pos:].strip())
    return parts


def validate(source: str) -> list[str]:
    """Problems that would stop Mermaid from drawing this flowchart; [] when it parses."""
    lines = [ln.strip() for ln in source.splitlines()]
    lines = [ln for ln in lines if ln and not ln.startswith("%%")]
    if not lines:
        return ["the diagram is empty"]
    if not _HEADER_RE.match(lines[0]):
        return [f"line 1: expected 'flowchart TD' (or graph/LR/…), got {lines[0]!r}"]
    errors: list[str] = []
    depth = 0
    for n, line in enumerate(lines[1:], 2):
        for stmt in (s.strip() for s in line.split(";")):
            if not stmt:
                continue
            if stmt == "end":
                depth -= 1
                if depth < 0:
                    errors.append(f"line {n}: 'end' without a 'subgraph'")
                    depth = 0
                continue
            if stmt.startswith("subgraph"):
                depth += 1
                continue
            if _KEYWORD_RE.match(stmt):
                continue
            nodes = _split_edges(stmt)
            for node in nodes if nodes is not None else [stmt]:
                for piece in (p.strip() for p in node.split("&")):
                    if not _NODE.match(piece):
                        errors.append(f"line {n}: cannot read node {piece!r}")
    if depth > 0:
        errors.append(f"{depth} 'subgraph' without 'end'")
    return errors


def editor_link(source: str) -> str:
    """A mermaid.live link with the diagram in the URL fragment: nothing is sent to a renderer
    until someone opens it, and the fragment itself never leaves the browser."""
    state = {"code": source, "mermaid": json.dumps({"theme": "default"}), "autoSync": True}
    packed = zlib.compress(json.dumps(state).encode("utf-8"), 9)
    return EDITOR + base64.urlsafe_b64encode(packed).decode("ascii").rstrip("=")


def decode_link(link: str) -> str:
    """The diagram source back out of an editor link (for tests and for people debugging)."""
    payload = link.split("#pako:", 1)[1]
    packed = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    return str(json.loads(zlib.decompress(packed))["code"])
