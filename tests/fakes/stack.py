"""The whole chain on loopback as pytest fixtures: moto (SQS, DynamoDB, Secrets Manager), fake Slack, fake model."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from fakes import billing
from fakes.aws import MotoServer
from fakes.messages_api import FakeMessagesAPI
from fakes.slack_api import Channel, FakeSlack

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "events"
sys.path.insert(0, str(EVENTS))
import sign  # noqa: E402

SIGNING_SECRET = "test-signing-secret-" + "0123456789abcdef"
BOT_TOKEN = "xoxb-" + "1111-2222-" + "testtokentesttoken"
CHANNEL = sign.CHANNEL

REPO_FILES = billing.FILES


def load_handler(name: str) -> Callable[[dict[str, Any], Any], Any]:
    """functions/<name>/app.py's lambda_handler, imported the way Lambda would."""
    path = ROOT / "functions" / name / "app.py"
    spec = importlib.util.spec_from_file_location(f"handler_{name}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.lambda_handler  # type: ignore[no-any-return]


@dataclass
class Context:
    """The attributes of a Lambda context object that the handlers and powertools read."""

    remaining_ms: int = 120_000
    function_name: str = "codeask-test"
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:codeask-test"
    aws_request_id: str = field(default_factory=lambda: uuid.uuid4().hex)

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


def event(name: str, *, secret: str = SIGNING_SECRET, **overrides: Any) -> dict[str, Any]:
    """events/<name>.json re-signed for now; `overrides` patch the Slack payload (then re-signed)."""
    ev = json.loads((EVENTS / f"{name}.json").read_text())
    if name != "url_verification":
        # Slack's event_time is when it happened: now, so end-to-end latency reads true.
        overrides = {"event_time": int(time.time()), **overrides}
    if overrides:
        payload = json.loads(ev["body"])
        for key, value in overrides.items():
            target = payload["event"] if key.startswith("event.") else payload
            target[key.removeprefix("event.")] = value
        ev["body"] = json.dumps(payload, separators=(",", ":"))
    return sign.signed(ev, secret)


def click(action: str, user: str, value: str, *, secret: str = SIGNING_SECRET,
          team: str = sign.TEAM) -> dict[str, Any]:  # fmt: skip
    """A signed Slack interactivity request: `user` pressed the button `action` with `value`."""
    import time
    import urllib.parse

    payload = {
        "type": "block_actions",
        "team": {"id": team},
        "user": {"id": user},
        "channel": {"id": CHANNEL},
        "actions": [{"action_id": action, "block_id": "codeask_feedback", "value": value,
                     "type": "button"}],
    }  # fmt: skip
    body = urllib.parse.urlencode({"payload": json.dumps(payload)})
    ev = sign.http_event(body, "0", "")
    ev["rawPath"] = ev["requestContext"]["http"]["path"] = "/slack/interactivity"
    ev["routeKey"] = "POST /slack/interactivity"
    ev["headers"]["content-type"] = "application/x-www-form-urlencoded"
    return sign.signed(ev, secret, time.time())


def sqs_job_event() -> dict[str, Any]:
    """events/sqs_job.json with its job's event_time set to now, as a fresh delivery would be."""
    ev = json.loads((EVENTS / "sqs_job.json").read_text())
    for record in ev["Records"]:
        body = json.loads(record["body"])
        body["event_time"] = time.time()
        record["body"] = json.dumps(body, separators=(",", ":"), sort_keys=True)
    return ev


@contextlib.contextmanager
def state_clock(behind_s: float) -> Iterator[None]:
    """The state store's clock runs `behind_s` late: a job taken inside reads as taken that long
    ago, as a worker that died then would have left it (set up through the store's own methods)."""
    from codeask import state

    class Late:
        @staticmethod
        def time() -> float:
            return time.time() - behind_s

    with pytest.MonkeyPatch.context() as m:
        m.setattr(state, "time", Late)
        yield


@pytest.fixture(scope="session")
def moto() -> Iterator[MotoServer]:
    with MotoServer() as server:
        yield server


@dataclass
class Stack:
    moto: MotoServer
    slack: FakeSlack
    model: FakeMessagesAPI
    repo: Any
    queue_url: str
    table: str
    tmp: Path

    def sqs(self) -> Any:
        from codeask import clients

        return clients.aws("sqs")

    def queued(self) -> list[dict[str, Any]]:
        """Take every queued message, as SQS records the worker would get."""
        out: list[dict[str, Any]] = []
        while True:
            got = (
                self.sqs()
                .receive_message(
                    QueueUrl=self.queue_url, MaxNumberOfMessages=10, AttributeNames=["All"]
                )
                .get("Messages", [])
            )
            if not got:
                return out
            for m in got:
                out.append(
                    {
                        "messageId": m["MessageId"],
                        "receiptHandle": m["ReceiptHandle"],
                        "body": m["Body"],
                        "attributes": m.get("Attributes", {}),
                        "messageAttributes": {},
                        "md5OfBody": m["MD5OfBody"],
                        "eventSource": "aws:sqs",
                        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:jobs",
                        "awsRegion": "us-east-1",
                    }
                )
                self.sqs().delete_message(QueueUrl=self.queue_url, ReceiptHandle=m["ReceiptHandle"])


def emf_documents(text: str) -> list[dict[str, Any]]:
    """Every EMF document in captured stdout (one JSON object per print; threads may interleave)."""
    decoder, docs, i = json.JSONDecoder(), [], text.find('{"_aws"')
    while i >= 0:
        try:
            doc, end = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            end = i + 1
        else:
            if isinstance(doc, dict) and "_aws" in doc:
                docs.append(doc)
        i = text.find('{"_aws"', end)
    return docs


def provision(
    moto_url: str, repo: Path, tmp: Path, slack: FakeSlack, model: FakeMessagesAPI
) -> dict[str, str]:
    """A queue, a table and the bot's secret in moto, the channels in the fake Slack, and the
    environment the functions need to use them, the repository `repo` and the fake model."""
    import boto3

    aws = {
        "AWS_ENDPOINT_URL": moto_url,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
    }
    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
    )
    queue_url = session.client("sqs", endpoint_url=moto_url).create_queue(
        QueueName=f"jobs-{uuid.uuid4().hex[:8]}"
    )["QueueUrl"]
    table = f"state-{uuid.uuid4().hex[:8]}"
    session.client("dynamodb", endpoint_url=moto_url).create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    slack.channels[CHANNEL] = Channel(id=CHANNEL, name="billing-dev")
    slack.channels["C0SHARED1"] = Channel(id="C0SHARED1", name="shared", is_ext_shared=True)
    secret_arn = session.client("secretsmanager", endpoint_url=moto_url).create_secret(
        Name=f"codeask-{uuid.uuid4().hex[:8]}",
        SecretString=json.dumps(
            {"SLACK_SIGNING_SECRET": SIGNING_SECRET, "SLACK_BOT_TOKEN": BOT_TOKEN,
             "ANTHROPIC_API_KEY": "sk-ant-" + "e2e-test-key", "GIT_TOKEN": ""}
        ),
    )["ARN"]  # fmt: skip
    config = {"repos": {"billing": {"url": str(repo), "branch": "main"}},
              "channels": {CHANNEL: ["billing"]}}  # fmt: skip
    return {
        **aws,
        "HOME": str(tmp / "home"),
        "MIRROR_ROOT": str(tmp / "mirrors"),
        "SNAPSHOT_ROOT": str(tmp / "snapshots"),
        "POWERTOOLS_METRICS_NAMESPACE": "Codeask",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "SECRETS_ARN": secret_arn,
        "QUEUE_URL": queue_url,
        "TABLE_NAME": table,
        "CODEASK_CONFIG": json.dumps(config),
        "SLACK_API_URL": slack.base_url,
        "ANTHROPIC_BASE_URL": model.base_url,
    }


@pytest.fixture
def stack(
    moto: MotoServer,
    tmp_path: Path,
    git_repo: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> Iterator[Stack]:
    from aws_lambda_powertools.utilities.parameters.base import DEFAULT_PROVIDERS

    from codeask import clients, lambdas

    # Opt-in: with CODEASK_EMF_LOG set, the EMF documents the handlers print are appended there
    # (one JSON line each) for bench/dashboard.py; stdout is captured with capsys to read them.
    emf_log = os.environ.get("CODEASK_EMF_LOG")
    capsys = request.getfixturevalue("capsys") if emf_log else None
    moto.reset()
    repo = git_repo("billing")
    repo.commit(REPO_FILES, message="initial")
    for k in ("ANTHROPIC_API_KEY", "SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "CODEASK_DEADLINE_S"):
        monkeypatch.delenv(k, raising=False)
    with (
        FakeSlack(bot_token=BOT_TOKEN, bot_user_id=sign.BOT_USER, team_id=sign.TEAM) as slack,
        FakeMessagesAPI() as model,
    ):
        env = provision(moto.url, repo.path, tmp_path, slack, model)
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        lambdas.reset_settings()
        clients.aws.cache_clear()
        clients.slack.cache_clear()
        # Powertools keeps its Secrets Manager client (bound to the moto server of the first
        # pytest session in this process): a second session, as mutmut runs, has another server.
        DEFAULT_PROVIDERS.clear()
        yield Stack(moto, slack, model, repo, env["QUEUE_URL"], env["TABLE_NAME"], tmp_path)
        lambdas.reset_settings()
        clients.aws.cache_clear()
        clients.slack.cache_clear()
    if emf_log and capsys is not None:
        out = capsys.readouterr().out
        with open(emf_log, "a", encoding="utf-8") as f:
            for doc in emf_documents(out):
                f.write(json.dumps(doc, separators=(",", ":")) + "\n")
        sys.stdout.write(out)  # still shown with a failing test's report
