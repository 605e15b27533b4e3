"""Mermaid diagrams: found in answers, checked to parse, linked to an editor with the source in the fragment."""

from __future__ import annotations

import pytest

from codeask import diagram

GOOD = [
    'flowchart TD\n  A[Slack event] --> B(slack_events)\n  B -->|SQS| C{answer_worker}\n  C --> D["billing/worker.py:6"]',
    "graph LR\n  A --> B --> C\n  A -.-> C\n  B ==> D((done))",
    "flowchart TB\n  subgraph ack [Ack path]\n    A[verify] --> B[queue]\n  end\n  B --> C\n  classDef hot fill:#f96\n  class A hot",
    "flowchart TD\n  A -- retries --> B\n  A & B --> C[[sub]]\n  %% a comment\n  C --> E[(db)]",
]
BAD = [
    ("", "empty"),
    ("sequenceDiagram\n  A->>B: hi", "line 1"),
    ("flowchart TD\n  A[unclosed --> B", "cannot read node"),
    ("flowchart TD\n  subgraph x\n  A --> B", "without 'end'"),
    ("flowchart TD\n  A --> B\n  end", "'end' without"),
    ("flowchart TD\n  A[x] B[y]", "cannot read node"),
]


@pytest.mark.parametrize("source", GOOD)
def test_valid_flowcharts_parse(source: str) -> None:
    assert diagram.validate(source) == []


@pytest.mark.parametrize(("source", "problem"), BAD)
def test_broken_diagrams_say_what_is_wrong(source: str, problem: str) -> None:
    errors = diagram.validate(source)
    assert errors and problem in " ".join(errors)


def test_blocks_are_found_in_an_answer() -> None:
    answer = (
        f"Here is the flow:\n\n```mermaid\n{GOOD[0]}\n```\n\nand code:\n```python\nx = 1\n```\n"
    )
    assert diagram.blocks(answer) == [GOOD[0]]


def test_editor_link_carries_the_source_in_the_fragment_only() -> None:
    link = diagram.editor_link(GOOD[1])
    assert link.startswith("https://mermaid.live/edit#pako:")
    assert "?" not in link  # nothing in the query string: the fragment never reaches a server
    assert diagram.decode_link(link) == GOOD[1]
