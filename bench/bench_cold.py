"""Benchmark: cold starts with the code layer as `sam build` makes it, on Python 3.13 where present.

- the worker's imports with the layer's bytecode against the same layer without it (what Lambda
  would compile at every cold start, its /opt being read-only);
- the ack's and the worker's whole cold start (a new process: imports, settings, the first
  request on loopback, against moto, the fake Slack and the fake Messages API) against a new
  process that only imports what they cannot do without.

The layer in `sam build` holds arm64 wheels; to import it here the same Makefile builds it for
this machine's architecture (bench/out/layer-<arch>), and boto3, which Lambda's runtime brings,
is installed beside it (bench/out/runtime-<arch>).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))

from conftest import python313  # noqa: E402

REPS = 5
WORKER_IMPORTS = "import codeask.lambdas, codeask.worker, codeask.ops, anthropic, pygit2, boto3"
ACK_BASELINE = "import boto3, slack_sdk"
WORKER_BASELINE = "import boto3, slack_sdk, anthropic, pygit2"

# Runs one handler once the way Lambda would: load functions/<name>/app.py, call it with the
# event, then note when the response was in hand (time.monotonic is one clock for all processes).
_HANDLER = """
import importlib.util, json, sys, time
spec = importlib.util.spec_from_file_location("handler", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
class Context:
    function_name = "codeask-bench"
    memory_limit_in_mb = 2048
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:codeask-bench"
    aws_request_id = "bench"
    def get_remaining_time_in_millis(self):
        return 120000
response = module.lambda_handler(json.load(open(sys.argv[2])), Context())
done = time.monotonic()
open(sys.argv[3], "w").write(json.dumps({"done": done, "response": response}))
"""
_IMPORTS_ONLY = """
import sys, time
exec(sys.argv[1])
open(sys.argv[2], "w").write(repr(time.monotonic()))
"""


def build_layer(py313: str, out: Path) -> Path:
    """The code layer exactly as layers/codeask/Makefile builds it, for this machine's arch."""
    subprocess.run(
        ["make", "-s", "-C", str(ROOT / "layers" / "codeask"), "build-CodeaskLayer",
         f"ARTIFACTS_DIR={out}", f"ARCH={platform.machine()}", f"PY313={py313}"],
        check=True, capture_output=True, timeout=1800,
    )  # fmt: skip
    bare = out.with_name(out.name + "-no-bytecode")
    shutil.rmtree(bare, ignore_errors=True)
    shutil.copytree(out, bare, ignore=shutil.ignore_patterns("__pycache__"))
    return out


def runtime(py313: str, out: Path) -> Path:
    """boto3 as Lambda's runtime brings it, with its own bytecode (the same in every case)."""
    if not (out / "boto3").is_dir():
        subprocess.run([py313, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        "--root-user-action=ignore", "--target", str(out), "boto3"],
                       check=True, capture_output=True, timeout=1800)  # fmt: skip
    return out


def _paired(a: Callable[[], float], b: Callable[[], float]) -> tuple[float, float]:
    a(), b()  # the page cache warm for both
    ta, tb = [], []
    for _ in range(REPS):
        ta.append(a())
        tb.append(b())
    return statistics.median(ta), statistics.median(tb)


def _imports_ms(exe: str, env: dict[str, str], stmt: str, tmp: Path) -> float:
    """A new process until `stmt` has run: interpreter start and the imports."""
    mark = tmp / f"{uuid.uuid4().hex}.mark"
    start = time.monotonic()
    subprocess.run([exe, "-c", _IMPORTS_ONLY, stmt, str(mark)], env=env, check=True,
                   capture_output=True, timeout=600)  # fmt: skip
    return (float(mark.read_text()) - start) * 1000


def _handler_ms(exe: str, env: dict[str, str], name: str, event: dict[str, Any], tmp: Path,
                check: Callable[[Any], bool]) -> float:  # fmt: skip
    """A new process until functions/<name>'s handler has answered `event`."""
    ev, mark = tmp / f"{uuid.uuid4().hex}.json", tmp / f"{uuid.uuid4().hex}.out"
    ev.write_text(json.dumps(event))
    app = ROOT / "functions" / name / "app.py"
    start = time.monotonic()
    done = subprocess.run([exe, "-c", _HANDLER, str(app), str(ev), str(mark)], env=env,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"{name} failed: {done.stderr[-2000:]}")
    out = json.loads(mark.read_text())
    if not check(out["response"]):
        raise RuntimeError(f"{name} answered {out['response']!r}")
    return (out["done"] - start) * 1000


def bench_bytecode(exe: str, layer: Path, runtime_dir: Path, tmp: Path) -> dict[str, Any]:
    bare = layer.with_name(layer.name + "-no-bytecode")
    env = {"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"}  # /opt is read-only on Lambda
    with_pyc, without = _paired(
        lambda: _imports_ms(exe, {**env, "PYTHONPATH": f"{layer}/python:{runtime_dir}"},
                            WORKER_IMPORTS, tmp),
        lambda: _imports_ms(exe, {**env, "PYTHONPATH": f"{bare}/python:{runtime_dir}"},
                            WORKER_IMPORTS, tmp),
    )  # fmt: skip
    return {"name": "worker's cold imports: layer without bytecode vs with it",
            "ratio": round(without / with_pyc, 2), "a_ms": round(without, 1),
            "b_ms": round(with_pyc, 1), "python": _version(exe), "aim": "info: what the .pyc save"}  # fmt: skip


def bench_cold_paths(exe: str, pythonpath: str, tmp: Path) -> list[dict[str, Any]]:
    """The ack and the worker, each from a new process to its first response, on loopback."""
    from bench_local import git
    from codeask.search.ripgrep import find_rg
    from fakes import billing
    from fakes.aws import MotoServer
    from fakes.messages_api import FakeMessagesAPI, Reply, text, tool_use
    from fakes.slack_api import FakeSlack
    from fakes.stack import BOT_TOKEN, event, provision, sign, sqs_job_event

    repo = tmp / "billing"
    repo.mkdir(parents=True)
    for rel, body in billing.FILES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(body)
    git("init", "-q", "-b", "main", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "billing", cwd=repo)

    def model(body: dict[str, Any]) -> Any:
        searched = any(isinstance(b, dict) and b.get("type") == "tool_result"
                       for m in body["messages"] for b in (m["content"] if isinstance(m["content"], list) else []))  # fmt: skip
        if searched:
            return Reply([text("Failed jobs are retried in `billing/worker.py:1`.")])
        return Reply([tool_use("search_code", {"pattern": "def retry_job"})])

    with (
        MotoServer() as moto,
        FakeSlack(bot_token=BOT_TOKEN, bot_user_id=sign.BOT_USER, team_id=sign.TEAM) as slack,
        FakeMessagesAPI(script=model) as fake_model,
    ):
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": pythonpath,
            "RG_PATH": find_rg(),
            **provision(moto.url, repo, tmp, slack, fake_model),
        }

        def ack() -> float:
            # A new message each time: a repeated one would take the duplicate path.
            ts = f"{time.time():.6f}"
            ev = event(
                "app_mention", event_id=f"Ev{uuid.uuid4().hex[:10].upper()}", **{"event.ts": ts}
            )
            return _handler_ms(exe, env, "slack_events", ev, tmp,
                               lambda r: r.get("statusCode") == 200 and r.get("body") == "")  # fmt: skip

        def worker() -> float:
            ev = sqs_job_event()
            ts = f"{time.time():.6f}"
            for record in ev["Records"]:
                body = json.loads(record["body"])
                body.update(
                    event_id=f"Ev{uuid.uuid4().hex[:10].upper()}", message_ts=ts, thread_ts=ts
                )
                record["body"] = json.dumps(body, sort_keys=True)
            # A fresh sandbox: no snapshot on local disk yet.
            run_env = {**env, "SNAPSHOT_ROOT": str(tmp / "snapshots" / uuid.uuid4().hex)}
            took = _handler_ms(exe, run_env, "answer_worker", ev, tmp,
                               lambda r: r == {"batchItemFailures": []})  # fmt: skip
            posted = [m.get("text", "") for m in slack.messages(sign.CHANNEL, ts)]
            if not any("billing/worker.py" in t for t in posted):
                raise RuntimeError(f"the worker posted no answer: {posted!r}")
            return took

        ack_ms, ack_base = _paired(ack, lambda: _imports_ms(exe, env, ACK_BASELINE, tmp))
        work_ms, work_base = _paired(worker, lambda: _imports_ms(exe, env, WORKER_BASELINE, tmp))
    return [
        {"name": "ack cold start to its first response vs importing boto3 + slack_sdk",
         "ratio": round(ack_ms / ack_base, 2), "a_ms": round(ack_ms, 1), "b_ms": round(ack_base, 1),
         "python": _version(exe), "aim": "info: the ack's own cost beside what it must import"},
        {"name": "worker cold start to its first answer vs importing boto3 + slack_sdk + anthropic + pygit2",
         "ratio": round(work_ms / work_base, 2), "a_ms": round(work_ms, 1),
         "b_ms": round(work_base, 1), "python": _version(exe),
         "aim": "info: the worker's own cost beside what it must import"},
    ]  # fmt: skip


def _version(exe: str) -> str:
    out = subprocess.run([exe, "-c", "import platform; print(platform.python_version())"],
                         capture_output=True, text=True)  # fmt: skip
    return out.stdout.strip()


def run(out: Path) -> list[dict[str, Any]]:
    tmp = out / "cold"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    exe = python313()
    rows: list[dict[str, Any]] = []
    if exe is None:
        # Without 3.13 the layer cannot be built; the venv's interpreter still shows the shape.
        rows.append({"name": "worker's cold imports with and without bytecode",
                     "note": "skipped: no python3.13 to build the layer with"})  # fmt: skip
        return rows + bench_cold_paths(sys.executable, str(ROOT / "layers" / "codeask"), tmp)
    arch = platform.machine()
    layer = build_layer(exe, out / f"layer-{arch}")
    runtime_dir = runtime(exe, out / f"runtime-{arch}")
    rows.append(bench_bytecode(exe, layer, runtime_dir, tmp))
    rows += bench_cold_paths(exe, f"{layer}/python:{runtime_dir}", tmp)
    shutil.rmtree(tmp, ignore_errors=True)
    return rows


if __name__ == "__main__":
    print(json.dumps(run(HERE / "out"), indent=2))
