"""`make deploy`: build and deploy the stack, then hand over what the Slack app needs.

    make deploy                                   # the `default` stack in samconfig.toml
    make deploy CONFIG_ENV=prod PARAMS="VpcId=vpc-0abc SubnetIds=subnet-1,subnet-2 \\
        CodeaskConfig='{\"repos\": {...}, \"channels\": {...}}'"
    make deploy PARAMS=file://deploy-params.yaml  # sam reads Key: value pairs from a file
    .venv/bin/python scripts/deploy.py --outputs-only   # after a deploy made some other way

In order: check the AWS credentials and region (before a minute of building), `sam build`,
`sam deploy` (samconfig.toml's CONFIG_ENV section, PARAMS as --parameter-overrides, an
unchanged stack is not an error), then read the stack's outputs, print the SlackRequestUrl,
write slack/manifest.deployed.yaml (the manifest with its request URL filled in) and print the
one command that puts the bot's secrets into BotSecretsArn. No secret value is read or printed.
On an existing stack, parameters left out of PARAMS keep their deployed values.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SAMCONFIG = ROOT / "samconfig.toml"
MANIFEST = ROOT / "slack" / "manifest.yaml"
DEPLOYED_MANIFEST = ROOT / "slack" / "manifest.deployed.yaml"
SAM = ROOT / ".venv-sam" / "bin" / "sam"

# What slack/manifest.yaml says where the deployed SlackRequestUrl output belongs.
PLACEHOLDER = "https://REPLACE-WITH-SlackRequestUrl/slack/events"
# The 👍/👎 buttons post to a second route on the same API.
INTERACTIVITY_PLACEHOLDER = "https://REPLACE-WITH-SlackRequestUrl/slack/interactivity"
# The keys of the BotSecrets JSON (codeask/secrets.py reads them; a test keeps the two in step).
SECRET_KEYS = ("SLACK_SIGNING_SECRET", "SLACK_BOT_TOKEN", "ANTHROPIC_API_KEY", "GIT_TOKEN")
SECRETS_FILE = "codeask-secrets.json"
# Lambda's runtime in template.yaml; `sam build` needs this interpreter on PATH.
BUILD_PYTHON = "3.13"

NO_CREDENTIALS = (
    "no AWS credentials found. Configure some first, e.g. `aws configure`, `aws sso login "
    "--profile NAME` then AWS_PROFILE=NAME, or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, "
    "and run this again."
)


class DeployError(Exception):
    """A problem the person deploying can fix; printed as one message, never as a traceback."""


@dataclass(frozen=True)
class Target:
    """Where samconfig.toml's environment deploys: its stack and, if it pins them, region and profile."""

    config_env: str
    stack_name: str
    region: str | None = None
    profile: str | None = None


def say(text: str = "") -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


# ------------------------------------------------------------------ samconfig.toml and the manifest


def read_target(samconfig: Path, config_env: str) -> Target:
    """The stack `sam deploy --config-env ENV` deploys: [ENV.deploy.parameters] over [ENV.global.parameters]."""
    try:
        config = tomllib.loads(samconfig.read_text())
    except OSError as e:
        raise DeployError(f"cannot read {samconfig}: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise DeployError(f"{samconfig} is not valid TOML: {e}") from None
    envs = sorted(k for k, v in config.items() if isinstance(v, dict))
    section = config.get(config_env)
    if not isinstance(section, dict):
        raise DeployError(
            f"CONFIG_ENV={config_env!r} is not an environment in {samconfig.name} "
            f"(it has: {', '.join(envs) or 'none'})"
        )
    merged: dict[str, Any] = {}
    for command in ("global", "deploy"):  # sam: the command's own parameters win over global
        params = (section.get(command) or {}).get("parameters") or {}
        merged.update(params)
    stack = merged.get("stack_name")
    if not isinstance(stack, str) or not stack:
        raise DeployError(
            f"{samconfig.name} has no stack_name for {config_env!r}: add it under "
            f"[{config_env}.global.parameters]"
        )
    region = merged.get("region")
    profile = merged.get("profile")
    return Target(
        config_env,
        stack,
        region if isinstance(region, str) and region else None,
        profile if isinstance(profile, str) and profile else None,
    )


def fill_manifest(text: str, request_url: str) -> str:
    """The manifest with every request URL placeholder replaced by the deployed one."""
    if not request_url.startswith("https://"):
        raise DeployError(f"the stack's SlackRequestUrl is not an https URL: {request_url!r}")
    if PLACEHOLDER not in text:
        raise DeployError(
            f"{MANIFEST.relative_to(ROOT)} has no request URL placeholder {PLACEHOLDER}: "
            "nothing to fill in"
        )
    interactivity = request_url.rsplit("/slack/events", 1)[0] + "/slack/interactivity"
    return text.replace(PLACEHOLDER, request_url).replace(INTERACTIVITY_PLACEHOLDER, interactivity)


def secrets_command(secret_arn: str, region: str) -> str:
    """The one command that puts the bot's secrets in (values from a file, not the command line)."""
    return (
        f"aws secretsmanager put-secret-value --region {shlex.quote(region)} "
        f"--secret-id {shlex.quote(secret_arn)} --secret-string file://{SECRETS_FILE}"
    )


def secrets_file_shape() -> str:
    return "{" + ", ".join(f'"{k}": "…"' for k in SECRET_KEYS) + "}"


# ------------------------------------------------------------------ AWS


def aws_session(target: Target) -> tuple[Any, str, str]:
    """A boto3 session with working credentials: (session, account, region), or a clear DeployError."""
    import boto3
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        NoCredentialsError,
        ProfileNotFound,
    )

    try:
        # botocore reads AWS_DEFAULT_REGION and the profile, but not AWS_REGION; sam and aws do.
        region = target.region or os.environ.get("AWS_REGION") or None
        session = boto3.Session(profile_name=target.profile, region_name=region)
        credentials = session.get_credentials()
    except ProfileNotFound as e:
        raise DeployError(f"{e}. Check AWS_PROFILE or the profile in samconfig.toml.") from None
    except BotoCoreError as e:  # a broken config or credentials file, an SSO token gone stale
        raise DeployError(f"cannot load AWS credentials: {e}") from None
    if credentials is None:
        raise DeployError(NO_CREDENTIALS)
    region = session.region_name
    if not region:
        raise DeployError(
            "no AWS region: set AWS_REGION (or region in your AWS profile, or region under "
            f"[{target.config_env}.deploy.parameters] in samconfig.toml)"
        )
    try:
        identity = session.client("sts").get_caller_identity()
    except NoCredentialsError:
        raise DeployError(NO_CREDENTIALS) from None
    except ClientError as e:
        err = e.response.get("Error", {})
        raise DeployError(
            f"AWS did not accept these credentials ({err.get('Code', 'error')}: "
            f"{err.get('Message', '')}). Refresh them (e.g. `aws sso login`) and run this again."
        ) from None
    except BotoCoreError as e:
        raise DeployError(f"cannot reach AWS to check the credentials: {e}") from None
    return session, str(identity.get("Account", "?")), region


def stack_outputs(session: Any, stack_name: str, region: str) -> dict[str, str]:
    """The stack's outputs by key, or a DeployError saying why there are none to read."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        stacks = session.client("cloudformation").describe_stacks(StackName=stack_name)["Stacks"]
    except ClientError as e:
        message = e.response.get("Error", {}).get("Message", str(e))
        if "does not exist" in message:
            raise DeployError(
                f"stack {stack_name!r} does not exist in {region}. Deploy it first (make deploy), "
                "or set CONFIG_ENV/AWS_REGION to where it was deployed."
            ) from None
        raise DeployError(f"cannot read stack {stack_name!r}: {message}") from None
    except BotoCoreError as e:
        raise DeployError(f"cannot read stack {stack_name!r}: {e}") from None
    if not stacks:
        raise DeployError(f"stack {stack_name!r} does not exist in {region}")
    stack = stacks[0]
    status = str(stack.get("StackStatus", ""))
    if status == "REVIEW_IN_PROGRESS":
        raise DeployError(
            f"stack {stack_name!r} has not been created: its first changeset was not executed"
        )
    if status.endswith(("_IN_PROGRESS", "_FAILED")) or status == "ROLLBACK_COMPLETE":
        raise DeployError(
            f"stack {stack_name!r} is {status}; see its events in the CloudFormation console"
        )
    return {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs") or []}


# ------------------------------------------------------------------ sam


def sam_commands(config_env: str, params: str, region: str) -> list[list[str]]:
    """`sam build` and `sam deploy` as run; PARAMS goes through as one --parameter-overrides value."""
    deploy = [
        str(SAM),
        "deploy",
        "--config-env",
        config_env,
        "--region",
        region,
        "--no-fail-on-empty-changeset",
    ]
    if params.strip():
        deploy += ["--parameter-overrides", params.strip()]
    return [[str(SAM), "build", "--config-env", config_env], deploy]


def _runs(python: str | None) -> bool:
    if not python:
        return False
    try:
        return subprocess.run([python, "-V"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def sam_env() -> dict[str, str]:
    """The environment for sam: no telemetry, and a working python3.13 on PATH for `sam build`."""
    env = {**os.environ, "SAM_CLI_TELEMETRY": os.environ.get("SAM_CLI_TELEMETRY", "0")}
    if _runs(shutil.which(f"python{BUILD_PYTHON}", path=env.get("PATH"))):
        return env
    try:  # on pyenv machines the shim exists but fails unless the version is selected
        latest = subprocess.run(
            ["pyenv", "latest", BUILD_PYTHON], capture_output=True, text=True, timeout=30
        ).stdout.strip()
        prefix = subprocess.run(
            ["pyenv", "prefix", latest], capture_output=True, text=True, timeout=30
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return env
    if prefix and _runs(str(Path(prefix) / "bin" / f"python{BUILD_PYTHON}")):
        env["PATH"] = f"{prefix}/bin{os.pathsep}{env.get('PATH', '')}"
    return env


def run_sam(commands: list[list[str]]) -> None:
    if not SAM.exists():
        raise DeployError(
            f"{SAM.relative_to(ROOT)} is missing: run `make deploy`, which installs it"
        )
    env = sam_env()
    for cmd in commands:
        say("+ " + shlex.join([Path(cmd[0]).name, *cmd[1:]]))
        done = subprocess.run(cmd, cwd=ROOT, env=env)  # stdin stays ours: confirm the changeset
        if done.returncode != 0:
            raise DeployError(
                f"`sam {cmd[1]}` failed (exit {done.returncode}); see its output above"
            )


# ------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--outputs-only",
        action="store_true",
        help="skip sam build/deploy: only read the stack's outputs and write the manifest",
    )
    parser.add_argument("--samconfig", type=Path, default=SAMCONFIG, help=argparse.SUPPRESS)
    parser.add_argument("--manifest", type=Path, default=MANIFEST, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=DEPLOYED_MANIFEST, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    config_env = os.environ.get("CONFIG_ENV") or "default"
    params = os.environ.get("PARAMS") or ""
    try:
        target = read_target(args.samconfig, config_env)
        session, account, region = aws_session(target)
        say(f"Stack {target.stack_name} (CONFIG_ENV={config_env}) in account {account}, {region}")
        if not args.outputs_only:
            run_sam(sam_commands(config_env, params, region))
        outputs = stack_outputs(session, target.stack_name, region)
        missing = [k for k in ("SlackRequestUrl", "BotSecretsArn") if not outputs.get(k)]
        if missing:
            raise DeployError(
                f"stack {target.stack_name!r} has no {' or '.join(missing)} output: "
                "is it a codeask stack?"
            )
        try:
            text = fill_manifest(args.manifest.read_text(), outputs["SlackRequestUrl"])
            args.out.write_text(text)
        except OSError as e:
            raise DeployError(f"cannot write the deployed manifest: {e}") from None
    except DeployError as e:
        sys.stderr.write(f"deploy: error: {e}\n")
        return 1
    except KeyboardInterrupt:
        sys.stderr.write("deploy: interrupted\n")
        return 130
    url, arn = outputs["SlackRequestUrl"], outputs["BotSecretsArn"]
    try:
        shown = args.out.relative_to(ROOT)
    except ValueError:
        shown = args.out
    say()
    say(f"SlackRequestUrl: {url}")
    say(f"Slack app manifest with this URL: {shown}")
    say()
    say(f"Secrets: write {SECRETS_FILE} as {secrets_file_shape()} (GIT_TOKEN may be empty),")
    say("then run, and delete the file:")
    say(f"  {secrets_command(arn, region)}")
    say()
    say("Put the secrets in before Slack verifies the URL: the ack answers Slack's challenge")
    say("only with SLACK_SIGNING_SECRET. Then paste the manifest (App Manifest page) or the URL")
    say("(Event Subscriptions) into the Slack app.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
