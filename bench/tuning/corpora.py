"""Check (or, with --create, build) the tuning corpora under /work/corpora at their pinned commits."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(os.environ.get("CODEASK_CORPORA", "/work/corpora"))
MIRRORS = Path("/work/.mirror")
# A fixed identity and date make the corpus commit, and so its SHA, the same on every machine.
_COMMIT_ENV = {
    "GIT_AUTHOR_NAME": "codeask tuning",
    "GIT_AUTHOR_EMAIL": "tuning@example.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+0000",
    "GIT_COMMITTER_NAME": "codeask tuning",
    "GIT_COMMITTER_EMAIL": "tuning@example.invalid",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+0000",
}


@dataclass(frozen=True)
class Corpus:
    name: str
    url: str
    mirror: str  # folder under /work/.mirror that the search tool's `fetch` fills
    branch: str
    upstream: str  # the pinned upstream commit
    commit: str  # the corpus commit: upstream's tree as one root commit (minus blobs the snapshot lacks)
    dropped: tuple[str, ...] = ()  # paths whose blobs the snapshot lacks (files of 4 MiB and more)
    history: bool = False  # also keep NAME-full, a clone of the branch with its whole history
    # "tuning": the search tools were tuned on it; "independent": kept out of tuning, to check it
    role: str = "tuning"


# generated libm test data of 4 MiB and more, which the fetched snapshot does not hold
_LIBM_TEST_OUT = "cacos cacosh casin casinh catan catanh clog clog10 narrow-fma pow".split()

CORPORA = (
    Corpus(
        name="glibc",
        url="https://github.com/bminor/glibc",
        mirror="bminor+glibc",
        branch="master",
        upstream="04e750e75b73957cf1c791535a3f4319534a52fc",
        commit="6f6f8f3d2ee2b6244417e5a553bc7ff706a93379",
        dropped=(
            "localedata/locales/cns11643_stroke",
            *(f"math/auto-libm-test-out-{f}" for f in _LIBM_TEST_OUT),
        ),
    ),
    Corpus(
        name="pylint",
        url="https://github.com/pylint-dev/pylint",
        mirror="pylint-dev+pylint",
        branch="main",
        upstream="3a99b2d728d0c8ff5267e0c38ebad4f5ba228dac",
        commit="72fed49a423f20ab7101df927955aaeefd94fd1e",
        history=True,
    ),
    Corpus(
        name="charts",
        url="https://github.com/bitnami/charts",
        mirror="bitnami+charts",
        branch="main",
        upstream="5165628ae06697f8f68a670bef7739d93c4b7f44",
        commit="7710a8a782d93aa7288ffeccfcc6b710590bcb7f",
    ),
    Corpus(
        name="git",
        url="https://github.com/git/git",
        mirror="git+git",
        branch="master",
        upstream="1a3e64c6c4a623626ff0687008732a8e007e2a1c",
        commit="697ab864b5c7950eaf15bef98189197dc1ce9804",
        role="independent",
    ),
    Corpus(
        name="ansible",
        url="https://github.com/ansible/ansible",
        mirror="ansible+ansible",
        branch="devel",
        upstream="c9ac477e53a99e95781f333eec3329a935c1bf95",
        commit="d7aee0bcbd7fa19c9f34ce2d278ec5ff4832a76e",
        role="independent",
    ),
    Corpus(
        name="slack-sdk",
        url="https://github.com/slackapi/python-slack-sdk",
        mirror="slackapi+python-slack-sdk",
        branch="main",
        upstream="ae87985e2c3811ead978f31ea5a1e4a7ca5c3515",
        commit="c3de0414aae9c8953fb0d53e7364ba2c640aa39c",
        history=True,
        role="independent",
    ),
)
ROLES = ("tuning", "independent")


def git(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    full = {**os.environ, **(env or {})}
    out = subprocess.run(
        ["git", *args], cwd=cwd, env=full, check=True, capture_output=True, text=True
    )
    return out.stdout.strip()


def head(path: Path) -> str | None:
    try:
        return git("rev-parse", "HEAD", cwd=path)
    except (subprocess.CalledProcessError, FileNotFoundError, NotADirectoryError):
        return None


def create_commands(c: Corpus) -> list[str]:
    """The shell commands that build /work/corpora/NAME from the fetch tool's bare snapshot."""
    mirror = MIRRORS / c.mirror / "repo"
    dest = ROOT / c.name
    drop = "".join(f" {p}" for p in c.dropped)
    env = " ".join(f"{k}='{v}'" for k, v in _COMMIT_ENV.items())
    cmds = [
        f"# fetch tool: github:{c.url.removeprefix('https://github.com/')} -> {mirror}",
        f"git init -q -b {c.branch} {dest}",
        f"echo {mirror}/objects > {dest}/.git/objects/info/alternates",
        f"git -C {dest} read-tree {c.upstream}",
    ]
    if c.dropped:
        cmds.append(f"git -C {dest} rm -q --cached{drop}")
    cmds += [
        f"tree=$(git -C {dest} write-tree)",
        f"sha=$(echo 'Upstream {c.upstream}' | {env} git -C {dest} commit-tree $tree)",
        f"git -C {dest} reset -q --hard $sha",
        # pack only this commit's objects (a repack would copy the snapshot's promisor pack whole)
        f"git -C {dest} rev-list --objects HEAD | git -C {dest} pack-objects -q .git/objects/pack/pack >/dev/null",
        f"rm {dest}/.git/objects/info/alternates && git -C {dest} prune-packed",
    ]
    return cmds


def history_commands(c: Corpus) -> list[str]:
    """The commands that build NAME-full, the branch with its whole history, at the upstream commit."""
    mirror = MIRRORS / c.mirror / "repo"
    full = ROOT / f"{c.name}-full"
    return [
        f"git clone -q --single-branch --branch {c.branch} file://{mirror} {full}",
        f"git -C {full} reset -q --hard {c.upstream}",
    ]


def problems(c: Corpus) -> dict[Path, str]:
    """What is wrong with NAME (and NAME-full) on this machine; empty when all is in place."""
    want = {ROOT / c.name: c.commit}
    if c.history:
        want[ROOT / f"{c.name}-full"] = c.upstream
    return {
        path: f"{path}: HEAD is {got or 'missing'}, want {sha}"
        for path, sha in want.items()
        if (got := head(path)) != sha
    }


def _run(cmds: list[str]) -> None:
    script = "set -e\n" + "\n".join(x for x in cmds if not x.startswith("#"))
    subprocess.run(["bash", "-c", script], check=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument(
        "--create", action="store_true", help="build missing corpora from /work/.mirror"
    )
    ap.add_argument("--role", choices=ROLES, help="only the tuning or only the independent corpora")
    ap.add_argument("names", nargs="*", help="only these corpora")
    args = ap.parse_args(argv)
    bad = 0
    for c in CORPORA:
        if args.names and c.name not in args.names or args.role and c.role != args.role:
            continue
        builds = {ROOT / c.name: create_commands(c)}
        if c.history:
            builds[ROOT / f"{c.name}-full"] = history_commands(c)
        wrong = problems(c)
        if args.create:
            for path in wrong:
                if path.exists():
                    print(f"BAD {wrong[path]}; not touching a folder that exists: remove it first")
                else:
                    _run(builds[path])
            wrong = problems(c)
        if not wrong:
            print(f"ok  {c.name:8} {c.commit} (upstream {c.url} @ {c.upstream})")
            continue
        bad += 1
        for path, text in wrong.items():
            print(f"BAD {text}")
            print(f"    fetch github:{c.url.removeprefix('https://github.com/')}, then run:")
            for cmd in builds[path]:
                print(f"      {cmd}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
