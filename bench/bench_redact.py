"""The redaction scanner's speed against the scanner as it was before config shapes were added."""

from __future__ import annotations

import random
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "layers" / "codeask"))

from codeask.redact import mask_file, scan  # noqa: E402
from codeask.search.ripgrep import clean_text  # noqa: E402

# The last commit with the single-module scanner (codeask/redact.py); its scan() is the baseline.
BASELINE_COMMIT = "2f83ca006f3a93af73454cd9c701c4e3f4465dcc"
BASELINE_PATH = "layers/codeask/codeask/redact.py"


def baseline_scan() -> Callable[[str], tuple[str, dict[str, int]]] | None:
    """scan() of the baseline commit, loaded from git; None outside a clone that has it."""
    try:
        source = subprocess.run(
            ["git", "show", f"{BASELINE_COMMIT}:{BASELINE_PATH}"],
            cwd=ROOT, capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return None
    module = types.ModuleType("codeask_redact_baseline")
    sys.modules[module.__name__] = module  # its dataclasses look themselves up there
    exec(compile(source, "codeask_redact_baseline", "exec"), module.__dict__)  # noqa: S102
    return module.scan  # type: ignore[no-any-return]


def mixed_text() -> str:
    """The repository's own Python sources, concatenated: code, tests full of fake secrets, prose."""
    files = sorted(
        p for p in ROOT.rglob("*.py")
        if not {".venv", ".venv-sam", ".aws-sam", "out"} & set(p.relative_to(ROOT).parts)
    )  # fmt: skip
    return "".join(p.read_text(errors="replace") for p in files)


def big_yaml(size: int = 5_000_000, seed: int = 7) -> str:
    """Kubernetes manifests (deployments with env, config maps, a few secrets) up to `size`."""
    rng = random.Random(seed)
    parts: list[str] = []
    total = 0
    i = 0
    while total < size:
        sha = f"{rng.getrandbits(160):040x}"
        doc = (
            f"---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: svc-{i}\n"
            f"  labels:\n    app: svc-{i}\n    commit: {sha}\nspec:\n  replicas: {rng.randint(1, 5)}\n"
            "  template:\n    spec:\n      containers:\n        - name: app\n"
            f"          image: registry.example.com/svc-{i}@sha256:{rng.getrandbits(256):064x}\n"
            "          env:\n            - name: DB_HOST\n"
            f"              value: db-{i}.internal\n            - name: DB_PASSWORD\n"
            f"              valueFrom:\n                secretKeyRef:\n                  name: db-{i}\n"
            "                  key: password\n          resources:\n            limits:\n"
            f"              memory: {rng.randint(128, 2048)}Mi\n"
        )
        if i % 50 == 0:
            doc += (
                f"---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: db-{i}\ntype: Opaque\n"
                f"data:\n  password: {rng.randbytes(12).hex()}\n"
            )
        parts.append(doc)
        total += len(doc)
        i += 1
    return "".join(parts)


def paired_ms(
    a: Callable[[], object], b: Callable[[], object], repeats: int = 15
) -> tuple[float, float]:
    """Median CPU time of a and b, interleaved. CPU time, not wall time: both are pure
    computation, and on a shared machine wall time measures mostly the other tenants."""
    a(), b()  # warm caches (compiled patterns, judged names) on both sides
    ta, tb = [], []
    for _ in range(repeats):
        for fn, acc in ((a, ta), (b, tb)):
            t = time.process_time()
            fn()
            acc.append((time.process_time() - t) * 1000)
    return statistics.median(ta), statistics.median(tb)


def _lines_before(lines: list[str], old: object) -> list[str]:
    """What Toolbox.lines did before mask_file: private-key lines masked, nothing else."""
    for i in getattr(old, "private_key_lines", lambda _: ())(lines):
        lines[i] = "[REDACTED:private-key]"
    return lines


def run() -> list[dict]:
    old = baseline_scan()
    texts = {"repo sources": mixed_text(), "5 MB Kubernetes YAML": big_yaml()}
    rows: list[dict] = []
    for name, text in texts.items():
        size = f"{len(text) / 1e6:.1f} MB"
        if old is None:
            ms = paired_ms(lambda t=text: scan(t), lambda: None)[0]
            rows.append({"name": f"redaction scan of {name}", "a_ms": round(ms, 1), "size": size,
                         "note": f"baseline {BASELINE_COMMIT[:7]} not in this clone"})  # fmt: skip
            continue
        new_ms, old_ms = paired_ms(lambda t=text: scan(t), lambda t=text: old(t))
        rows.append({"name": f"redaction scan vs before config shapes: {name}",
                     "ratio": round(new_ms / old_ms, 2), "a_ms": round(new_ms, 1),
                     "b_ms": round(old_ms, 1), "size": size, "aim": "<= 1.5x"})  # fmt: skip
    # Toolbox.lines() on the 5 MB YAML, as it is (decode every line, mask_file) against as it
    # was (decode every line, mask PEM blocks only): what the whole-file pass adds to a read.
    raw = texts["5 MB Kubernetes YAML"].encode().split(b"\n")
    path = "deploy/all.yaml"
    after_ms, before_ms = paired_ms(
        lambda: mask_file([clean_text(r) for r in raw], path),
        lambda: _lines_before([clean_text(r) for r in raw], old),
        repeats=7,
    )
    rows.append({"name": "Toolbox.lines of the 5 MB YAML vs before whole-file masking",
                 "ratio": round(after_ms / before_ms, 2), "a_ms": round(after_ms, 1),
                 "b_ms": round(before_ms, 1), "aim": "info: once per file per question"})  # fmt: skip
    return rows


if __name__ == "__main__":
    for row in run():
        print(row)
