"""The job is the contract between the ack and the worker: it survives SQS exactly, or is rejected."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from codeask.errors import CodeaskError
from codeask.job import JOB_VERSION, Job, JobRejected

EVENTS = Path(__file__).resolve().parents[2] / "events"
sys.path.insert(0, str(EVENTS))
import sign  # noqa: E402


def a_job(**changes: Any) -> Job:
    fields: dict[str, Any] = {
        "event_id": "Ev0MENTION01",
        "team_id": "T0001",
        "channel": "C0123ABCD",
        "user": "U0HUMAN",
        "text": "where do we retry failed jobs? — «ünïcødé» `code`\nand a second line",
        "message_ts": "1764430000.000100",
        "thread_ts": "1764430000.000100",
        "event_time": 1764430000.0,
        "repos": ("billing", "payments"),
        "received_at": 1764430000.25,
    }
    fields.update(changes)
    return Job(**fields)


def wire(**changes: Any) -> dict[str, Any]:
    """A job as it travels through SQS, as a dict to tamper with."""
    body: dict[str, Any] = json.loads(a_job().to_json())
    body.update(changes)
    return body


# -- round trip ---------------------------------------------------------------------------------


def test_a_job_survives_the_queue_unchanged() -> None:
    # Given a job as the ack builds it
    job = a_job()

    # When it is serialised for SQS and read back by the worker
    back = Job.from_json(job.to_json())

    # Then it is the same job, repos still a tuple, at the current version
    assert back == job
    assert back.repos == ("billing", "payments")
    assert back.version == JOB_VERSION


def test_a_job_can_be_read_from_bytes() -> None:
    # Given the body as raw bytes
    raw = a_job().to_json().encode("utf-8")

    # When it is read
    # Then it is the same job
    assert Job.from_json(raw) == a_job()


def test_the_wire_form_is_one_compact_json_object_with_a_version() -> None:
    # Given a job
    # When it is serialised
    raw = a_job().to_json()

    # Then it is a single line of JSON carrying every field and the version
    assert "\n" not in raw and ": " not in raw
    body = json.loads(raw)
    assert body["version"] == JOB_VERSION
    assert body["repos"] == ["billing", "payments"]
    assert set(body) == {
        "event_id", "team_id", "channel", "user", "text", "message_ts", "thread_ts",
        "event_time", "repos", "received_at", "version",
    }  # fmt: skip


def test_a_job_with_no_repos_round_trips() -> None:
    job = a_job(repos=())
    assert Job.from_json(job.to_json()) == job


def test_the_example_sqs_event_carries_a_valid_job() -> None:
    # Given the SQS event in events/ that `sam local invoke` uses
    record = sign.sqs_job_event()["Records"][0]

    # When the worker reads its body
    job = Job.from_json(record["body"])

    # Then it is a job for the example question
    assert (job.channel, job.message_ts, job.repos) == (
        sign.CHANNEL,
        "1764430000.000100",
        ("billing",),
    )


# -- what is rejected, and that the message says why -----------------------------------------------


@pytest.mark.parametrize("version", [2, 0, "1", None, 1.5])
def test_an_unknown_version_is_rejected_naming_it(version: Any) -> None:
    # Given a job body of a version this worker does not read
    raw = json.dumps(wire(version=version))

    # When the worker reads it
    with pytest.raises(JobRejected) as e:
        Job.from_json(raw)

    # Then the message names the version it got and the one it reads
    assert "version" in str(e.value)
    assert repr(version) in str(e.value)
    assert str(JOB_VERSION) in str(e.value)


def test_a_missing_version_is_rejected() -> None:
    body = wire()
    del body["version"]
    with pytest.raises(JobRejected, match="version None is not supported"):
        Job.from_json(json.dumps(body))


@pytest.mark.parametrize("missing", ["thread_ts", "text", "repos", "event_id"])
def test_a_missing_field_is_rejected_naming_it(missing: str) -> None:
    # Given a job body without one field
    body = wire()
    del body[missing]

    # When the worker reads it
    with pytest.raises(JobRejected) as e:
        Job.from_json(json.dumps(body))

    # Then the message says which field is missing
    assert "missing" in str(e.value)
    assert repr(missing) in str(e.value)


def test_an_unknown_field_is_rejected_naming_it() -> None:
    # Given a job body with a field this worker does not know (from a newer ack, say)
    raw = json.dumps(wire(priority="high"))

    # When the worker reads it
    with pytest.raises(JobRejected) as e:
        Job.from_json(raw)

    # Then it is rejected, not guessed at, and the message names the field
    assert "unknown" in str(e.value)
    assert "'priority'" in str(e.value)


@pytest.mark.parametrize(
    "raw",
    ["", "not json", "{", b"\xff\xfe\x00", '{"version": 1,}'],
    ids=["empty", "text", "truncated", "not-utf8", "trailing-comma"],
)
def test_a_body_that_is_not_json_is_rejected(raw: str | bytes) -> None:
    with pytest.raises(JobRejected, match="job is not JSON"):
        Job.from_json(raw)


@pytest.mark.parametrize("raw", ["[]", '"a job"', "1", "null"])
def test_json_that_is_not_an_object_is_rejected(raw: str) -> None:
    with pytest.raises(JobRejected, match="not a JSON object"):
        Job.from_json(raw)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("repos", "billing"),  # would become ("b", "i", "l", ...)
        ("repos", 5),
        ("repos", [1, 2]),
        ("repos", {"billing": True}),
        ("text", None),  # would become the question "None"
        ("channel", ["C0123ABCD"]),
        ("thread_ts", 1764430000.0001),
        ("event_time", "yesterday"),
        ("event_time", True),
        ("received_at", None),
        ("received_at", 10**400),  # an integer no float can hold
    ],
)
def test_a_field_of_the_wrong_type_is_rejected_naming_it(field: str, value: Any) -> None:
    # Given a job body with one field of the wrong JSON type
    raw = json.dumps(wire(**{field: value}))

    # When the worker reads it
    with pytest.raises(JobRejected) as e:
        Job.from_json(raw)

    # Then it is rejected (not coerced into a different question) and the field is named
    assert field in str(e.value)


def test_a_rejected_job_is_a_codeask_error_with_a_usage_exit_code() -> None:
    with pytest.raises(CodeaskError) as e:
        Job.from_json("nope")
    assert isinstance(e.value, JobRejected) and e.value.exit_code == 2


# -- dedupe_key ------------------------------------------------------------------------------------


def test_the_same_message_has_one_dedupe_key_whichever_event_delivered_it() -> None:
    # Given the app_mention and the message event for one post
    via_mention = a_job(event_id="Ev0MENTION")
    via_message = a_job(event_id="Ev0MESSAGE", received_at=1764430001.0)

    # Then both answer the same question
    assert via_mention.dedupe_key == via_message.dedupe_key == "C0123ABCD:1764430000.000100"


def test_different_messages_have_different_dedupe_keys() -> None:
    base = a_job()
    other_message = a_job(message_ts="1764430000.000200")
    same_ts_other_channel = a_job(channel="C0OTHER01")
    follow_up_in_same_thread = a_job(message_ts="1764430009.000900")
    keys = {
        j.dedupe_key for j in (base, other_message, same_ts_other_channel, follow_up_in_same_thread)
    }
    assert len(keys) == 4


def test_the_dedupe_key_survives_the_queue() -> None:
    job = a_job()
    assert Job.from_json(job.to_json()).dedupe_key == job.dedupe_key
