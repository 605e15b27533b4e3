"""What `sam build` produced for the layers: codeask for python3.13 with its bytecode, ripgrep for both arches."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import python313

BUILD = Path(__file__).resolve().parents[2] / ".aws-sam" / "build"
LAYER = BUILD / "CodeaskLayer" / "python"

pytestmark = pytest.mark.skipif(
    not BUILD.is_dir(), reason="run `make sam-build` first (`make test` does)"
)


def elf_machine(path: Path) -> int:
    head = path.read_bytes()[:20]
    assert head[:4] == b"\x7fELF", f"{path} is not an ELF binary"
    return int.from_bytes(head[18:20], "little")


def test_ripgrep_layer_has_both_architectures_and_a_wrapper() -> None:
    bin_dir = BUILD / "RipgrepLayer" / "bin"
    assert elf_machine(bin_dir / "rg-x86_64") == 62  # EM_X86_64
    assert elf_machine(bin_dir / "rg-aarch64") == 183  # EM_AARCH64
    wrapper = bin_dir / "rg"
    assert wrapper.read_text().startswith("#!/bin/sh") and wrapper.stat().st_mode & 0o111


def test_the_x86_64_binary_is_ripgrep_14_1() -> None:
    import platform

    if platform.machine() != "x86_64":
        pytest.skip("needs an x86_64 host")
    out = subprocess.run(
        [str(BUILD / "RipgrepLayer" / "bin" / "rg"), "--version"], capture_output=True, text=True
    )
    assert out.stdout.startswith("ripgrep 14.1.0")


def test_codeask_layer_holds_the_package_and_arm64_pygit2() -> None:
    py = LAYER
    assert (py / "codeask" / "answer.py").is_file()
    # Subpackages travel too, not just the top-level modules.
    assert (py / "codeask" / "mirror" / "__init__.py").is_file()
    assert (py / "codeask" / "mirror" / "store.py").is_file()
    assert (py / "pygit2").is_dir()
    native = list(py.glob("**/*aarch64*.so")) + list((py / "pygit2.libs").glob("*.so*"))
    assert native, "pygit2 and cffi must be the arm64 builds the function runs on"
    assert not list(py.glob("**/*x86_64*.so")), "an x86_64 extension would not load on arm64"


def test_the_layer_brings_what_the_runtime_lacks_and_not_what_it_has() -> None:
    # powertools' Tracer (the worker's handler) imports aws_xray_sdk even with tracing off, and
    # Lambda's python3.13 runtime has boto3 and botocore but not it.
    assert (LAYER / "aws_xray_sdk" / "core" / "__init__.py").is_file()
    assert (LAYER / "wrapt" / "__init__.py").is_file()
    # A second botocore here would shadow the runtime's, under the runtime's boto3.
    assert not (LAYER / "botocore").exists() and not (LAYER / "boto3").exists()


def test_the_layer_package_imports_on_python_3_13() -> None:
    # The pure-Python engine (everything but pygit2, which is arm64 here) must import on 3.13.
    exe = python313()
    if exe is None:
        pytest.skip("no python3.13 here")
    code = "import codeask.tools, codeask.verify, codeask.search_only, codeask.redact; print('ok')"
    out = subprocess.run(
        [exe, "-c", code],
        capture_output=True,
        text=True,
        # Never writing bytecode into the build, so what it holds is what `sam build` made.
        env={"PYTHONPATH": str(LAYER), "PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert out.stdout.strip() == "ok", out.stderr


# importlib.util.MAGIC_NUMBER of CPython 3.13, the runtime the layer is compiled for.
MAGIC_313 = (3571).to_bytes(2, "little") + b"\r\n"
CHECKED_HASH = 0b11  # the flags word of a pyc whose source hash is checked at import


def test_every_module_in_the_codeask_layer_ships_checked_bytecode_for_3_13() -> None:
    # Given the built layer's modules: codeask's and every dependency's
    sources = [p for p in LAYER.rglob("*.py") if "__pycache__" not in p.parts]
    assert len(sources) > 1000, "the layer should hold codeask and its dependencies"
    assert LAYER / "codeask" / "mirror" / "store.py" in sources
    assert LAYER / "pygit2" / "__init__.py" in sources

    # When their bytecode is looked for where Python 3.13 looks
    problems = []
    for src in sources:
        pyc = src.parent / "__pycache__" / f"{src.stem}.cpython-313.pyc"
        rel = src.relative_to(LAYER)
        if not pyc.is_file():
            problems.append(f"{rel}: no {pyc.name}")
            continue
        head = pyc.read_bytes()[:8]
        if head[:4] != MAGIC_313:
            problems.append(f"{rel}: bytecode of another Python ({head[:4]!r})")
        elif int.from_bytes(head[4:8], "little") != CHECKED_HASH:
            problems.append(f"{rel}: bytecode not checked-hash, so it depends on file times")

    # Then every one has it, compiled by 3.13, valid whatever the files' times say
    assert not problems, f"{len(problems)} modules: " + "; ".join(problems[:10])


def test_the_layer_bytecode_matches_its_sources() -> None:
    # Given python3.13, which hashes sources the way the runtime does
    exe = python313()
    if exe is None:
        pytest.skip("no python3.13 here")
    check = (
        "import importlib.util, pathlib, sys\n"
        "bad = []\n"
        "for src in pathlib.Path(sys.argv[1]).rglob('*.py'):\n"
        "    pyc = src.parent / '__pycache__' / f'{src.stem}.cpython-313.pyc'\n"
        "    if '__pycache__' in src.parts or not pyc.is_file():\n"
        "        continue\n"
        "    if pyc.read_bytes()[8:16] != importlib.util.source_hash(src.read_bytes()):\n"
        "        bad.append(str(src))\n"
        "print(len(bad), *bad[:5])\n"
    )
    # When each pyc's recorded source hash is compared with its source's
    out = subprocess.run([exe, "-c", check, str(LAYER)], capture_output=True, text=True)
    # Then none is stale: the runtime would use every one instead of compiling
    assert out.stdout.strip() == "0", out.stdout + out.stderr


def test_the_layer_ships_every_grammar_for_arm64() -> None:
    # The parser and its grammars are native code: each must be the build the function runs on,
    # and each must be in the layer (nothing is downloaded at run time on Lambda).
    from codeask.search.languages import GRAMMARS

    py = BUILD / "CodeaskLayer" / "python"
    for module in {"tree_sitter", *(m for m, _ in GRAMMARS.values())}:
        binaries = list((py / module).glob("*.so"))
        assert binaries, f"{module} is missing from the layer"
        for so in binaries:
            assert elf_machine(so) == 183, f"{so} is not an aarch64 build"
