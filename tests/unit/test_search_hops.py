"""How-does-X-reach-Y questions in search-only answers: a long definition is cited down to its call
of the next place the question is about."""

from __future__ import annotations

from pathlib import Path

from codeask import search_only
from codeask.search import hops
from codeask.snapshot import RepoRef, Snapshot
from codeask.tools import Toolbox
from conftest import write


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


def test_the_functions_a_question_writes_as_calls_are_where_the_path_starts() -> None:
    q = "How does a getaddrinfo() call end up in os.open()? And getaddrinfo() again, not ()."
    assert hops.start_names(q) == ["getaddrinfo", "open"]
    assert hops.start_names("How does the exit status reach the parent?") == []


def test_a_start_the_question_calls_is_cited_down_to_the_helper_it_hands_on_to(
    tmp_path: Path,
) -> None:
    # Given an entry point whose work goes on in the longest helper of its own file, called on a
    # line that says none of the question's words (the next line says them), and a function
    # elsewhere that says them all
    setup = "".join(f"    opts_{i} = normalise(name, {i})\n" for i in range(16))
    write(
        tmp_path,
        "net/lookup.py",
        "'''Name lookups.'''\n\n\ndef resolve_name(name):\n"
        f"{setup}    found = _scan_sources(name, opts_0)\n"
        "    # the hosts file lines were read: end of reading\n    return tidy(found)\n\n\n"
        "def _scan_sources(name, opts):\n"
        + "".join(f"    step_{i} = opts + {i}\n" for i in range(8))
        + "    return name\n\n\ndef tidy(found):\n    return found\n",
    )
    write(tmp_path, "net/norm.py", "'''Norm.'''\n\n\ndef normalise(name, i):\n    return name\n")
    write(
        tmp_path,
        "net/hostsfile.py",
        "'''The hosts file.'''\n\n\ndef read_hosts_file(path):\n"
        "    '''Read the hosts file: each line a name and its address.'''\n"
        "    return open(path).read()\n",
    )
    toolbox = Toolbox(Snapshot(tmp_path, "e" * 40, RepoRef("net", str(tmp_path))))
    # When the question writes the entry point as a call
    result = search_only.answer(
        "How does a resolve_name() call end up reading the hosts file?", toolbox
    )
    # Then the entry point is cited first, down to its call of its own helper
    first = result.evidence[0]
    assert (first.path, first.line, first.end_line) == ("net/lookup.py", 4, 21)


def test_the_start_the_question_calls_is_cited_first_over_better_scoring_places(
    tmp_path: Path,
) -> None:
    # Given a short entry point that says none of the question's words, and functions elsewhere
    # that say them all, over and over
    write(tmp_path, "jobs/run.py", "def run_job(job):\n    return job.go()\n")
    says = "    # a job run writes the nightly sales report file to the shared disk\n" * 5
    for i in range(3):
        write(
            tmp_path,
            f"jobs/report{i}.py",
            f"def write_nightly_sales_report_file_to_shared_disk_{i}(report, file):\n"
            f"{says}    file.write(report)\n",
        )
    for i in range(6):
        write(tmp_path, f"jobs/mod{i}.py", f"def f{i}(x):\n    return x\n")
    toolbox = Toolbox(Snapshot(tmp_path, "f" * 40, RepoRef("jobs", str(tmp_path))))
    # When the question writes the entry point as a call
    result = search_only.answer(
        "How does a run_job() call end up writing the nightly sales report file to the shared "
        "disk?",
        toolbox,
    )
    # Then the path is told from where it starts: the entry point first (it scores less than
    # each of the others), the others after it
    paths = [e.path for e in result.evidence]
    assert paths[0] == "jobs/run.py"
    assert set(paths[1:4]) == {f"jobs/report{i}.py" for i in range(3)}
