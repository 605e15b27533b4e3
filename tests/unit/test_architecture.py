"""The architecture, written down and checked: which part of codeask may import which.

The `codeask` package has four layers. A module may import its own layer and the layers below
it, never one above:

    edge     lambdas, cli, doctor, evaluate
             wire settings, clients and the engine together for a Lambda or the command line
      │
    slack    slack_ingress, worker, render, clients, state, job, feedback
             Slack in (the ack) and out (the worker's posts), the queued job, DynamoDB state
      │
    engine   answer, agent, model, tools, search (the rg runner, syntax, ranking, rendering),
             search_only, mirror, snapshot, workspace, verify, denylist, filewindow
             one question over a pinned snapshot; knows nothing of Slack, SQS or Lambda
      │
    shared   errors, settings, botconfig, secrets, ops, redact, permalinks, diagram, pathdisplay,
             deadline, pathglob, scope (a channel's part of a repo, which botconfig grants)
             what every layer may use; imports nothing above it

One more rule, for speed: the ack (`slack_ingress`, and whatever `lambdas.ack` runs) answers
Slack within its 3 s, so it imports no engine module at all, not even lazily inside a function:
the model SDK alone takes about 2 s to import and pygit2 is not needed to say 200.

Every import counts, lazy ones inside functions too; only imports under `if TYPE_CHECKING:` do
not, as they never run. A new module goes into LAYERS below, which is where a newcomer looks.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "layers" / "codeask" / "codeask"

LAYERS: dict[str, frozenset[str]] = {
    "edge": frozenset({"lambdas", "cli", "doctor", "evaluate"}),
    "slack": frozenset(
        {"slack_ingress", "worker", "render", "clients", "state", "job", "feedback", "slack_stream"}
    ),
    "engine": frozenset(
        {
            "answer",
            "agent",
            "model",
            "tools",
            "search",
            "search_only",
            "mirror",
            "snapshot",
            "workspace",
            "verify",
            "holdback",
            "denylist",
            "filewindow",
        }
    ),  # fmt: skip
    "shared": frozenset(
        {
            "errors",
            "settings",
            "botconfig",
            "secrets",
            "ops",
            "redact",
            "permalinks",
            "diagram",
            "pathdisplay",
            "deadline",
            "pathglob",
            "scope",
        }
    ),  # fmt: skip
}
ORDER = ["edge", "slack", "engine", "shared"]  # top to bottom
ACK_ENTRY = ("lambdas", "ack")  # the ack's Lambda function: lambdas.ack
ACK_MODULES = frozenset({"slack_ingress"})
SLOW_FOR_THE_ACK = ("anthropic", "pygit2")  # third-party packages the ack must never load


@dataclass(frozen=True)
class Import:
    module: str  # the top-level codeask module (a package's name for its submodules)
    line: int
    function: str | None  # the enclosing function, for imports made lazily


@dataclass(frozen=True)
class Module:
    name: str  # its top-level name: `mirror` for codeask/mirror.py and codeask/mirror/*.py
    path: Path
    imports: tuple[Import, ...]  # codeask imports
    external: tuple[Import, ...]  # everything else, by top-level package


def layer_of(name: str) -> str:
    found = [layer for layer, names in LAYERS.items() if name in names]
    assert len(found) == 1, f"codeask.{name} must be in exactly one layer of LAYERS (is in {found})"
    return found[0]


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST, function: str | None) -> Iterator[tuple[ast.AST, str | None]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _type_checking(child):
            for other in child.orelse:
                yield from _walk(other, function)
            continue
        inner = function
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            inner = child.name if function is None else f"{function}.{child.name}"
        yield child, inner
        yield from _walk(child, inner)


def _dotted(path: Path) -> tuple[list[str], bool]:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    is_package = parts[-1] == "__init__"
    return (parts[:-1] if is_package else parts), is_package


def _targets(node: ast.AST, here: list[str], is_package: bool) -> list[str]:
    """The absolute dotted names an import statement imports."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    assert isinstance(node, ast.ImportFrom)
    base = node.module or ""
    if node.level:
        package = here if is_package else here[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join([*package, *([node.module] if node.module else [])])
    if base == "codeask":  # `from codeask import render`: each name is a module
        return [f"codeask.{alias.name}" for alias in node.names]
    return [base]


def load_modules() -> dict[Path, Module]:
    out: dict[Path, Module] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        here, is_package = _dotted(path)
        if here == ["codeask"]:
            continue  # the package's own __init__
        inner: list[Import] = []
        external: list[Import] = []
        for node, function in _walk(ast.parse(path.read_text(), str(path)), None):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for target in _targets(node, here, is_package):
                parts = target.split(".")
                if parts[0] == "codeask" and len(parts) > 1:
                    inner.append(Import(parts[1], node.lineno, function))
                elif parts[0] != "codeask":
                    external.append(Import(parts[0], node.lineno, function))
        out[path] = Module(here[1], path, tuple(inner), tuple(external))
    return out


@pytest.fixture(scope="module")
def modules() -> dict[Path, Module]:
    found = load_modules()
    assert len(found) > 20, "the scan found too few modules: has the package moved?"
    return found


def where(m: Module, imp: Import) -> str:
    inside = f" (in {imp.function})" if imp.function else ""
    return f"{m.path.relative_to(ROOT)}:{imp.line}{inside}"


# ------------------------------------------------------------------ the map itself


def test_every_module_is_in_one_layer_and_every_layer_entry_exists(
    modules: dict[Path, Module],
) -> None:
    names = {m.name for m in modules.values()}
    for name in names:
        layer_of(name)
    listed = set().union(*LAYERS.values())
    assert not listed - names, (
        f"LAYERS lists modules that no longer exist: {sorted(listed - names)}"
    )


# ------------------------------------------------------------------ the layers


@pytest.mark.parametrize("layer", ORDER)
def test_a_layer_imports_only_itself_and_the_layers_below(
    modules: dict[Path, Module], layer: str
) -> None:
    above = set(ORDER[: ORDER.index(layer)])
    wrong = [
        f"{where(m, imp)}: codeask.{m.name} ({layer}) imports codeask.{imp.module} "
        f"({layer_of(imp.module)})"
        for m in modules.values()
        if layer_of(m.name) == layer
        for imp in m.imports
        if layer_of(imp.module) in above
    ]
    assert not wrong, "imports that reach up a layer:\n" + "\n".join(wrong)


def test_the_scan_sees_lazy_imports() -> None:
    # Guards against a scan that misses imports inside functions and so passes everything.
    lambdas = [m for m in load_modules().values() if m.name == "lambdas"][0]
    lazy = {(imp.module, imp.function) for imp in lambdas.imports}
    assert ("worker", "answer_record") in lazy and ("slack_ingress", "ack") in lazy
    # and follows the ack into the helpers it calls, but not into the worker's functions
    runs = called_from(lambdas.path, ACK_ENTRY[1])
    assert {"ack", "settings", "_slack", "_ack_metrics"} <= runs and "answer_record" not in runs


# ------------------------------------------------------------------ the ack


def called_from(path: Path, entry: str) -> set[str]:
    """The module's top-level functions that `entry` can run: itself and what it calls, in turn."""
    tree = ast.parse(path.read_text(), str(path))
    calls = {
        node.name: {
            c.func.id
            for c in ast.walk(node)
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
        }
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
    }
    runs: set[str] = set()
    todo = [entry]
    while todo:
        name = todo.pop()
        if name in calls and name not in runs:
            runs.add(name)
            todo += calls[name]
    return runs


def ack_closure(modules: dict[Path, Module]) -> tuple[set[str], list[str]]:
    """Every codeask module the ack can run, and every third-party import on the way."""
    by_name: dict[str, list[Module]] = {}
    for m in modules.values():
        by_name.setdefault(m.name, []).append(m)
    entry_module, entry_function = ACK_ENTRY
    start: list[tuple[Module, Import]] = []
    for m in by_name[entry_module]:
        runs = called_from(m.path, entry_function)
        start += [
            (m, imp)
            for imp in m.imports + m.external
            if imp.function is None or imp.function.split(".")[0] in runs
        ]
    reached: set[str] = set()
    external: list[str] = []
    todo = [*ACK_MODULES]
    for m, imp in start:
        if imp in m.imports:
            todo.append(imp.module)
        else:
            external.append(f"{imp.module} at {where(m, imp)}")
    while todo:
        name = todo.pop()
        if name in reached:
            continue
        reached.add(name)
        for m in by_name.get(name, []):
            todo += [imp.module for imp in m.imports]
            external += [f"{imp.module} at {where(m, imp)}" for imp in m.external]
    return reached, external


def test_the_ack_path_never_imports_the_engine(modules: dict[Path, Module]) -> None:
    reached, external = ack_closure(modules)
    assert {"slack_ingress", "render", "state"} <= reached  # the scan follows the ack
    engine = sorted(reached & LAYERS["engine"])
    assert not engine, f"the ack can import engine modules: {engine}"
    slow = [e for e in external if e.split(" ")[0] in SLOW_FOR_THE_ACK]
    assert not slow, f"the ack can import {slow}"


def test_importing_the_acks_handler_and_answering_loads_no_model_sdk_nor_pygit2() -> None:
    # A fresh interpreter imports functions/slack_events/app.py, as a cold start does, and then
    # answers Slack's url_verification through it: neither step may load the slow packages.
    from fakes.stack import Context, event

    ev = event("url_verification")
    script = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("handler", sys.argv[1])
handler = importlib.util.module_from_spec(spec)
spec.loader.exec_module(handler)
on_import = sorted(sys.modules)
context = json.loads(sys.argv[3])
context["get_remaining_time_in_millis"] = lambda: 3000
response = handler.lambda_handler(json.loads(sys.argv[2]), type("Context", (), context)())
print(json.dumps({"import": on_import, "request": sorted(sys.modules), "response": response}))
"""
    context = Context()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9",  # nothing may be called; if it were, it fails
        "SLACK_SIGNING_SECRET": "test-signing-secret-" + "0123456789abcdef",
        "SLACK_BOT_TOKEN": "xoxb-" + "1111-2222-" + "testtokentesttoken",
        "QUEUE_URL": "http://127.0.0.1:9/123456789012/jobs",
        "TABLE_NAME": "state",
        "CODEASK_CONFIG": json.dumps(
            {
                "repos": {"billing": {"url": "https://example.invalid/billing.git"}},
                "channels": {"C0123ABCD": ["billing"]},
            }
        ),  # fmt: skip
        "POWERTOOLS_METRICS_NAMESPACE": "Codeask",
        "POWERTOOLS_TRACE_DISABLED": "true",
    }
    done = subprocess.run(
        [sys.executable, "-c", script, str(ROOT / "functions" / "slack_events" / "app.py"),
         json.dumps(ev), json.dumps({k: v for k, v in vars(context).items()})],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["response"]["statusCode"] == 200
    assert "codeask.lambdas" in result["import"] and "codeask.slack_ingress" in result["request"]
    for stage in ("import", "request"):
        loaded = set(result[stage])
        slow = sorted(m for m in loaded if m.split(".")[0] in SLOW_FOR_THE_ACK)
        assert not slow, f"the ack loaded {slow} on {stage}"
        engine = sorted(
            m for m in loaded if m.startswith("codeask.") and m.split(".")[1] in LAYERS["engine"]
        )
        assert not engine, f"the ack loaded engine modules on {stage}: {engine}"
