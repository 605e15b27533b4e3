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


def _not_a_directory(tmp_path: Path, shape: str) -> Path:
    """Something on a storage root's path that is not a directory."""
    target = tmp_path / "in-the-way"
    if shape == "file":
        target.write_text("x")
    elif shape == "dangling link":
        target.symlink_to(tmp_path / "gone")
    elif shape == "link to a file":
        (tmp_path / "f").write_text("x")
        target.symlink_to(tmp_path / "f")
    elif shape == "fifo":
        import os

        os.mkfifo(target)
    return target


@pytest.mark.parametrize("shape", ["file", "dangling link", "link to a file", "fifo"])
@pytest.mark.parametrize(
    ("variable", "below"),
    [
        ("SNAPSHOT_ROOT", ""),
        ("SNAPSHOT_ROOT", "a/b"),
        ("MIRROR_ROOT", "m"),
        ("XDG_CACHE_HOME", ""),
    ],
)
def test_a_storage_root_with_something_not_a_directory_in_its_path_fails_at_start(
    tmp_path: Path, shape: str, variable: str, below: str
) -> None:
    # Given a storage root (or the cache home the defaults live under) at or below a non-directory
    blocker = _not_a_directory(tmp_path, shape)
    env = {"HOME": str(tmp_path), variable: str(blocker / below) if below else str(blocker)}

    # When the settings are read, then start-up stops naming the setting and what is in the way
    named = "MIRROR_ROOT" if variable == "XDG_CACHE_HOME" else variable
    with pytest.raises(ConfigError, match=f"{named}=.*in-the-way' is not a directory"):
        Settings.from_env(env)


def test_storage_roots_that_do_not_exist_yet_or_are_links_to_directories_are_fine(
    tmp_path: Path,
) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    env = {
        "SNAPSHOT_ROOT": str(tmp_path / "link" / "snaps"),
        "MIRROR_ROOT": str(tmp_path / "new/m"),
    }
    s = Settings.from_env(env)
    assert s.snapshot_root == tmp_path / "link" / "snaps"
    assert s.mirror_root == tmp_path / "new" / "m"
