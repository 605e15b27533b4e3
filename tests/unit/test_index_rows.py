"""A file's rows in the definitions index: the words the rows store are the vocabulary's words of
each name, scope, path and doc, whatever the build remembered from the files before it."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeask.search.definitions import extract
from codeask.search.filekinds import file_kind
from codeask.search.index_rows import (
    DEF_BITS,
    DOC_STOP,
    DOC_TOKENS,
    MAX_FILE_BYTES,
    FileRows,
    Row,
    Task,
    _read_head,
)
from codeask.search.vocabulary import tokens

# Small files in each of the languages the index reads, with names in every case style, docs
# that repeat between files, and plain English that the doc words leave out.
SNIPPETS = {
    "app/sessions/redirects.py": '''"""Sessions and their HTTP redirects."""

MAX_REDIRECTS = 30  # the most redirects a session follows


class SessionRedirectMixin:
    """Follows the redirects of a response, and drops the Authorization header on the way."""

    def should_strip_auth(self, old_url, new_url):
        """Whether the Authorization header is dropped when it is redirected to another host."""
        return old_url != new_url

    @property
    def getHTTPProxy(self):
        # the proxy the session was configured with
        return self.proxy
''',
    "src/net/retry.c": """/* Retrying a failed connection, with backoff. */
#include <stdio.h>

#define MAX_RETRIES 5  /* attempts before giving up */

struct retry_state {
    int attempts;
    long backoff_ms;
};

/* Doubles the backoff of a retry, up to its limit. */
static long next_backoff(struct retry_state *s)
{
    s->backoff_ms *= 2;
    return s->backoff_ms;
}
""",
    "web/src/tokens.js": """// Rotating the bot token before it expires.
const EXPIRY_MARGIN_S = 300;

/** Rotates a token that is about to expire. */
export function rotateExpiringToken(token) {
  return token;
}

class TokenStore {
  // Loads a token from the cache.
  load(key) {
    return this.cache.get(key);
  }
}
""",
    "pkg/queue/worker.go": """// Package queue runs the rate-limited queue worker.
package queue

// MaxInFlight is how many jobs one worker runs at once.
const MaxInFlight = 8

// Worker takes jobs off the queue.
type Worker struct {
	limit int
}

// Run takes jobs until the queue is closed.
func (w *Worker) Run() error {
	return nil
}
""",
    "charts/app/values.yaml": """# Settings of the app chart.
auth:
  # the password of the admin user
  postgresPassword: ""
  existingSecret: ""
rateLimit:
  perMinute: 60
""",
    "charts/app/templates/deployment.yaml": """apiVersion: apps/v1
kind: Deployment
spec:
  replicas: {{ .Values.replicaCount }}
  template:
    spec:
      containers:
        - name: app
          # the password of the admin user
          env: {{ .Values.auth.postgresPassword }}
""",
    "config/settings.json": '{"cache": {"redisUrl": "redis://localhost", "ttlSeconds": 60}}\n',
    "scripts/deploy.sh": """#!/bin/sh
# Deploys the app to the staging cluster.
deploy_staging() {
  kubectl apply -f k8s/
}
""",
    "docs/Retry-Policy.md": """# Retry policy

The worker retries a failed webhook with a backoff that doubles each time.
""",
}


def _expected(rel: str, text: str, file_id: int) -> tuple[Row, list[Row]]:
    """The rows, written out from the vocabulary's `tokens` alone (no remembering anything)."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    base = rel.rsplit("/", 1)[-1]
    bare = rel[: len(rel) - len(base)] + (base.rsplit(".", 1)[0] if "." in base[1:] else base)
    path_words = list(dict.fromkeys(tokens(bare)))
    file_row: Row = (file_id, rel, file_kind(rel), " ".join(path_words), None)
    defs: list[Row] = []
    for k, d in enumerate(extract(rel, lines, text.encode())):
        nw, sw = tokens(d.name), tokens(" ".join(d.scope))
        dw = [w for w in tokens(d.doc) if w not in DOC_STOP][:DOC_TOKENS]
        defs.append((file_id << DEF_BITS | k, file_id, d.line, d.end, d.kind, d.name,
                     "\x1f".join(d.scope), " ".join(nw), " ".join(sw), " ".join(dw),
                     len(nw) + len(sw) + len(dw) + len(path_words)))  # fmt: skip
    return file_row, defs


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for rel, text in SNIPPETS.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


def test_rows_store_the_vocabulary_words_of_each_file_in_every_language(tree: Path) -> None:
    rows = FileRows(str(tree))
    # twice over, so that the second pass reads every name, scope, doc and word remembered
    for round_ in range(2):
        for i, (rel, text) in enumerate(SNIPPETS.items(), 1):
            file_id = round_ * 100 + i
            files: list[Row] = []
            defs: list[Row] = []
            rows.add(Task(rel, file_id, None), files, defs)
            file_row, expected = _expected(rel, text, file_id)
            assert files == [file_row], rel
            assert defs == expected, rel
            assert len(defs) > 1 or rel.endswith(".md"), rel  # each snippet defines something


def test_a_word_written_in_two_cases_is_one_stem_and_docs_stop_at_their_limit(tree: Path) -> None:
    long_doc = " ".join(f"W{i} a" for i in range(100))  # over DOC_TOKENS words in DOC_CHARS
    (tree / "a.py").write_text(f"# {long_doc}\ndef Retry_WEBHOOKS():\n    pass\n")
    (tree / "b.py").write_text(f"# {long_doc}\ndef retry_webhooks():\n    pass\n")
    rows = FileRows(str(tree))
    files: list[Row] = []
    defs: list[Row] = []
    rows.add(Task("a.py", 1, None), files, defs)
    rows.add(Task("b.py", 2, None), files, defs)
    by_name = {d[5]: d for d in defs}
    assert by_name["Retry_WEBHOOKS"][7] == by_name["retry_webhooks"][7] == "retry webhook"
    doc = by_name["retry_webhooks"][9]
    assert isinstance(doc, str)
    assert doc.split() == [f"w{i}" for i in range(DOC_TOKENS)]
    assert by_name["Retry_WEBHOOKS"][9] == doc and "a" not in doc.split()


@pytest.mark.parametrize("size", [0, 1, 99, 100, 101, 5000])
def test_a_file_is_read_to_its_end_or_one_byte_past_the_limit(tmp_path: Path, size: int) -> None:
    data = bytes(range(256)) * 20
    (tmp_path / "f").write_bytes(data[:size])
    assert _read_head(str(tmp_path / "f"), 101) == data[: min(size, 101)]


def test_oversized_binary_and_missing_files_have_no_rows(tmp_path: Path) -> None:
    (tmp_path / "big.py").write_text("x = 1\n" * (MAX_FILE_BYTES // 6 + 1))
    (tmp_path / "blob.py").write_bytes(b"def f():\n    pass\n\x00")
    (tmp_path / "ok.py").write_text("def f():\n    pass\n")
    files: list[Row] = []
    defs: list[Row] = []
    rows = FileRows(str(tmp_path))
    for i, rel in enumerate(["big.py", "blob.py", "gone.py", "ok.py"], 1):
        rows.add(Task(rel, i, None), files, defs)
    assert [f[1] for f in files] == ["ok.py"]
    assert [d[5] for d in defs] == ["ok.py", "f"]
