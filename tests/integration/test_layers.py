"""What `sam build` produced for the layers: the codeask package for python3.13 and ripgrep for both arches."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

BUILD = Path(__file__).resolve().parents[2] / ".aws-sam" / "build"

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
    py = BUILD / "CodeaskLayer" / "python"
    assert (py / "codeask" / "answer.py").is_file()
    # Subpackages travel too, not just the top-level modules.
    assert (py / "codeask" / "mirror" / "__init__.py").is_file()
    assert (py / "codeask" / "mirror" / "store.py").is_file()
    assert (py / "pygit2").is_dir()
    native = list(py.glob("**/*aarch64*.so")) + list((py / "pygit2.libs").glob("*.so*"))
    assert native, "pygit2 and cffi must be the arm64 builds the function runs on"
    assert not list(py.glob("**/*x86_64*.so")), "an x86_64 extension would not load on arm64"


def test_the_layer_package_imports_on_python_3_13() -> None:
    # The pure-Python engine (everything but pygit2, which is arm64 here) must import on 3.13.
    py313 = shutil.which("python3.13")
    candidates = [py313] if py313 else []
    pyenv = shutil.which("pyenv")
    if pyenv:
        prefix = subprocess.run([pyenv, "prefix", "3.13.0"], capture_output=True, text=True)
        if prefix.returncode == 0:
            candidates.append(prefix.stdout.strip() + "/bin/python3.13")
    for exe in candidates:
        ok = subprocess.run([exe, "-V"], capture_output=True)
        if ok.returncode == 0:
            break
    else:
        pytest.skip("no python3.13 here")
    code = "import codeask.tools, codeask.verify, codeask.search_only, codeask.redact; print('ok')"
    out = subprocess.run(
        [exe, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(BUILD / "CodeaskLayer" / "python"), "PATH": "/usr/bin:/bin"},
    )
    assert out.stdout.strip() == "ok", out.stderr
