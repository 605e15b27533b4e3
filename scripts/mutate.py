"""`make mutate`: mutmut over the modules that keep codeask's promises; kill rate per module."""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAGES = ROOT / ".mutate"  # mutmut names modules by path ("src." stripped): staged as src/codeask
PACKAGE = ROOT / "layers" / "codeask" / "codeask"


@dataclass(frozen=True)
class Group:
    """Modules mutated together, the functions that count (None: all), and the tests that judge."""

    files: tuple[str, ...]
    tests: tuple[str, ...]
    functions: frozenset[str] | None = None


SPLITTING = frozenset({"split_body", "_atoms", "_indent", "_hard_split", "_group", "_pieces",
                       "_inline_fence", "_closes", "render_answer", "_fits", "_continued",
                       "block_chars"})  # fmt: skip
GROUPS: dict[str, Group] = {
    # verify.py's streaming half (settled, _decided, …) is judged by the holdback tests.
    "verify": Group(
        ("verify.py",),
        (
            "tests/unit/test_verify.py",
            "tests/unit/test_holdback.py",
            "tests/unit/test_odd_file_names.py",
        ),  # escaped names
    ),  # fmt: skip
    "line-count": Group(
        ("snapshot.py",),
        ("tests/unit/test_verify.py", "tests/unit/test_large_files.py"),
        frozenset({"line_count"}),
    ),
    "split": Group(("render.py",), ("tests/unit/test_render.py",), SPLITTING),
    "job": Group(("job.py",), ("tests/unit/test_job.py",)),
    "ingress": Group(
        ("slack_ingress.py",),
        ("tests/unit/test_slack_ingress.py", "tests/integration/test_feedback.py"),  # votes
    ),
    "redact": Group(
        ("redact/*",),
        (
            "tests/unit/test_redact.py",
            "tests/unit/test_mask_file.py",
            "tests/unit/test_redact_hostile_shapes.py",
            "tests/unit/test_redact_secret_names.py",
            "tests/unit/test_redact_edges.py",
        ),
    ),
    "worker": Group(
        ("worker.py", "state.py"),
        (
            "tests/integration/test_worker_direct.py",  # the worker without the handlers: fast
            "tests/integration/test_worker_promises.py",
            "tests/integration/test_e2e.py",
            "tests/integration/test_streaming_slack.py",
        ),
    ),  # fmt: skip
    # The sync decisions: fetch only when the remote head moved, fall back to the last mirror
    # (marked stale) or rebuild a damaged one (remote.py, bare.py), which snapshot to serve,
    # reuse or prune (snapshots.py), and the entry points over them (store.py).
    "mirror": Group(
        ("mirror/store.py", "mirror/remote.py", "mirror/bare.py", "mirror/snapshots.py"),
        (
            "tests/unit/test_mirror.py",
            "tests/unit/test_mirror_decisions.py",  # the decisions' edges, in-process
            # Syncs in forked children: they hand mutmut's call list back (calls_seen).
            "tests/unit/test_mirror_repair.py",
            "tests/unit/test_disk_full.py",
            "tests/unit/test_snapshot_incremental.py",
            # The command line's messages: their log handler keeps the stderr of mutmut's first
            # in-process pytest run, closed by its second; cli.py is not mutated here anyway.
            "--deselect",
            "tests/unit/test_disk_full.py::test_the_command_line_says_disk_full_in_one_line_and_exits_3",
            "--deselect",
            "tests/unit/test_mirror_repair.py::test_the_command_line_says_on_stderr_what_it_rebuilt",
        ),
    ),  # fmt: skip
}

# mutmut's exit codes per mutant (mutmut.stats.status_by_exit_code)
# (mutmut.stats.status_by_exit_code); a timeout counts as killed, as mutmut counts it
KILLED, SURVIVED, NO_TESTS = {1, 3, 24, -24, 36, 152, 255}, {0}, {5, 33}


def stage(name: str, group: Group) -> None:
    """A tree where the package is src/codeask and [tool.mutmut] names this group."""
    STAGE = STAGES / name
    if STAGE.exists():
        shutil.rmtree(STAGE)
    shutil.copytree(
        PACKAGE, STAGE / "src" / "codeask", ignore=shutil.ignore_patterns("__pycache__")
    )
    for name in (
        "tests",
        "functions",
        "events",
        "template.yaml",
        "layers/codeask/requirements.txt",
    ):
        src = ROOT / name
        dst = STAGE / name
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", ".hypothesis"))
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    text = (ROOT / "pyproject.toml").read_text()
    base = tomllib.loads(text)["tool"]["mutmut"]
    config = {
        **base,
        "only_mutate": [f"src/codeask/{f}" for f in group.files],
        "pytest_add_cli_args_test_selection": list(group.tests),
    }
    # Everything but [tool.mutmut] as it is; that table rewritten (TOML accepts these as JSON).
    text = re.sub(r"(?ms)^\[tool\.mutmut\]\n.*?(?=^\[|\Z)", "", text)
    text += "\n[tool.mutmut]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in config.items())
    (STAGE / "pyproject.toml").write_text(text)


def functions(path: Path) -> dict[str, str]:
    """mutmut's name stem of each function and method in a module, by its plain name."""
    out: dict[str, str] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out[node.name] = f"x_{node.name}"
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    out[item.name] = f"xǁ{node.name}ǁ{item.name}"
    return out


def import_time(path: Path) -> set[str]:
    """Functions the module calls while it is imported (to build its constants), and what they
    call. mutmut forks its workers after the import, so a mutant there is never run: left out."""
    tree = ast.parse(path.read_text())
    defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}

    def called(nodes: list[ast.stmt]) -> set[str]:
        return {c.func.id for n in nodes for c in ast.walk(n)
                if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in defs}  # fmt: skip

    top = [n for n in tree.body if not isinstance(n, ast.FunctionDef | ast.ClassDef)]
    found, todo = set(), called(top)
    while todo:
        fn = todo.pop()
        if fn not in found:
            found.add(fn)
            todo |= called([defs[fn]])
    return found


def selection(group: Group) -> list[str]:
    """mutmut's mutant-name patterns for the functions this group counts."""
    patterns = []
    for pattern in group.files:
        for path in sorted(PACKAGE.glob(pattern)):
            if path.suffix != ".py":
                continue
            module = "codeask." + path.relative_to(PACKAGE).with_suffix("").as_posix().replace(
                "/", "."
            )
            skip = import_time(path)
            for fn, stem in functions(path).items():
                if fn not in skip and (group.functions is None or fn in group.functions):
                    patterns.append(f"{module}.{stem}__mutmut_*")
    return patterns


GENERATE = """
import os
from mutmut.__main__ import (copy_also_copy_files, copy_src_dir, create_mutants,
    set_mutant_under_test, setup_source_paths, store_lines_covered_by_tests)
set_mutant_under_test("mutant_generation")
os.makedirs("mutants", exist_ok=True)
copy_src_dir(); copy_also_copy_files(); setup_source_paths(); store_lines_covered_by_tests()
create_mutants(2)
"""


def sampled(name: str, size: int) -> list[str]:
    """`size` of the group's mutants, drawn with a fixed seed (mutmut generates them first)."""
    subprocess.run([sys.executable, "-c", GENERATE], cwd=STAGES / name, check=True,
                   capture_output=True)  # fmt: skip
    keys = sorted(k for codes in results(name, GROUPS[name]).values() for k in codes)
    return sorted(random.Random(17).sample(keys, min(size, len(keys))))


def run(name: str, max_children: int, *, resume: bool, sample: int | None) -> None:
    if not (resume and (STAGES / name / "mutants").exists()):
        stage(name, GROUPS[name])
    names = sampled(name, sample) if sample else selection(GROUPS[name])
    env = {**os.environ, "CODEASK_MUTATE": "1"}  # tests/conftest.py: fewer hypothesis examples
    mutmut = str(Path(sys.executable).parent / "mutmut")
    subprocess.run([mutmut, "run", "--max-children", str(max_children), *names],
                   cwd=STAGES / name, env=env, check=False)  # fmt: skip
    report(name)


def results(name: str, group: Group) -> dict[str, dict[str, int | None]]:
    """Exit code per mutant, per module, from mutmut's .meta files; only the counted functions."""
    out: dict[str, dict[str, int | None]] = {}
    src = STAGES / name / "mutants" / "src"
    for meta in sorted((src / "codeask").rglob("*.py.meta")):
        module = meta.relative_to(src).as_posix().removesuffix(".meta")
        codes = json.loads(meta.read_text()).get("exit_code_by_key", {})
        skip = import_time(PACKAGE / Path(module).relative_to("codeask"))
        for key, code in codes.items():
            function = key.split(".")[-1].split("__mutmut_")[0].removeprefix("x_")
            function = function.split("ǁ")[-1]  # methods: xǁClassǁmethod
            if function not in skip and (group.functions is None or function in group.functions):
                out.setdefault(module, {})[key] = code
    return out


def report(name: str) -> None:
    group = GROUPS[name]
    found = results(name, group)
    if not found:
        print(f"\n{name}: no results (not run yet: make mutate GROUPS={name})")
    for module, codes in found.items():
        killed = [k for k, c in codes.items() if c in KILLED]
        survived = sorted(k for k, c in codes.items() if c in SURVIVED)
        untested = [k for k, c in codes.items() if c in NO_TESTS]
        other = len(codes) - len(killed) - len(survived) - len(untested)
        judged = len(killed) + len(survived) + len(untested)  # "not run": not counted
        rate = 100 * len(killed) / judged if judged else 0.0
        scope = " (" + ", ".join(sorted(group.functions)) + ")" if group.functions else ""
        print(f"\n{name}: {module}{scope}: {rate:.1f}% killed — {len(killed)} killed, "
              f"{len(survived)} survived, {len(untested)} without tests, {other} not run")  # fmt: skip
        for key in survived + untested:
            print(f"  survived: {key}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("groups", nargs="*", help=f"of {', '.join(GROUPS)} (default: all)")
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--report", action="store_true", help="only print the last run's figures")
    parser.add_argument(
        "--sample", type=int, help="run this many of each group's mutants, drawn at random"
    )
    parser.add_argument(
        "--resume", action="store_true", help="go on with the mutants an earlier run left unchecked"
    )
    args = parser.parse_args()
    unknown = sorted(set(args.groups) - set(GROUPS))
    if unknown:
        parser.error(f"unknown groups {unknown}; the groups are {', '.join(GROUPS)}")
    for name in args.groups or GROUPS:
        if args.report:
            report(name)
        else:
            run(name, args.max_children, resume=args.resume, sample=args.sample)


if __name__ == "__main__":
    main()
