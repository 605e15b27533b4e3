"""A deterministic synthetic repository of N source files, for benchmarks that need a big tree."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

WORDS = (
    "account billing invoice payment retry webhook signature session token cache redis queue worker "
    "order customer report export import parse render schedule notify email audit policy limit rate "
    "client server handler router config settings loader store repository mirror snapshot search"
).split()
LICENCE = (
    "# Copyright (c) 2026 Example Corp. All rights reserved.\n"
    "# Permission is hereby granted to use, copy and redistribute this file under the licence.\n"
)


def _module(rng: random.Random, i: int) -> str:
    a, b, c = rng.sample(WORDS, 3)
    lines = [LICENCE, f'"""The {a} {b} module number {i}."""', "", "import logging", ""]
    lines.append(f"{a.upper()}_{b.upper()}_LIMIT = {rng.randint(1, 500)}")
    lines.append("")
    lines.append(f"class {a.title()}{b.title()}{i}:")
    lines.append(f'    """Handles {a} for {c}."""')
    for j in range(rng.randint(3, 7)):
        verb = rng.choice(["load", "save", "check", "send", "build", "apply", "retry"])
        lines.append("")
        lines.append(f"    def {verb}_{c}_{j}(self, {a}_id, attempts=3):")
        lines.append(f"        for attempt in range(attempts):  # {rng.choice(WORDS)}")
        lines.append(f"            value = self.{b}.get({a}_id)")
        lines.append("            if value is not None:")
        lines.append(f"                return {c}_helper(value, attempt)")
        lines.append("        return None")
    lines.append("")
    return "\n".join(lines) + "\n"


def make_corpus(root: Path, files: int = 10_000, *, seed: int = 7, git: bool = True) -> Path:
    """Write `files` modules under `root` (100 per directory) and commit them if `git`."""
    marker = root / ".corpus-done"
    if marker.exists():
        return root
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        d = root / f"pkg{i // 1000}" / f"mod{(i // 100) % 10}"
        if i % 100 == 0:
            d.mkdir(parents=True, exist_ok=True)
        name = f"test_{i}.py" if i % 10 == 0 else f"m{i}.py"
        (d / name).write_text(_module(rng, i))
    (root / "README.md").write_text("# corpus\nA synthetic tree for benchmarks.\n")
    if git:
        env = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@example.invalid",
               "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@example.invalid",
               "PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(root)}  # fmt: skip
        for cmd in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"],
                    ["git", "commit", "-q", "-m", "corpus"]):  # fmt: skip
            subprocess.run(cmd, cwd=root, check=True, env=env)
    marker.write_text("")
    if git:
        (root / ".git" / "info" / "exclude").write_text(".corpus-done\n")
    return root
