"""CODEASK_CONFIG: which repos exist and which channels may ask; every mistake is named plainly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from codeask.botconfig import BotConfig, RepoEntry
from codeask.errors import BadInput, ConfigError

GOOD: dict[str, Any] = {
    "repos": {
        "billing": {"url": "https://github.com/acme/billing.git", "branch": "main"},
        "payments.api": {"url": "git@github.com:acme/payments-api.git"},
    },
    "channels": {"C0123ABCD": ["billing", "payments.api"], "G0PRIVATE1": "billing"},
    "team_id": "T0001",
}


def config(**changes: Any) -> dict[str, Any]:
    data = json.loads(json.dumps(GOOD))
    data.update(changes)
    return data


def load_error(data: object) -> str:
    """The message CODEASK_CONFIG `data` (inline JSON) is refused with."""
    raw = data if isinstance(data, str) else json.dumps(data)
    with pytest.raises(ConfigError) as e:
        BotConfig.load(raw)
    return str(e.value)


# -- loading --------------------------------------------------------------------------------------


def _check_good(cfg: BotConfig) -> None:
    assert cfg.repos["billing"] == RepoEntry(
        "billing", "https://github.com/acme/billing.git", "main"
    )
    assert cfg.repos["payments.api"].branch is None
    assert [r.name for r in cfg.repos_for("C0123ABCD") or []] == ["billing", "payments.api"]
    assert [r.name for r in cfg.repos_for("G0PRIVATE1") or []] == ["billing"]
    assert cfg.team_id == "T0001"


def test_inline_json_is_loaded() -> None:
    # Given CODEASK_CONFIG holds the JSON itself (with surrounding whitespace, as env files do)
    raw = "\n  " + json.dumps(GOOD, indent=2) + "\n"

    # When it is loaded
    cfg = BotConfig.load(raw)

    # Then repos and the channels' repos are as written; a single name stands for a list of one
    _check_good(cfg)


def test_a_path_to_a_json_file_is_loaded(tmp_path: Path) -> None:
    # Given CODEASK_CONFIG names a file holding the JSON
    path = tmp_path / "codeask.json"
    path.write_text(json.dumps(GOOD))

    # When it is loaded
    cfg = BotConfig.load(f"  {path}\n")

    # Then it is the same configuration
    _check_good(cfg)


def test_a_path_under_home_is_expanded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "codeask.json").write_text(json.dumps(GOOD))
    _check_good(BotConfig.load("~/codeask.json"))


def test_an_unlisted_channel_has_no_repos() -> None:
    # Given a loaded configuration
    cfg = BotConfig.load(json.dumps(GOOD))

    # Then a channel it does not list (or a DM) may see nothing
    assert cfg.repos_for("C0NOTLISTED") is None
    assert cfg.repos_for("D0DIRECT1") is None


def test_team_id_is_optional_and_channels_may_be_empty() -> None:
    cfg = BotConfig.load(json.dumps(config(team_id=None, channels={})))
    assert cfg.team_id is None and cfg.channels == {}


# -- every validation error names the problem -----------------------------------------------------


def test_a_file_that_cannot_be_read_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "codeask.json"
    message = load_error(str(missing))
    assert "cannot be read" in message and str(missing) in message


def test_a_directory_instead_of_a_file_is_named(tmp_path: Path) -> None:
    message = load_error(str(tmp_path))
    assert "cannot be read" in message and str(tmp_path) in message


@pytest.mark.parametrize("raw", ['{"repos": ', "{'repos': {}}", '{"repos": {}} trailing'])
def test_invalid_json_is_named(raw: str) -> None:
    assert "not valid JSON" in load_error(raw)


def test_invalid_json_in_a_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "codeask.json"
    path.write_text('{"repos": {"billing": }}')
    assert "not valid JSON" in load_error(str(path))


@pytest.mark.parametrize("data", [[GOOD], "config", 3, None])
def test_a_config_that_is_not_an_object_is_refused(tmp_path: Path, data: Any) -> None:
    path = tmp_path / "codeask.json"
    path.write_text(json.dumps(data))
    assert "must be a JSON object" in load_error(str(path))


@pytest.mark.parametrize(
    "repos", [None, {}, [], "billing"], ids=["missing", "empty", "list", "str"]
)
def test_missing_or_empty_repos_are_named(repos: Any) -> None:
    data = config(repos=repos)
    if repos is None:
        del data["repos"]
    assert '"repos"' in load_error(data)


@pytest.mark.parametrize("channels", [None, [], "C0123ABCD"], ids=["missing", "list", "str"])
def test_missing_channels_are_named(channels: Any) -> None:
    data = config(channels=channels)
    if channels is None:
        del data["channels"]
    assert '"channels"' in load_error(data)


def test_a_channel_naming_an_unknown_repo_names_the_channel_the_repo_and_what_is_known() -> None:
    # Given a channel that lists a repo the config does not define
    data = config(channels={"C0123ABCD": ["billing", "biling"]})

    # When it is loaded
    message = load_error(data)

    # Then the message names the channel, the unknown repo and the known ones
    assert "C0123ABCD" in message
    assert "'biling'" in message
    assert "unknown repos" in message
    assert "billing" in message and "payments.api" in message


@pytest.mark.parametrize(
    "channel",
    ["D0DIRECT1", "DABCDEF12", "c0123abcd", "#general", "general", "C01", "U0HUMAN12",
     "C0123ABCD\n", " C0123ABCD", ""],
)  # fmt: skip
def test_a_dm_or_anything_but_a_channel_id_is_refused_naming_it(channel: str) -> None:
    # Given a "channel" that is a DM id, a name, or otherwise not a channel id
    data = config(channels={channel: ["billing"]})

    # When it is loaded
    message = load_error(data)

    # Then the message quotes it and says DMs cannot be configured
    assert repr(channel) in message
    assert "not a Slack channel ID" in message
    assert "DMs cannot be configured" in message


@pytest.mark.parametrize("names", [[], None, 5, {"billing": True}, [["billing"]], [None]])
def test_a_channel_without_a_list_of_repo_names_is_named(names: Any) -> None:
    # Given a channel whose repos are not a non-empty list of names
    data = config(channels={"C0123ABCD": names})

    # When it is loaded
    message = load_error(data)

    # Then the channel is named (and it is a ConfigError, not a crash)
    assert "C0123ABCD" in message


@pytest.mark.parametrize(
    "spec", [{}, {"url": ""}, {"url": None}, {"url": 5}, "https://github.com/acme/billing.git", None],
    ids=["no-url", "empty-url", "null-url", "int-url", "string-spec", "null-spec"],
)  # fmt: skip
def test_a_repo_without_a_url_is_named(spec: Any) -> None:
    data = config(repos={"billing": spec}, channels={"C0123ABCD": ["billing"]})
    message = load_error(data)
    assert "'billing'" in message and '"url"' in message


@pytest.mark.parametrize(
    "name",
    ["../evil", "", "-rf", ".hidden", "has space", "a/b", "x" * 65, "billing\n", "naïve", "a:b"],
)
def test_a_bad_repo_name_is_refused_naming_it(name: str) -> None:
    # Given a repo name that could not safely be a directory or a reference
    data = config(repos={name: {"url": "https://github.com/acme/x.git"}}, channels={})

    # When it is loaded
    message = load_error(data)

    # Then the message quotes the name and says what is allowed
    assert repr(name) in message
    assert "letters, digits" in message


@pytest.mark.parametrize("name", ["a", "billing", "Payments_API-2", "x" * 64, "9lives", "v1.2"])
def test_good_repo_names_are_accepted(name: str) -> None:
    cfg = BotConfig.from_dict({"repos": {name: {"url": "https://x.invalid/r.git"}}, "channels": {}})
    assert list(cfg.repos) == [name]


@pytest.mark.parametrize("branch", ["", "   ", 5, ["main"]])
def test_an_empty_or_non_string_branch_is_named(branch: Any) -> None:
    data = config(repos={"billing": {"url": "https://x.invalid/b.git", "branch": branch}},
                  channels={})  # fmt: skip
    message = load_error(data)
    assert "'billing'" in message and "branch" in message


@pytest.mark.parametrize("team", [1, ["T0001"], {"id": "T0001"}])
def test_a_team_id_that_is_not_a_string_is_named(team: Any) -> None:
    assert "team_id" in load_error(config(team_id=team))


def test_config_errors_are_bad_input() -> None:
    # A wrong configuration is the operator's to fix, reported as such (not a crash)
    with pytest.raises(BadInput):
        BotConfig.load("{}")


def test_readable_is_the_channels_current_permission_intersected_with_the_names_given() -> None:
    # Given two channels with their own repos
    config = BotConfig.from_dict({
        "repos": {"a": {"url": "https://h/a.git"}, "b": {"url": "https://h/b.git"},
                  "c": {"url": "https://h/c.git"}},
        "channels": {"C0AAAAAAA": ["a", "b"], "C0CCCCCCC": ["c"]},
    })  # fmt: skip
    # Then only names the channel may read come back, in the order asked, once each
    assert [e.name for e in config.readable("C0AAAAAAA", ["b", "c", "a", "b"])] == ["b", "a"]
    # A repo of another channel, an unknown repo, or an unknown channel gives nothing
    assert config.readable("C0AAAAAAA", ["c", "zz"]) == []
    assert config.readable("C0UNKNOWN", ["a"]) == []
    assert config.readable("C0CCCCCCC", []) == []


@pytest.mark.parametrize(
    "data", [b'{"repos": {"\xff": 1}}', b"\xff\xfe{}", b'{"repos": {}}\xc3', b"\xed\xa0\x80{}"]
)
def test_a_config_file_that_is_not_utf8_is_a_config_error(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(data)
    with pytest.raises(ConfigError, match="not UTF-8 text"):
        BotConfig.load(str(path))


# -- part of a repo: `paths` on the repo, or on a channel's grant ---------------------------------

MONO: dict[str, Any] = {
    "repos": {
        "mono": {"url": "https://github.com/acme/mono.git"},
        "site": {"url": "https://github.com/acme/site.git", "paths": ["docs/**", "!docs/internal/**"]},
    },
    "channels": {
        "C0PAYMENTS": [{"repo": "mono", "paths": ["services/payments/**", "libs/billing/**"]}, "site"],
        "C0PLATFORM": ["mono"],
        "C0DOCSONLY": {"repo": "site", "paths": ["docs/api/**"]},
    },
}  # fmt: skip


def test_a_grant_scopes_one_channel_while_another_reads_the_whole_repo() -> None:
    # Given one repo granted whole to #platform and in part to #payments
    cfg = BotConfig.from_dict(MONO)

    # When each channel's repos are looked up
    payments = {e.name: e.scope for e in cfg.repos_for("C0PAYMENTS") or []}
    platform = {e.name: e.scope for e in cfg.repos_for("C0PLATFORM") or []}

    # Then #payments sees only its subtrees of mono, and #platform all of it
    assert payments["mono"].admits("services/payments/api/charge.py")
    assert payments["mono"].admits("libs/billing/tax.py")
    assert not payments["mono"].admits("services/search/index.py")
    assert not payments["mono"].admits("libs/billing-old/x.py")
    assert platform["mono"].whole and platform["mono"].admits("services/search/index.py")
    # And readable() (what the worker uses) gives the same scoped entries
    assert cfg.readable("C0PAYMENTS", ["mono"])[0].scope == payments["mono"]
    assert cfg.repos["mono"].scope.whole


def test_a_repos_own_paths_hold_for_every_channel_and_a_grant_only_narrows_them() -> None:
    cfg = BotConfig.from_dict(MONO)
    site = {e.name: e.scope for e in cfg.repos_for("C0PAYMENTS") or []}["site"]
    # The repo's paths, with their exclusion (the last matching glob decides)
    assert site.admits("docs/guide.md") and not site.admits("docs/internal/salaries.md")
    assert not site.admits("src/app.py")
    # A grant inside the repo's paths narrows them; it cannot reach past them
    narrow = cfg.readable("C0DOCSONLY", ["site"])[0].scope
    assert narrow.admits("docs/api/v1.md") and not narrow.admits("docs/guide.md")
    wider = BotConfig.from_dict(
        {**MONO, "channels": {"C0WIDER01": [{"repo": "site", "paths": ["**"]}]}}
    )
    assert not wider.readable("C0WIDER01", ["site"])[0].scope.admits("src/app.py")


def test_old_configs_still_load_unscoped() -> None:
    cfg = BotConfig.load(json.dumps(GOOD))
    assert all(e.scope.whole for e in cfg.repos_for("C0123ABCD") or [])
    assert cfg.grant_paths == {}


@pytest.mark.parametrize(
    ("grant", "says"),
    [
        ({"repo": "mono", "paths": []}, "non-empty list"),
        ({"repo": "mono", "paths": "services/**"}, "non-empty list"),
        ({"repo": "mono", "paths": ["services/**", ""]}, "empty or non-string glob"),
        ({"repo": "mono", "paths": [7]}, "empty or non-string glob"),
        ({"repo": "mono", "paths": ["../other/**"]}, "inside the repository"),
        ({"repo": "mono", "paths": ["~/x"]}, "inside the repository"),
        ({"repo": "mono", "paths": ["!services/legacy/**"]}, "only excludes"),
        ({"repo": "mono", "path": ["services/**"]}, "unknown keys ['path']"),
        ({"repo": "mono", "paths": ["a/**"], "branch": "dev"}, "unknown keys ['branch']"),
        ({"paths": ["services/**"]}, "list of repo names"),
        ({"repo": "nope", "paths": ["services/**"]}, "unknown repos ['nope']"),
    ],
)
def test_a_bad_grant_is_named_with_its_channel(grant: dict[str, Any], says: str) -> None:
    data = {"repos": MONO["repos"], "channels": {"C0PAYMENTS": [grant]}}
    message = load_error(data)
    assert "C0PAYMENTS" in message and says in message


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ({"url": "https://h/m.git", "paths": []}, "non-empty list"),
        ({"url": "https://h/m.git", "paths": ["a/**", None]}, "empty or non-string glob"),
        ({"url": "https://h/m.git", "path": ["a/**"]}, 'did you mean "paths"'),
    ],
)
def test_bad_repo_paths_are_named_with_the_repo(spec: dict[str, Any], says: str) -> None:
    message = load_error({"repos": {"mono": spec}, "channels": {}})
    assert "'mono'" in message and says in message


def test_one_repo_granted_twice_to_a_channel_with_different_paths_is_refused() -> None:
    data = {"repos": MONO["repos"],
            "channels": {"C0PAYMENTS": ["mono", {"repo": "mono", "paths": ["libs/**"]}]}}  # fmt: skip
    assert "twice with different paths" in load_error(data)
    # The same plain name twice, as an old config may have it, still loads
    cfg = BotConfig.from_dict(
        {"repos": MONO["repos"], "channels": {"C0PLATFORM": ["mono", "mono"]}}
    )
    assert cfg.channels["C0PLATFORM"] == ("mono",)


def test_what_was_read_earlier_is_shown_again_only_under_a_scope_at_least_as_wide() -> None:
    cfg = BotConfig.from_dict(MONO)
    payments = cfg.readable("C0PAYMENTS", ["mono"])[0].scope.fingerprint()
    # A turn read under the channel's current scope may be carried on
    assert cfg.may_reread("C0PAYMENTS", ["mono"], [payments])
    # One read from the whole repo (or recorded before scopes existed) quotes code outside it
    assert not cfg.may_reread("C0PAYMENTS", ["mono"], [""])
    assert not cfg.may_reread("C0PAYMENTS", ["mono"], None)
    # A channel that reads the whole repo now may see what any narrower scope read
    assert cfg.may_reread("C0PLATFORM", ["mono"], [payments])
    # A repo no longer readable, a record that does not line up, or nothing read: no
    assert not cfg.may_reread("C0PLATFORM", ["mono", "site"], ["", ""])
    assert not cfg.may_reread("C0PAYMENTS", ["mono"], [payments, ""])
    assert not cfg.may_reread("C0PAYMENTS", [], [])
