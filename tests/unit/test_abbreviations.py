"""The short forms code writes for a question's words: a word's (`buf`), a pair of words' (`fd`)."""

from __future__ import annotations

from pathlib import Path

from codeask import search_only
from codeask.search.abbreviations import PHRASE_WEIGHT, WORD_WEIGHT, abbreviations
from codeask.search.vocabulary import stem
from codeask.snapshot import RepoRef, Snapshot
from codeask.tools import Toolbox
from conftest import write


def test_a_words_abbreviations_are_found_by_any_of_its_forms() -> None:
    assert abbreviations(["buffered"]) == [("buffered", (stem("buf"),), WORD_WEIGHT)]
    assert abbreviations(["Context"]) == [("context", ("ctx",), WORD_WEIGHT)]
    assert abbreviations(["zebra", "the"]) == []


def test_two_neighbouring_words_find_their_short_form_in_either_order() -> None:
    assert ("file descriptors", ("fd",), PHRASE_WEIGHT) in abbreviations(["file", "descriptors"])
    assert ("maps memory", ("mmap",), PHRASE_WEIGHT) in abbreviations(["heap", "maps", "memory"])
    # words apart in the question are not a phrase
    assert not [a for a in abbreviations(["file", "open", "descriptor"]) if a[1] == ("fd",)]


def test_question_groups_add_abbreviations_of_plain_words_only() -> None:
    groups = search_only.question_groups("Where is the buffer set in `init_buffer`?")
    short = [g for g in groups if g[0] == ("buf",)]
    assert short == [(("buf",), WORD_WEIGHT, "buffer")]
    # the quoted identifier's own words are the code's words already: no `init` for 'init'
    named = search_only.question_groups("Where is `initialize_table` defined?")
    assert not [g for g in named if "init" in g[0]]


def test_code_that_says_fd_answers_a_question_about_file_descriptors(tmp_path: Path) -> None:
    # Given a function that redirects an fd, and one that redirects a stream and says so twice
    write(tmp_path, "app/capture.py", "import os\n\n\ndef redirect_fd(fd, target):\n"
                                      "    os.dup2(target, fd)\n")  # fmt: skip
    write(tmp_path, "app/streams.py", "def redirect_stream(stream, target):\n"
                                      "    '''Redirect a stream: the redirect is undone later.'''\n"
                                      "    stream.target = target\n")  # fmt: skip
    for i in range(6):
        write(tmp_path, f"app/mod{i}.py", f"def f{i}(stream):\n    return stream\n")
    snap = Snapshot(tmp_path, "c" * 40, RepoRef("fds", str(tmp_path)))
    # When the question says 'file descriptors', not `fd`
    result = search_only.answer("Where do we redirect the file descriptors?", Toolbox(snap))
    # Then the code that names them `fd` comes first
    assert result.evidence[0].path == "app/capture.py"
