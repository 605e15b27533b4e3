"""Settings are read once from the environment and fail fast with a clear message."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeask.errors import ConfigError
from codeask.settings import Settings


def test_defaults_live_under_the_user_cache(tmp_path: Path) -> None:
    s = Settings.from_env({"HOME": str(tmp_path)})
    assert s.mirror_root == tmp_path / ".cache" / "codeask" / "mirrors"
    assert s.snapshot_root == tmp_path / ".cache" / "codeask" / "snapshots"
    assert s.anthropic_api_key is None and s.deadline_s is None


def test_lambda_defaults_to_tmp_and_mirror_root_overrides() -> None:
    s = Settings.from_env({"AWS_LAMBDA_FUNCTION_NAME": "worker", "MIRROR_ROOT": "/mnt/efs/mirrors"})
    assert s.mirror_root == Path("/mnt/efs/mirrors")
    assert s.snapshot_root == Path("/tmp/codeask/snapshots")


def test_values_are_parsed() -> None:
    s = Settings.from_env(
        {"HOME": "/h", "CODEASK_DENY_PATHS": "ops/secrets, *.sqlite ,", "CODEASK_SEARCH_TIMEOUT_S": "2.5",
         "CODEASK_DEADLINE_S": "30", "CODEASK_SNAPSHOTS_KEEP": "5", "ANTHROPIC_API_KEY": "k"}
    )  # fmt: skip
    assert s.deny_paths == ("ops/secrets", "*.sqlite")
    assert s.search_timeout_s == 2.5 and s.deadline_s == 30.0 and s.snapshots_keep == 5


def test_secrets_do_not_show_in_repr() -> None:
    s = Settings.from_env({"HOME": "/h", "ANTHROPIC_API_KEY": "sk-ant-very-secret"})
    assert "very-secret" not in repr(s)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"CODEASK_SEARCH_TIMEOUT_S": "soon"}, "CODEASK_SEARCH_TIMEOUT_S must be a number"),
        ({"CODEASK_SEARCH_TIMEOUT_S": "-1"}, "greater than 0"),
        ({"CODEASK_SNAPSHOTS_KEEP": "0"}, "at least 1"),
        ({"CODEASK_SNAPSHOTS_KEEP": "two"}, "whole number"),
        ({"RG_PATH": "/no/such/rg"}, "RG_PATH"),
        ({"CODEASK_STREAM": "sometimes"}, "CODEASK_STREAM must be on or off"),
        ({"CODEASK_STREAM_EDIT_S": "0"}, "greater than 0"),
    ],
)
def test_bad_values_fail_fast_naming_the_setting(env: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Settings.from_env({"HOME": "/h", **env})


def test_streaming_is_on_unless_turned_off_and_its_pace_can_be_set() -> None:
    s = Settings.from_env({"HOME": "/h"})
    assert s.stream and (s.stream_append_s, s.stream_edit_s) == (0.6, 2.0)
    s = Settings.from_env(
        {
            "HOME": "/h",
            "CODEASK_STREAM": "OFF",
            "CODEASK_STREAM_APPEND_S": "1",
            "CODEASK_STREAM_EDIT_S": "3",
        }
    )
    assert not s.stream and (s.stream_append_s, s.stream_edit_s) == (1.0, 3.0)
