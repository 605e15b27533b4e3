"""Path kinds, definitions and enclosing scopes: the signals that rank search hits."""

from __future__ import annotations

import pytest

from codeask.relevance import enclosing_scope, is_definition, path_kind

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
    ("path", "kind"),
    [
        ("src/billing/worker.py", "source"),
        ("tests/test_worker.py", "test"),
        ("web/app.test.ts", "test"),
        ("docs/guide.md", "docs"),
        ("README.md", "docs"),
        ("vendor/github.com/x/y.go", "vendored"),
        ("package-lock.json", "generated"),
        ("api/service_pb2.py", "generated"),
        ("config/app.yaml", "config"),
    ],
)
def test_path_kind(path: str, kind: str) -> None:
    assert path_kind(path) == kind


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
