"""template.yaml read as data: the promises the SAM template makes to the handlers and the README."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from codeask.errors import ConfigError
from codeask.settings import Settings
from codeask.state import check_worker_timeout, lease_s
from fakes.cfn import CfnLoader

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"

FUNCTIONS = (
    "SlackEventsFunction",
    "AnswerWorkerFunction",
    "MirrorWarmerFunction",
    "DoctorFunction",
)
MOUNTED = ("AnswerWorkerFunction", "MirrorWarmerFunction", "DoctorFunction")
MIRROR_MOUNT = "/mnt/mirrors"


# ------------------------------------------------------------------ loading


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    loaded = yaml.load(TEMPLATE.read_text(), Loader=CfnLoader)
    assert isinstance(loaded, dict)
    return loaded


def test_the_loader_reads_short_tags() -> None:
    doc = yaml.load(
        "a: !Ref X\nb: !GetAtt Q.Arn\nc: !Sub 'x${Y}'\nd: !If [C, !Ref AWS::NoValue, 1]\n"
        "e: !Select [0, !Ref L]\nf: !Condition C\n",
        Loader=CfnLoader,
    )
    assert doc == {
        "a": {"Ref": "X"},
        "b": {"Fn::GetAtt": ["Q", "Arn"]},
        "c": {"Fn::Sub": "x${Y}"},
        "d": {"Fn::If": ["C", {"Ref": "AWS::NoValue"}, 1]},
        "e": {"Fn::Select": [0, {"Ref": "L"}]},
        "f": {"Condition": "C"},
    }


# ------------------------------------------------------------------ helpers


def ref(name: str) -> dict[str, str]:
    return {"Ref": name}


def arn(name: str) -> dict[str, list[str]]:
    return {"Fn::GetAtt": [name, "Arn"]}


def resources(template: dict[str, Any]) -> dict[str, Any]:
    return template["Resources"]


def props(template: dict[str, Any], name: str) -> dict[str, Any]:
    return resources(template)[name]["Properties"]


def env(template: dict[str, Any], function: str) -> dict[str, Any]:
    """The function's environment as Lambda sees it: Globals merged with its own variables."""
    shared = template["Globals"]["Function"]["Environment"]["Variables"]
    own = props(template, function).get("Environment", {}).get("Variables", {})
    return {**shared, **own}


def statements(policies: list[Any]) -> Iterator[tuple[dict[str, Any], str | None]]:
    """Every inline statement of a SAM Policies list, with the condition guarding it (if any)."""
    for policy in policies:
        condition = None
        if isinstance(policy, dict) and "Fn::If" in policy:
            condition, policy, otherwise = policy["Fn::If"]
            assert otherwise == ref("AWS::NoValue")
        assert isinstance(policy, dict) and set(policy) == {"Statement"}, (
            f"policies are written out as statements, so they can be read here: {policy}"
        )
        for statement in policy["Statement"]:
            yield statement, condition


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def walk(node: Any) -> Iterator[Any]:
    yield node
    if isinstance(node, dict):
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


# ------------------------------------------------------------------ globals and parameters


def test_globals_arm64_python313_traced_with_the_shared_environment(
    template: dict[str, Any],
) -> None:
    function = template["Globals"]["Function"]
    assert function["Runtime"] == "python3.13"
    assert function["Architectures"] == ["arm64"]
    assert function["Tracing"] == "Active"
    assert function["Environment"]["Variables"] == {
        "POWERTOOLS_SERVICE_NAME": "codeask",
        "POWERTOOLS_METRICS_NAMESPACE": "Codeask",
        "LOG_LEVEL": ref("LogLevel"),
        "SECRETS_ARN": ref("BotSecrets"),
        "TABLE_NAME": ref("StateTable"),
        "CODEASK_CONFIG": ref("CodeaskConfig"),
    }
    for name in FUNCTIONS:
        assert {"Runtime", "Architectures"}.isdisjoint(props(template, name)), name
    for layer in ("CodeaskLayer", "RipgrepLayer"):
        assert "arm64" in props(template, layer)["CompatibleArchitectures"]


def test_parameters_have_descriptions_and_the_agreed_defaults(template: dict[str, Any]) -> None:
    params = template["Parameters"]
    for name, param in params.items():
        assert param.get("Description"), f"{name} needs a Description"
    assert params["WorkerTimeoutSeconds"]["Default"] == 300
    assert params["WorkerMemoryMB"]["Default"] == 2048
    assert all(1024 <= mb <= 4096 for mb in params["WorkerMemoryMB"]["AllowedValues"])
    assert params["LogLevel"]["Default"] == "INFO"
    assert params["ModelProvider"]["AllowedValues"] == ["anthropic", "bedrock"]
    assert params["ModelProvider"]["Default"] == "anthropic"
    assert params["ModelId"]["Default"] == "claude-sonnet-5"
    assert params["LogRetentionDays"]["Default"] == 30
    assert params["MirrorWarmSchedule"]["Default"] == "rate(10 minutes)"
    assert params["AlarmTopicArn"]["Default"] == ""
    assert params["CodeaskConfig"]["Type"] == "String"
    assert params["CodeaskConfig"]["NoEcho"] is False
    assert params["VpcId"]["Type"] == "AWS::EC2::VPC::Id"
    assert params["SubnetIds"]["Type"] == "List<AWS::EC2::Subnet::Id>"
    assert "NAT" in params["SubnetIds"]["Description"]
    for name in ("WorkerTimeoutSeconds", "WorkerMemoryMB", "LogLevel", "LogRetentionDays"):
        assert params[name]["Default"] in params[name]["AllowedValues"], name


# ------------------------------------------------------------------ queue


def test_every_allowed_worker_timeout_gets_at_least_six_times_the_visibility_timeout(
    template: dict[str, Any],
) -> None:
    allowed = template["Parameters"]["WorkerTimeoutSeconds"]["AllowedValues"]
    assert allowed == [120, 180, 300, 600, 900]
    table = template["Mappings"]["WorkerTimeouts"]
    assert set(table) == {str(t) for t in allowed}
    for timeout in allowed:
        visibility = table[str(timeout)]["QueueVisibilityTimeout"]
        assert 6 * timeout <= visibility <= 43_200, timeout  # SQS allows at most 12 hours


def test_the_jobs_queue_looks_its_visibility_up_with_the_worker_timeout(
    template: dict[str, Any],
) -> None:
    assert props(template, "JobsQueue")["VisibilityTimeout"] == {
        "Fn::FindInMap": ["WorkerTimeouts", ref("WorkerTimeoutSeconds"), "QueueVisibilityTimeout"]
    }
    assert props(template, "AnswerWorkerFunction")["Timeout"] == ref("WorkerTimeoutSeconds")


def test_a_jobs_lease_outlives_its_worker_and_ends_before_the_job_comes_back(
    template: dict[str, Any],
) -> None:
    # The worker is told its own timeout, since a job's lease is derived from it
    assert env(template, "AnswerWorkerFunction")["CODEASK_WORKER_TIMEOUT_S"] == ref(
        "WorkerTimeoutSeconds"
    )
    table = template["Mappings"]["WorkerTimeouts"]
    for timeout in template["Parameters"]["WorkerTimeoutSeconds"]["AllowedValues"]:
        s = Settings.from_env({"CODEASK_WORKER_TIMEOUT_S": str(timeout)})
        lease = lease_s(s.worker_timeout_s)
        # A worker still inside its invocation is never taken for a dead one...
        assert lease > timeout
        # ...and the redelivery of a dead worker's job (after the visibility timeout) takes it
        assert lease < table[str(timeout)]["QueueVisibilityTimeout"], timeout
        # An invocation as long as the template allows passes the start-up check
        check_worker_timeout(s.worker_timeout_s, float(timeout))
    # A run without the template assumes the longest timeout Lambda has: never too short
    assert Settings.from_env({}).worker_timeout_s >= 900


def test_a_worker_timeout_setting_shorter_than_the_invocation_stops_the_worker() -> None:
    with pytest.raises(ConfigError, match="CODEASK_WORKER_TIMEOUT_S is 300 s .* may run 900 s"):
        check_worker_timeout(300.0, 900.0)
    with pytest.raises(ConfigError, match="CODEASK_WORKER_TIMEOUT_S"):
        Settings.from_env({"CODEASK_WORKER_TIMEOUT_S": "five minutes"})


MAX_RECEIVES = {"Fn::FindInMap": ["Jobs", "Queue", "MaxReceiveCount"]}


def max_receives(template: dict[str, Any]) -> int:
    value = template["Mappings"]["Jobs"]["Queue"]["MaxReceiveCount"]
    assert isinstance(value, int)
    return value


def test_the_jobs_queue_redrives_to_an_encrypted_dlq(template: dict[str, Any]) -> None:
    queue, dlq = props(template, "JobsQueue"), props(template, "JobsDLQ")
    assert queue["RedrivePolicy"] == {
        "deadLetterTargetArn": arn("JobsDLQ"),
        "maxReceiveCount": MAX_RECEIVES,
    }
    assert max_receives(template) == 3
    assert queue["SqsManagedSseEnabled"] is True and dlq["SqsManagedSseEnabled"] is True
    assert dlq["MessageRetentionPeriod"] == 14 * 24 * 3600
    # A job must be able to fail maxReceiveCount times before it expires, or it never reaches
    # the DLQ; a DLQ measures retention from the original enqueue, so it must outlive the queue.
    longest = max(
        v["QueueVisibilityTimeout"] for v in template["Mappings"]["WorkerTimeouts"].values()
    )
    assert queue["MessageRetentionPeriod"] >= max_receives(template) * longest
    assert dlq["MessageRetentionPeriod"] > queue["MessageRetentionPeriod"]


def test_the_worker_knows_which_delivery_of_a_job_is_its_last(template: dict[str, Any]) -> None:
    # The worker posts a failure message on the delivery after which SQS dead-letters the job, so
    # it must count to the queue's maxReceiveCount: both come from the one mapping value.
    assert env(template, "AnswerWorkerFunction")["CODEASK_MAX_RECEIVES"] == MAX_RECEIVES
    count = max_receives(template)
    assert Settings.from_env({"CODEASK_MAX_RECEIVES": str(count)}).max_receives == count
    # and a run without the template (the CLI, the tests) counts the same
    assert Settings.from_env({}).max_receives == count


def test_the_worker_takes_one_job_at_a_time_and_reports_partial_failures(
    template: dict[str, Any],
) -> None:
    events = props(template, "AnswerWorkerFunction")["Events"]
    sqs = [e["Properties"] for e in events.values() if e["Type"] == "SQS"]
    assert len(sqs) == 1
    assert sqs[0]["Queue"] == arn("JobsQueue")
    assert sqs[0]["BatchSize"] == 1
    assert sqs[0]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert "ReservedConcurrentExecutions" not in props(template, "AnswerWorkerFunction")


# ------------------------------------------------------------------ the ack function


def test_the_ack_function_runs_outside_the_vpc(template: dict[str, Any]) -> None:
    ack = props(template, "SlackEventsFunction")
    assert "VpcConfig" not in ack and "FileSystemConfigs" not in ack
    assert "VpcConfig" not in template["Globals"]["Function"]
    assert ack["MemorySize"] == 512 and ack["Timeout"] == 10
    assert env(template, "SlackEventsFunction")["QUEUE_URL"] == ref("JobsQueue")


def test_the_ack_function_may_only_enqueue_touch_state_items_and_read_the_secret(
    template: dict[str, Any],
) -> None:
    allowed = {
        "sqs:SendMessage": arn("JobsQueue"),
        "dynamodb:GetItem": arn("StateTable"),
        "dynamodb:PutItem": arn("StateTable"),
        "dynamodb:UpdateItem": arn("StateTable"),
        "dynamodb:DeleteItem": arn("StateTable"),  # releases a claim when queueing fails
        "secretsmanager:GetSecretValue": ref("BotSecrets"),
    }
    granted: set[str] = set()
    for statement, condition in statements(props(template, "SlackEventsFunction")["Policies"]):
        assert condition is None
        assert statement["Effect"] == "Allow"
        for action in as_list(statement["Action"]):
            assert action in allowed, f"the ack function must not be granted {action}"
            assert as_list(statement["Resource"]) == [allowed[action]], action
            granted.add(action)
    assert granted == set(allowed)


def test_worker_and_warmer_are_granted_only_what_they_use(template: dict[str, Any]) -> None:
    mount = {"elasticfilesystem:ClientMount", "elasticfilesystem:ClientWrite"}
    expected = {
        "AnswerWorkerFunction": {
            "dynamodb:GetItem",
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
            "secretsmanager:GetSecretValue",
            "bedrock:InvokeModel",
            *mount,
        },
        "MirrorWarmerFunction": {"secretsmanager:GetSecretValue", *mount},
        # read-only checks: the secret, that the queue and table exist, the mirrors, the model
        "DoctorFunction": {
            "secretsmanager:GetSecretValue",
            "secretsmanager:DescribeSecret",
            "sqs:GetQueueAttributes",
            "dynamodb:DescribeTable",
            "bedrock:InvokeModel",
            *mount,
        },
    }
    for name, actions in expected.items():
        granted = {
            action
            for statement, _ in statements(props(template, name)["Policies"])
            for action in as_list(statement["Action"])
        }
        assert granted == actions, name
        for statement, _ in statements(props(template, name)["Policies"]):
            services = {a.split(":")[0] for a in as_list(statement["Action"])}
            if services == {"dynamodb"}:
                assert statement["Resource"] == arn("StateTable")
            if services == {"secretsmanager"}:
                assert statement["Resource"] == ref("BotSecrets")


def test_no_policy_grants_every_resource_or_a_broad_managed_policy(
    template: dict[str, Any],
) -> None:
    for name in FUNCTIONS:
        fn = props(template, name)
        assert "Role" not in fn, "the roles are SAM's, built from the Policies below"
        for statement, _ in statements(fn["Policies"]):
            assert "NotAction" not in statement and "NotResource" not in statement
            for resource in as_list(statement["Resource"]):
                assert resource != "*", f"{name}: {statement}"
            for action in as_list(statement["Action"]):
                assert "*" not in action, f"{name}: {action}"
    for node in walk(template):
        if isinstance(node, str):
            assert "AdministratorAccess" not in node and not node.endswith("FullAccess"), node


# ------------------------------------------------------------------ the worker and the warmer


@pytest.mark.parametrize("name", MOUNTED)
def test_worker_and_warmer_mount_the_mirrors_where_mirror_root_points(
    template: dict[str, Any], name: str
) -> None:
    fn = resources(template)[name]
    mounts = fn["Properties"]["FileSystemConfigs"]
    assert mounts == [{"Arn": arn("MirrorsAccessPoint"), "LocalMountPath": MIRROR_MOUNT}]
    assert env(template, name)["MIRROR_ROOT"] == MIRROR_MOUNT
    assert {"MirrorsMountTargetA", "MirrorsMountTargetB"} <= set(fn["DependsOn"])
    vpc = fn["Properties"]["VpcConfig"]
    assert vpc["SecurityGroupIds"] == [{"Fn::GetAtt": ["LambdaSecurityGroup", "GroupId"]}]
    # The functions run only where a mount target is: the same subnets, hence the same AZs.
    targets = [
        props(template, t)["SubnetId"] for t in ("MirrorsMountTargetA", "MirrorsMountTargetB")
    ]
    assert vpc["SubnetIds"] == targets
    assert targets == [{"Fn::Select": [i, ref("SubnetIds")]} for i in (0, 1)]
    mount_statements = [
        s for s, _ in statements(fn["Properties"]["Policies"]) if "elasticfilesystem" in str(s)
    ]
    assert mount_statements == [
        {
            "Sid": "MountMirrors",
            "Effect": "Allow",
            "Action": ["elasticfilesystem:ClientMount", "elasticfilesystem:ClientWrite"],
            "Resource": arn("MirrorsFileSystem"),
            "Condition": {
                "StringEquals": {"elasticfilesystem:AccessPointArn": arn("MirrorsAccessPoint")}
            },
        }
    ]


def test_the_worker_environment_and_sizing(template: dict[str, Any]) -> None:
    worker = props(template, "AnswerWorkerFunction")
    variables = env(template, "AnswerWorkerFunction")
    assert variables["SNAPSHOT_ROOT"].startswith("/tmp/")
    assert variables["CODEASK_PROVIDER"] == ref("ModelProvider")
    assert variables["CODEASK_MODEL"] == ref("ModelId")
    assert "RG_PATH" not in variables, "codeask finds /opt/bin/rg-<arch> itself"
    assert worker["MemorySize"] == ref("WorkerMemoryMB")
    assert worker["EphemeralStorage"] == {"Size": ref("WorkerEphemeralStorageMB")}
    storage = template["Parameters"]["WorkerEphemeralStorageMB"]
    assert storage["Default"] == 4096 and (storage["MinValue"], storage["MaxValue"]) == (512, 10240)
    warmer = props(template, "MirrorWarmerFunction")
    assert warmer["Timeout"] == 300 and warmer["MemorySize"] == 1024
    schedules = [e["Properties"] for e in warmer["Events"].values() if e["Type"] == "Schedule"]
    assert [s["Schedule"] for s in schedules] == [ref("MirrorWarmSchedule")]


def test_bedrock_is_granted_only_when_it_is_the_provider(template: dict[str, Any]) -> None:
    assert template["Conditions"]["UseBedrock"] == {"Fn::Equals": [ref("ModelProvider"), "bedrock"]}
    for name in FUNCTIONS:
        for statement, condition in statements(props(template, name)["Policies"]):
            if any(a.startswith("bedrock:") for a in as_list(statement["Action"])):
                # the worker answers with it; the doctor makes a one-token check
                assert name in ("AnswerWorkerFunction", "DoctorFunction")
                assert condition == "UseBedrock"
                assert as_list(statement["Action"]) == ["bedrock:InvokeModel"]
            else:
                assert condition is None


def test_only_the_worker_and_the_doctor_have_the_ripgrep_layer(template: dict[str, Any]) -> None:
    assert props(template, "AnswerWorkerFunction")["Layers"] == [
        ref("CodeaskLayer"),
        ref("RipgrepLayer"),
    ]
    assert props(template, "SlackEventsFunction")["Layers"] == [ref("CodeaskLayer")]
    assert props(template, "MirrorWarmerFunction")["Layers"] == [ref("CodeaskLayer")]
    # the doctor checks that ripgrep runs, so it carries the layer the worker uses
    assert props(template, "DoctorFunction")["Layers"] == [ref("CodeaskLayer"), ref("RipgrepLayer")]
    assert "Layers" not in template["Globals"]["Function"]


def test_security_groups_let_nfs_reach_efs_only_from_the_functions(
    template: dict[str, Any],
) -> None:
    group = {"Fn::GetAtt": ["LambdaSecurityGroup", "GroupId"]}
    efs_group = {"Fn::GetAtt": ["EfsSecurityGroup", "GroupId"]}
    out = props(template, "LambdaSecurityGroup")["SecurityGroupEgress"]
    # https (Slack, model, AWS, git), ssh and git:// remotes, and nothing else to the internet
    assert sorted((r["FromPort"], r["ToPort"], r["CidrIp"]) for r in out) == [
        (22, 22, "0.0.0.0/0"),
        (443, 443, "0.0.0.0/0"),
        (9418, 9418, "0.0.0.0/0"),
    ]
    nfs_out = props(template, "LambdaToEfsEgress")
    assert (nfs_out["GroupId"], nfs_out["DestinationSecurityGroupId"]) == (group, efs_group)
    assert (nfs_out["FromPort"], nfs_out["ToPort"]) == (2049, 2049)
    assert "SecurityGroupIngress" not in props(template, "EfsSecurityGroup")
    ingress = [
        r for r in resources(template).values() if r["Type"] == "AWS::EC2::SecurityGroupIngress"
    ]
    assert [r["Properties"] for r in ingress] == [
        {
            "Description": "NFS from the codeask functions",
            "GroupId": efs_group,
            "IpProtocol": "tcp",
            "FromPort": 2049,
            "ToPort": 2049,
            "SourceSecurityGroupId": group,
        }
    ]
    for target in ("MirrorsMountTargetA", "MirrorsMountTargetB"):
        assert props(template, target)["SecurityGroups"] == [efs_group]


def test_the_file_system_and_its_access_point(template: dict[str, Any]) -> None:
    fs = props(template, "MirrorsFileSystem")
    assert fs["Encrypted"] is True
    assert fs["PerformanceMode"] == "generalPurpose"
    assert fs["ThroughputMode"] == "elastic"
    ap = props(template, "MirrorsAccessPoint")
    assert ap["FileSystemId"] == ref("MirrorsFileSystem")
    assert ap["PosixUser"] == {"Uid": "1000", "Gid": "1000"}
    assert ap["RootDirectory"] == {
        "Path": "/codeask-mirrors",
        "CreationInfo": {"OwnerUid": "1000", "OwnerGid": "1000", "Permissions": "0750"},
    }


# ------------------------------------------------------------------ state and secrets


def test_the_state_table(template: dict[str, Any]) -> None:
    table = props(template, "StateTable")
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert table["KeySchema"] == [{"AttributeName": "pk", "KeyType": "HASH"}]
    assert table["AttributeDefinitions"] == [{"AttributeName": "pk", "AttributeType": "S"}]
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    assert table["SSESpecification"] == {"SSEEnabled": True}
    assert table["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}


def test_the_secret_is_a_placeholder_filled_after_deploy(template: dict[str, Any]) -> None:
    secret = props(template, "BotSecrets")
    assert "GenerateSecretString" not in secret
    assert json.loads(secret["SecretString"]) == {
        "SLACK_SIGNING_SECRET": "",
        "SLACK_BOT_TOKEN": "",
        "ANTHROPIC_API_KEY": "",
        "GIT_TOKEN": "",
    }
    assert "put-secret-value" in secret["Description"]


# ------------------------------------------------------------------ every function


@pytest.mark.parametrize("name", FUNCTIONS)
def test_each_function_has_its_handler_code_and_log_group(
    template: dict[str, Any], name: str
) -> None:
    fn = resources(template)[name]
    assert fn["Type"] == "AWS::Serverless::Function"
    assert fn["Properties"]["Handler"] == "app.lambda_handler"
    code_uri = fn["Properties"]["CodeUri"]
    assert code_uri.startswith("functions/") and (ROOT / code_uri).is_dir(), code_uri
    groups = [
        r["Properties"]
        for r in resources(template).values()
        if r["Type"] == "AWS::Logs::LogGroup"
        and r["Properties"]["LogGroupName"] == {"Fn::Sub": f"/aws/lambda/${{{name}}}"}
    ]
    assert len(groups) == 1, f"{name} needs exactly one log group"
    assert groups[0]["RetentionInDays"] == ref("LogRetentionDays")


# ------------------------------------------------------------------ Slack endpoint and outputs


def test_the_http_api_routes_slack_events_and_buttons_to_the_ack_function(
    template: dict[str, Any],
) -> None:
    assert resources(template)["SlackHttpApi"]["Type"] == "AWS::Serverless::HttpApi"
    routes = [
        (name, e["Properties"])
        for name in FUNCTIONS
        for e in props(template, name).get("Events", {}).values()
        if e["Type"] in ("HttpApi", "Api")
    ]
    # Slack events, and the 👍/👎 buttons (interactivity), both go to the ack function.
    assert sorted(r["Path"] for _, r in routes) == ["/slack/events", "/slack/interactivity"]
    for name, route in routes:
        assert name == "SlackEventsFunction"
        assert route["ApiId"] == ref("SlackHttpApi")
        assert route["Method"].upper() == "POST"


def test_outputs(template: dict[str, Any]) -> None:
    outputs = template["Outputs"]
    assert outputs["SlackRequestUrl"]["Value"] == {
        "Fn::Sub": "https://${SlackHttpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}/slack/events"
    }
    assert outputs["JobsQueueUrl"]["Value"] == ref("JobsQueue")
    assert outputs["JobsDLQUrl"]["Value"] == ref("JobsDLQ")
    assert outputs["StateTableName"]["Value"] == ref("StateTable")
    assert outputs["BotSecretsArn"]["Value"] == ref("BotSecrets")
    for name in FUNCTIONS:
        assert outputs[f"{name}Name"]["Value"] == ref(name)


def test_the_worker_and_the_api_have_a_ceiling(template: dict[str, Any]) -> None:
    jobs = [
        e["Properties"]
        for e in props(template, "AnswerWorkerFunction")["Events"].values()
        if e["Type"] == "SQS"
    ][0]
    assert jobs["ScalingConfig"] == {"MaximumConcurrency": ref("WorkerMaxConcurrency")}
    assert template["Parameters"]["WorkerMaxConcurrency"]["MinValue"] >= 2  # SQS's own minimum
    limits = props(template, "SlackHttpApi")["DefaultRouteSettings"]
    assert (
        limits["ThrottlingRateLimit"] > 0
        and limits["ThrottlingBurstLimit"] >= limits["ThrottlingRateLimit"]
    )
