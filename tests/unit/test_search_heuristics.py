"""Line heuristics for languages without a grammar: definitions and enclosing scopes by indentation."""

from __future__ import annotations

import pytest

from codeask.search.heuristics import enclosing_scope, is_definition, looks_like_comment

SOURCE = """\
import os


def has_leading_dir(paths):
    return all(p.startswith("/") for p in paths)


def is_within_directory(directory, target):
    abs_directory = os.path.abspath(directory)
    return target.startswith(abs_directory)


class Factory:
    def get_installation_error(self, e):
        def describe_trigger(parent):
            return str(parent)

        if e.causes:
            msg = "Cannot install because these package versions have conflicting dependencies."
            return msg

    def _prompt(self):
        pass
"""
LINES = SOURCE.splitlines()


def line_of(text: str) -> int:
    return next(i for i, line in enumerate(LINES, 1) if text in line)


@pytest.mark.parametrize(
    ("needle", "scope"),
    [
        ("def is_within_directory", None),  # a top-level def has no enclosing scope
        ("abs_directory = os.path", "def is_within_directory(directory, target):"),
        ("Cannot install", "class Factory › def get_installation_error(self, e):"),
        ("def _prompt", "class Factory:"),
        ("return str(parent)", "def get_installation_error › def describe_trigger(parent):"),
        ("import os", None),
    ],
)
def test_enclosing_scope_follows_ancestors_not_siblings(needle: str, scope: str | None) -> None:
    assert enclosing_scope(LINES, line_of(needle)) == scope


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("def retry_job(job):", True),
        ("    async def fetch(self):", True),
        ("export default async function handler(req, res) {", True),
        ("func (s *Server) Serve() error {", True),
        ("pub fn parse(input: &str) -> Result<Ast> {", True),
        ("class RetryPolicy(Base):", True),
        ("MAX_RETRIES = 5", True),
        ("    retry_job(job)", False),
        ("# we retry the job here", False),
        ("if retries > MAX_RETRIES:", False),
    ],
)
def test_is_definition(line: str, expected: bool) -> None:
    assert is_definition(line) is expected


@pytest.mark.parametrize(
    ("line", "language", "expected"),
    [
        ("# retry the job", "python", True),
        ("// retry the job", "go", True),
        (" * retry the job", "c", True),
        ("#include <stdio.h>", "c", False),
        ("#define RETRIES 3", "cpp", False),
        ("    *flags = 0;", "c", False),
        ("retry_job(job)", "python", False),
    ],
)
def test_looks_like_comment(line: str, language: str, expected: bool) -> None:
    assert looks_like_comment(line, language) is expected
