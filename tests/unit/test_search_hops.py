"""How-does-X-reach-Y questions in search-only answers: a long definition is cited down to its call
of the next place the question is about."""

from __future__ import annotations

from pathlib import Path

from codeask import search_only
from codeask.search import hops
from codeask.snapshot import RepoRef, Snapshot
from codeask.tools import Toolbox


def write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def test_hops_questions_are_recognised() -> None:
    assert hops.asks_for_hops("How does the value travel from the file to the check?")
    assert hops.asks_for_hops("How does a getaddrinfo() call end up reading /etc/hosts?")
    assert hops.asks_for_hops("When a checker reports a problem, walk me through the calls.")
    assert not hops.asks_for_hops("Where is the config file read?")
    assert not hops.asks_for_hops("How is the retry delay computed?")


def test_next_hop_is_the_call_of_the_best_other_definition() -> None:
    body = ["  int n = count (x);", "  if (n > 2)", "    return lookup_hosts (name, n);", "}"]
    worth = {"count": 1.0, "lookup_hosts": 5.0, "resolve": 9.0}
    assert hops.next_hop(body, 10, "resolve", worth) == 12
    assert hops.next_hop(body, 10, "resolve", {}) is None


def test_a_long_entry_point_is_cited_down_to_its_call_of_the_next_hop(tmp_path: Path) -> None:
    # Given an entry point whose call of the storage code is deep in a long body, on a line that
    # says none of the question's words
    steps = "".join(f"    step_{i} = prepare(req, {i})\n" for i in range(20))
    write(
        tmp_path,
        "app/router.py",
        "'''Routing.'''\n\n\ndef dispatch_request(req):\n"
        "    '''Take an incoming request from the router.'''\n"
        f"{steps}    save(req)\n    return step_0\n",
    )
    write(
        tmp_path,
        "app/storage.py",
        "'''Storage.'''\n\n\ndef save(req):\n    '''Write an incoming request to the database.'''\n"
        "    db.insert(req)\n",
    )
    write(tmp_path, "app/prep.py", "'''Prep.'''\n\n\ndef prepare(req, i):\n    return req\n")
    toolbox = Toolbox(Snapshot(tmp_path, "f" * 40, RepoRef("app", str(tmp_path))))
    # When the question asks how a request gets from the router to the database
    result = search_only.answer(
        "How does an incoming request get from the router to the database?", toolbox
    )
    # Then the entry point is cited from its definition down to the call of the storage code
    cited = {(e.path, e.line, e.end_line) for e in result.evidence}
    assert ("app/router.py", 4, 26) in cited
