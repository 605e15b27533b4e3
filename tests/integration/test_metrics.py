"""The EMF documents the real handlers print, held to the metric catalogue that the dashboard reads.

Each test runs handlers in-process on the loopback stack and parses what powertools printed on
stdout (one JSON document per flush): names, units, dimensions and values, as CloudWatch would
ingest them. A metric renamed in the code, or emitted outside the catalogue, fails here; the
dashboard and alarms are held to the same catalogue in tests/unit/test_dashboard.py.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import pytest

from codeask.ops import CATALOGUE, NAMESPACE
from fakes.messages_api import Reply, text, tool_use
from fakes.stack import (
    CHANNEL,
    EVENTS,
    Context,
    Stack,
    click,
    emf_documents,
    event,
    load_handler,
    sqs_job_event,
)

ANSWER = "Failed jobs are retried by `retry_job` (`billing/worker.py:6-11`)."

# Metrics that powertools itself adds (capture_cold_start_metric=True on the worker): not codeask's
# own, so not in the catalogue; listed here with the dimensions powertools gives them.
POWERTOOLS_OWN = {"ColdStart": ("Count", {"function_name", "service"})}


@dataclass(frozen=True)
class Emitted:
    name: str
    unit: str
    namespace: str
    dims: dict[str, str]
    values: tuple[float, ...]
    doc_metrics: tuple[str, ...]  # every metric flushed in the same document


def emitted(out: str) -> list[Emitted]:
    """Every metric of every EMF document in `out`, with the dimension values it carries."""
    found = []
    for doc in emf_documents(out):
        for directive in doc["_aws"]["CloudWatchMetrics"]:
            names = tuple(m["Name"] for m in directive["Metrics"])
            assert len(directive["Dimensions"]) == 1, "one dimension set per document"
            dims = {d: doc[d] for d in directive["Dimensions"][0]}
            for m in directive["Metrics"]:
                raw = doc[m["Name"]]
                values = tuple(float(v) for v in (raw if isinstance(raw, list) else [raw]))
                found.append(
                    Emitted(m["Name"], m["Unit"], directive["Namespace"], dims, values, names)
                )
    return found


def by_name(metrics: list[Emitted]) -> dict[str, list[Emitted]]:
    out: dict[str, list[Emitted]] = {}
    for m in metrics:
        out.setdefault(m.name, []).append(m)
    return out


def assert_catalogued(metrics: list[Emitted]) -> None:
    """Every printed metric is a catalogue entry with its unit and exactly its dimensions."""
    assert metrics, "the handlers printed no EMF document"
    for m in metrics:
        assert m.namespace == NAMESPACE, m
        assert m.dims.get("service") == "codeask", m
        if m.name in POWERTOOLS_OWN:
            own_unit, dims = POWERTOOLS_OWN[m.name]
            assert (m.unit, set(m.dims)) == (own_unit, dims), m
            continue
        assert m.name in CATALOGUE, f"{m.name} is emitted but not in ops.CATALOGUE"
        unit, split = CATALOGUE[m.name]
        assert m.unit == unit.value, m
        assert set(m.dims) == {"service"} | ({split} if split else set()), m
        if split:
            assert m.dims[split], m
            # a split metric is flushed alone: the batch's dimension set is service only
            assert m.doc_metrics == (m.name,), m


def one(metrics: list[Emitted], name: str) -> Emitted:
    found = by_name(metrics).get(name, [])
    assert len(found) == 1, f"{name}: {found}"
    return found[0]


def has_tool_results(body: dict[str, Any]) -> bool:
    """Whether a request to the model carries tool results (the tools have run once)."""
    return any(
        isinstance(b, dict) and b.get("type") == "tool_result"
        for m in body["messages"]
        for b in (m["content"] if isinstance(m["content"], list) else [])
    )


def model_answers(stack: Stack) -> None:
    def script(body: dict[str, Any]) -> Any:
        if has_tool_results(body):
            return Reply([text(ANSWER)])
        return Reply([tool_use("search_code", {"pattern": "def retry_job"})])

    stack.model.script = script


def ack(ev: dict[str, Any]) -> dict[str, Any]:
    return load_handler("slack_events")(ev, Context(remaining_ms=3000))  # type: ignore[no-any-return]


def work(records: list[dict[str, Any]]) -> dict[str, Any]:
    return load_handler("answer_worker")({"Records": records}, Context())  # type: ignore[no-any-return]


def warm() -> dict[str, Any]:
    schedule = json.loads((EVENTS / "schedule.json").read_text())
    return load_handler("mirror_warmer")(schedule, Context())  # type: ignore[no-any-return]


def mention_now(**overrides: Any) -> dict[str, Any]:
    """events/app_mention.json re-signed, stamped with the current event_time (end-to-end clock)."""
    return event("app_mention", event_time=int(time.time()), **overrides)


@pytest.fixture(autouse=True)
def lambda_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "codeask")  # as Globals sets it on Lambda


# ------------------------------------------------------------------ the ack


def test_a_queued_question_counts_once_with_its_ack_latency(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    ev = mention_now()
    started = time.monotonic()
    assert ack(ev)["statusCode"] == 200
    took_ms = (time.monotonic() - started) * 1000
    metrics = emitted(capsys.readouterr().out)
    assert_catalogued(metrics)
    assert one(metrics, "QuestionsReceived").values == (1.0,)
    latency = one(metrics, "AckLatency")
    assert latency.unit == "Milliseconds" and latency.dims == {"service": "codeask"}
    # the figure is the ack's own time: within what this test saw it take (no speed threshold)
    assert 0 < latency.values[0] <= took_ms
    assert {m.name for m in metrics} == {"QuestionsReceived", "AckLatency"}


@pytest.mark.parametrize(
    ("name", "overrides", "reason"),
    [
        ("dm", {}, "dm"),
        ("slack_connect", {}, "shared"),
        ("app_mention", {"event_id": "Ev0OTHER01", "event.channel": "C0NOTCONF1"}, "channel"),
    ],
)
def test_refusals_carry_their_reason(
    stack: Stack,
    capsys: pytest.CaptureFixture[str],
    name: str,
    overrides: dict[str, Any],
    reason: str,
) -> None:
    capsys.readouterr()
    assert ack(event(name, **overrides))["statusCode"] == 200
    metrics = emitted(capsys.readouterr().out)
    assert_catalogued(metrics)
    refusal = one(metrics, "Refusals")
    assert refusal.dims == {"service": "codeask", "Reason": reason}
    assert refusal.values == (1.0,) and refusal.unit == "Count"
    assert "QuestionsReceived" not in by_name(metrics)
    assert one(metrics, "AckLatency").unit == "Milliseconds"


def test_bad_signatures_duplicates_and_failed_enqueues_are_counted(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert ack(event("app_mention", secret="not-the-secret"))["statusCode"] == 401
    assert ack(mention_now())["statusCode"] == 200
    assert ack(event("slack_retry"))["statusCode"] == 200
    stack.sqs().delete_queue(QueueUrl=stack.queue_url)
    other = mention_now(**{"event_id": "Ev0LOST01", "event.ts": "1764430100.000100"})
    assert ack(other)["statusCode"] == 500
    metrics = emitted(capsys.readouterr().out)
    assert_catalogued(metrics)
    names = by_name(metrics)
    assert one(metrics, "UnauthorizedRequests").values == (1.0,)
    assert one(metrics, "DuplicateDeliveries").values == (1.0,)
    assert one(metrics, "AckErrors").values == (1.0,)
    assert len(names["AckLatency"]) == 4  # every request, whatever its outcome


# ------------------------------------------------------------------ the worker


def test_an_answer_emits_its_latency_cost_and_trust_figures(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    model_answers(stack)
    asked = time.time()
    ack(mention_now())
    records = stack.queued()
    capsys.readouterr()
    assert work(records) == {"batchItemFailures": []}
    since_asked = time.time() - asked
    metrics = emitted(capsys.readouterr().out)
    assert_catalogued(metrics)
    assert one(metrics, "AnswersPosted").values == (1.0,)
    e2e = one(metrics, "EndToEndLatency")
    # from Slack's event_time (whole seconds) to the answer: within what this test saw
    assert e2e.unit == "Seconds" and 0 <= e2e.values[0] <= since_asked + 1
    assert one(metrics, "SyncLatency").unit == "Milliseconds"
    # the stack's repository is on this disk, read in place: there is nothing to fetch
    assert one(metrics, "SyncFetches").values == (0.0,)
    assert one(metrics, "ModelRounds").values == (2.0,)  # one search, then the answer
    assert one(metrics, "ToolCalls").values == (1.0,)
    tokens = {n: one(metrics, n).values[0] for n in ("InputTokens", "OutputTokens",
              "CacheReadTokens", "CacheWriteTokens")}  # fmt: skip
    assert tokens["OutputTokens"] > 0 and sum(tokens.values()) > tokens["OutputTokens"]
    cost = one(metrics, "EstimatedCostUSD")
    assert cost.unit == "None" and 0 < cost.values[0] < 1
    for name in ("UnverifiedPaths", "AnswersWithUnverifiedPaths", "ModelFallbacks",
                 "StoppedEarly"):  # fmt: skip
        assert one(metrics, name).values == (0.0,), name
    assert "Redactions" not in by_name(metrics)  # split by kind: nothing redacted, nothing sent
    # the per-answer figures go out together, in one document with service as the only dimension
    answer_doc = one(metrics, "AnswersPosted").doc_metrics
    assert {"EndToEndLatency", "EstimatedCostUSD", "UnverifiedPaths"} <= set(answer_doc)


def test_redactions_are_counted_per_kind(stack: Stack, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a repository whose deploy config holds a password, a JWT and a Kubernetes Secret
    jwt = ".".join(
        ("eyJ" + "hbGciOiJIUzI1NiJ9", "eyJ" + "zdWIiOiIxMjM0NTY3ODkwIn0", "c2lnbmF0dXJl")
    )
    stack.repo.commit(
        {
            "deploy/app.yaml": "db:\n  password: Tr0ub4dor-and-3\n  session: " + jwt + "\n",
            "deploy/secret.yaml": "kind: Secret\ndata:\n  user: YWRtaW4=\n  pass: aHVudGVyMg==\n",
        },
        message="deploy config",
    )

    def script(body: dict[str, Any]) -> Any:
        if has_tool_results(body):
            return Reply([text("The database settings are in `deploy/app.yaml:1`.")])
        return Reply([tool_use("read_file", {"path": "deploy/app.yaml"}),
                      tool_use("read_file", {"path": "deploy/secret.yaml"})])  # fmt: skip

    stack.model.script = script
    ack(mention_now())
    records = stack.queued()
    capsys.readouterr()

    # When the worker answers, the model having read both files
    assert work(records) == {"batchItemFailures": []}

    # Then each kind of secret kept from the model is its own Redactions metric
    metrics = emitted(capsys.readouterr().out)
    assert_catalogued(metrics)
    kinds = {m.dims["Kind"]: m.values for m in by_name(metrics)["Redactions"]}
    assert kinds == {"secret-assignment": (1.0,), "jwt": (1.0,), "kubernetes-secret": (2.0,)}
    sent = json.dumps([r.body for r in stack.model.requests])
    assert "Tr0ub4dor-and-3" not in sent and jwt not in sent and "aHVudGVyMg==" not in sent


def test_a_search_only_answer_counts_a_model_fallback(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    from fakes.messages_api import Fail

    stack.model.script = lambda body: Fail(529)
    ack(mention_now())
    records = stack.queued()
    capsys.readouterr()
    load_handler("answer_worker")({"Records": records}, Context(remaining_ms=28_000))
    metrics = emitted(capsys.readouterr().out)
    assert_catalogued(metrics)
    assert one(metrics, "AnswersPosted").values == (1.0,)
    assert one(metrics, "ModelFallbacks").values == (1.0,)


def test_a_redelivered_job_is_skipped_and_counted(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    model_answers(stack)
    ack(mention_now())
    records = stack.queued()
    work(records)
    capsys.readouterr()
    assert work(records) == {"batchItemFailures": []}
    metrics = emitted(capsys.readouterr().out)
    assert_catalogued(metrics)
    assert one(metrics, "JobsSkipped").values == (1.0,)
    assert "AnswersPosted" not in by_name(metrics)


def test_a_job_that_fails_for_good_counts_an_error_of_kind_answer_failed(
    stack: Stack, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from codeask import lambdas

    # WorkerErrorRateAlarm in template.yaml watches exactly this Kind value.
    # Given the channel's repo now points at a path that is no repository (a clear, final error)
    config = {"repos": {"billing": {"url": str(stack.tmp / "moved-away")}},
              "channels": {CHANNEL: ["billing"]}}  # fmt: skip
    monkeypatch.setenv("CODEASK_CONFIG", json.dumps(config))
    lambdas.reset_settings()
    capsys.readouterr()
    assert work(sqs_job_event()["Records"]) == {"batchItemFailures": []}
    metrics = emitted(capsys.readouterr().out)
    assert_catalogued(metrics)
    error = one(metrics, "Errors")
    assert error.dims == {"service": "codeask", "Kind": "answer_failed"}
    assert error.values == (1.0,) and error.unit == "Count"
    assert "AnswersPosted" not in by_name(metrics)


def test_a_job_for_a_repo_the_channel_may_no_longer_read_counts_a_refusal(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    ev = sqs_job_event()
    body = json.loads(ev["Records"][0]["body"])
    body["repos"] = ["no-longer-configured"]
    ev["Records"][0]["body"] = json.dumps(body)
    capsys.readouterr()
    assert work(ev["Records"]) == {"batchItemFailures": []}
    metrics = emitted(capsys.readouterr().out)
    assert_catalogued(metrics)
    refusal = one(metrics, "Refusals")
    assert refusal.dims == {"service": "codeask", "Reason": "repos"}
    assert "Errors" not in by_name(metrics) and "AnswersPosted" not in by_name(metrics)


# ------------------------------------------------------------------ the warmer


def test_the_warmer_reports_mirror_age_per_repo_and_failures_per_repo(
    stack: Stack, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from codeask import lambdas

    config = {
        "repos": {"billing": {"url": str(stack.repo.path)}, "gone": {"url": str(stack.tmp / "no")}},
        "channels": {CHANNEL: ["billing"]},
    }
    monkeypatch.setenv("CODEASK_CONFIG", json.dumps(config))
    lambdas.reset_settings()
    capsys.readouterr()
    assert warm()["failed"] == ["gone"]
    metrics = emitted(capsys.readouterr().out)
    assert_catalogued(metrics)
    ages = {m.dims["Repo"]: m for m in metrics if m.name == "MirrorAge"}
    assert set(ages) == {"billing", "gone"}
    age = ages["billing"]
    assert age.dims == {"service": "codeask", "Repo": "billing"}
    assert age.unit == "Seconds" and 0 <= age.values[0] < 60  # just fetched
    assert ages["gone"].values == (lambdas.NEVER_SYNCED_AGE_S,)  # never synced: the alarm sees it
    failure = one(metrics, "MirrorWarmFailures")
    assert failure.dims == {"service": "codeask", "Repo": "gone"} and failure.values == (1.0,)


# ------------------------------------------------------------------ the whole catalogue


def test_these_paths_emit_every_catalogued_metric_and_nothing_else(
    stack: Stack, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every catalogue entry is printed by some handler path, so none is a dead dashboard line."""
    from codeask import lambdas

    model_answers(stack)
    jwt = ".".join(("eyJ" + "hbGciOiJIUzI1NiJ9", "eyJ" + "zdWIiOiIxMjM0NTY3ODkwIn0", "c2ln"))
    stack.repo.commit({"billing/tokens.py": f"def retry_job_token(): return '{jwt}'\n"})  # redacted
    capsys.readouterr()
    ack(mention_now())  # queued
    ack(event("slack_retry"))  # duplicate
    ack(event("dm"))  # refused
    ack(event("app_mention", secret="wrong"))  # unauthorized
    records = stack.queued()
    work(records)  # answered
    job = json.loads(records[0]["body"])
    ack(click("codeask_feedback_down", "U0ALICE", f"{job['channel']}:{job['message_ts']}"))  # vote
    work(records)  # skipped
    # a snapshot whose manifest went missing on disk: written again, counted as a repair
    manifests = list((stack.tmp / "snapshots").glob("*/*/.codeask-snapshot"))
    assert manifests
    for manifest in manifests:
        manifest.parent.chmod(0o755)
        manifest.unlink()
    ack(mention_now(**{"event_id": "Ev0AGAIN1", "event.ts": "1764430050.000100"}))
    work(stack.queued())  # answered, after the repair
    config = {
        "repos": {
            "billing": {"url": str(stack.repo.path), "branch": "main"},  # as the stack's config
            "gone": {"url": str(stack.tmp / "no")},
        },
        "channels": {CHANNEL: ["billing", "gone"]},
    }
    monkeypatch.setenv("CODEASK_CONFIG", json.dumps(config))
    lambdas.reset_settings()
    failing = sqs_job_event()["Records"]
    body = json.loads(failing[0]["body"])
    failing[0]["body"] = json.dumps(
        {**body, "repos": ["gone"], "event_id": "Ev0GONE01",
         "message_ts": "1764430200.000100", "thread_ts": "1764430200.000100"}
    )  # fmt: skip
    work(failing)  # failed for good: the repo is no repository any more
    stack.sqs().delete_queue(QueueUrl=stack.queue_url)
    ack(mention_now(**{"event_id": "Ev0LOST01", "event.ts": "1764430100.000100"}))  # ack error
    warm()
    metrics = emitted(capsys.readouterr().out)
    assert_catalogued(metrics)
    seen = {m.name for m in metrics} - set(POWERTOOLS_OWN)
    assert sorted(set(CATALOGUE) - seen) == [], "catalogued but never emitted on these paths"
