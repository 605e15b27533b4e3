"""The short forms code writes for a question's words: a word's (`buf`), a pair of words' (`fd`)."""

from __future__ import annotations

from pathlib import Path

from codeask import search_only
from codeask.search.abbreviations import PARTICLE_GAP, PHRASE_WEIGHT, WORD_WEIGHT, abbreviations
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


def test_a_phrasal_verb_split_around_its_object_finds_the_word_code_writes() -> None:
    put_back = (stem("restore"), "rollback", "revert")
    words = "how does pip put the previous version's files back".split()
    assert ("put back", put_back, PHRASE_WEIGHT) in abbreviations(words)
    # inflected and irregular verbs, and the particle right after the verb
    assert ("written out", ("flush",), PHRASE_WEIGHT) in abbreviations("gets written out".split())
    assert ("cleans up", ("cleanup",), PHRASE_WEIGHT) in abbreviations(["cleans", "up"])
    # a particle too far from its verb belongs to something else, and a verb alone is no phrase
    far = ["put", *["x"] * PARTICLE_GAP, "back"]
    assert not [a for a in abbreviations(far) if a[0] == "put back"]
    assert not [a for a in abbreviations("set the flag".split()) if a[0].startswith("set")]


def test_code_that_rolls_back_answers_a_question_about_putting_files_back(tmp_path: Path) -> None:
    # Given the function that puts moved files back, named and written in other words, and
    # functions that say the question's own words
    write(tmp_path, "app/stash.py", "def rollback(self):\n    for p in self.moved:\n"
                                    "        p.rename(p.old)\n")  # fmt: skip
    for i in range(3):
        write(tmp_path, f"app/previous{i}.py", f"def previous_files_{i}(files):\n"
                                               "    '''The previous version's files.'''\n"
                                               "    return files\n")  # fmt: skip
    for i in range(6):
        write(tmp_path, f"app/mod{i}.py", f"def f{i}(x):\n    return x\n")
    snap = Snapshot(tmp_path, "d" * 40, RepoRef("stash", str(tmp_path)))
    # When the question says "put ... back"
    result = search_only.answer(
        "If an upgrade fails, how are the previous version's files put back?", Toolbox(snap)
    )
    # Then the rollback is the first place
    assert result.evidence[0].path == "app/stash.py"


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
