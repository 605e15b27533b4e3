"""scripts/deploy.py offline: the manifest it writes, the stack it looks for, and how it fails.

AWS is moto in server mode (the session `moto` fixture from tests/fakes/stack.py) at
AWS_ENDPOINT_URL; `sam` itself is never run, only the command lines it would be given.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "deploy.py"
URL = "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/slack/events"
ARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:BotSecrets-AbCdEf"


def _load() -> ModuleType:
    name = "deploy_script"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


deploy = _load()


def aws_env(moto_url: str, **extra: str) -> dict[str, str]:
    """A clean environment for the script: moto's endpoint, no profile, nothing from ~/.aws."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("AWS_") and k not in ("CONFIG_ENV", "PARAMS")
    }
    env.update(
        {
            "AWS_ENDPOINT_URL": moto_url,
            "AWS_CONFIG_FILE": os.devnull,
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_REGION": "eu-west-1",
        }
    )
    env.update(extra)
    return env


def use_env(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    for k in list(os.environ):
        if k.startswith("AWS_") or k in ("CONFIG_ENV", "PARAMS"):
            monkeypatch.delenv(k)
    for k, v in env.items():
        monkeypatch.setenv(k, v)


CREDS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}


def samconfig(tmp_path: Path, stack: str) -> Path:
    path = tmp_path / "samconfig.toml"
    path.write_text(f'version = 0.1\n[default.global.parameters]\nstack_name = "{stack}"\n')
    return path


# ------------------------------------------------------------------ the manifest


def test_the_placeholder_becomes_the_deployed_url() -> None:
    text = (ROOT / "slack" / "manifest.yaml").read_text()
    assert text.count(deploy.PLACEHOLDER) == 1
    filled = deploy.fill_manifest(text, URL)
    assert deploy.PLACEHOLDER not in filled
    original, deployed = yaml.safe_load(text), yaml.safe_load(filled)
    assert deployed["settings"]["event_subscriptions"]["request_url"] == URL
    interactivity = URL.rsplit("/slack/events", 1)[0] + "/slack/interactivity"
    assert deployed["settings"]["interactivity"]["request_url"] == interactivity
    deployed["settings"]["event_subscriptions"]["request_url"] = deploy.PLACEHOLDER
    deployed["settings"]["interactivity"]["request_url"] = deploy.INTERACTIVITY_PLACEHOLDER
    assert deployed == original, "only the request URLs change"


def test_every_placeholder_is_filled_and_nothing_else_changes() -> None:
    text = f"a: {deploy.PLACEHOLDER}\nb: {deploy.PLACEHOLDER}\nc: REPLACE-WITH-something-else\n"
    assert (
        deploy.fill_manifest(text, URL) == f"a: {URL}\nb: {URL}\nc: REPLACE-WITH-something-else\n"
    )


def test_a_manifest_without_the_placeholder_or_a_non_https_url_is_refused() -> None:
    with pytest.raises(deploy.DeployError, match="no request URL placeholder"):
        deploy.fill_manifest("settings: {}\n", URL)
    with pytest.raises(deploy.DeployError, match="not an https URL"):
        deploy.fill_manifest(deploy.PLACEHOLDER, "http://example.com/slack/events")


# ------------------------------------------------------------------ samconfig.toml


def test_the_stack_name_per_config_env_comes_from_samconfig() -> None:
    default = deploy.read_target(ROOT / "samconfig.toml", "default")
    prod = deploy.read_target(ROOT / "samconfig.toml", "prod")
    assert (default.stack_name, prod.stack_name) == ("codeask", "codeask-prod")
    assert default.config_env == "default"


def test_deploy_parameters_win_over_global_ones(tmp_path: Path) -> None:
    path = tmp_path / "samconfig.toml"
    path.write_text(
        "version = 0.1\n"
        '[staging.global.parameters]\nstack_name = "from-global"\nregion = "us-east-2"\n'
        '[staging.deploy.parameters]\nstack_name = "from-deploy"\nprofile = "ops"\n'
    )
    target = deploy.read_target(path, "staging")
    assert (target.stack_name, target.region, target.profile) == ("from-deploy", "us-east-2", "ops")


def test_an_unknown_env_or_a_missing_stack_name_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(deploy.DeployError, match=r"CONFIG_ENV='qa'.*\(it has: default, prod\)"):
        deploy.read_target(ROOT / "samconfig.toml", "qa")
    path = tmp_path / "samconfig.toml"
    path.write_text("version = 0.1\n[dev.deploy.parameters]\nresolve_s3 = true\n")
    with pytest.raises(deploy.DeployError, match=r"no stack_name for 'dev'"):
        deploy.read_target(path, "dev")
    with pytest.raises(deploy.DeployError, match="cannot read"):
        deploy.read_target(tmp_path / "missing.toml", "default")


# ------------------------------------------------------------------ what sam and the asker are given


def test_sam_gets_the_config_env_and_params_as_one_override() -> None:
    params = "VpcId=vpc-1 SubnetIds=subnet-a,subnet-b CodeaskConfig='{\"repos\": {}}'"
    build, sam_deploy = deploy.sam_commands("prod", params, "eu-west-1")
    assert build[1:] == ["build", "--config-env", "prod"]
    assert sam_deploy[1:4] == ["deploy", "--config-env", "prod"]
    assert sam_deploy[sam_deploy.index("--region") + 1] == "eu-west-1"
    assert "--no-fail-on-empty-changeset" in sam_deploy  # a re-run with no change still finishes
    assert sam_deploy[-2:] == ["--parameter-overrides", params]
    assert "--parameter-overrides" not in deploy.sam_commands("default", "  ", "eu-west-1")[1]
    assert Path(build[0]) == ROOT / ".venv-sam" / "bin" / "sam"


def test_the_secrets_command_names_the_secret_and_no_value() -> None:
    from codeask.secrets import SECRET_KEYS

    assert set(deploy.SECRET_KEYS) == set(SECRET_KEYS), "the keys the Lambdas read"
    cmd = deploy.secrets_command(ARN, "eu-west-1")
    assert cmd.startswith("aws secretsmanager put-secret-value ")
    assert f"--secret-id {ARN}" in cmd and "--region eu-west-1" in cmd
    assert "--secret-string file://" in cmd
    shape = json.loads(deploy.secrets_file_shape())
    assert set(shape) == set(SECRET_KEYS) and set(shape.values()) == {"…"}


# ------------------------------------------------------------------ against moto


def run_script(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def test_no_credentials_is_one_clear_message(moto: Any) -> None:
    done = run_script(aws_env(moto.url))  # would build and deploy, but stops first
    assert done.returncode == 1
    assert "deploy: error: no AWS credentials found" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert "+ sam" not in done.stdout, "nothing is built without credentials"


def test_no_region_is_one_clear_message(moto: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    env = aws_env(moto.url, **CREDS)
    del env["AWS_REGION"]
    done = run_script(env, "--outputs-only")
    assert done.returncode == 1
    assert "deploy: error: no AWS region" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_missing_stack_is_one_clear_message(moto: Any) -> None:
    done = run_script(aws_env(moto.url, **CREDS, CONFIG_ENV="prod"), "--outputs-only")
    assert done.returncode == 1, done.stdout
    assert "stack 'codeask-prod' does not exist in eu-west-1" in done.stderr
    assert "Deploy it first" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


def test_the_outputs_make_the_deployed_manifest(
    moto: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import boto3

    use_env(monkeypatch, aws_env(moto.url, **CREDS))
    stack = f"codeask-test-{uuid.uuid4().hex[:8]}"
    template = {
        "Resources": {"Queue": {"Type": "AWS::SQS::Queue"}},
        "Outputs": {"SlackRequestUrl": {"Value": URL}, "BotSecretsArn": {"Value": ARN}},
    }
    boto3.client("cloudformation", region_name="eu-west-1").create_stack(
        StackName=stack, TemplateBody=json.dumps(template)
    )
    out = tmp_path / "manifest.deployed.yaml"
    code = deploy.main(
        ["--outputs-only", "--samconfig", str(samconfig(tmp_path, stack)), "--out", str(out)]
    )
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert f"SlackRequestUrl: {URL}" in printed.out
    assert deploy.secrets_command(ARN, "eu-west-1") in printed.out
    assert "+ sam" not in printed.out
    written = yaml.safe_load(out.read_text())
    assert written["settings"]["event_subscriptions"]["request_url"] == URL


def test_a_stack_without_the_outputs_is_not_taken_for_codeask(
    moto: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import boto3

    use_env(monkeypatch, aws_env(moto.url, **CREDS))
    stack = f"other-{uuid.uuid4().hex[:8]}"
    boto3.client("cloudformation", region_name="eu-west-1").create_stack(
        StackName=stack,
        TemplateBody=json.dumps({"Resources": {"Queue": {"Type": "AWS::SQS::Queue"}}}),
    )
    out = tmp_path / "manifest.deployed.yaml"
    code = deploy.main(
        ["--outputs-only", "--samconfig", str(samconfig(tmp_path, stack)), "--out", str(out)]
    )
    assert code == 1
    assert "has no SlackRequestUrl or BotSecretsArn output" in capsys.readouterr().err
    assert not out.exists()
