"""Style is checked like everything else: ruff for Python, clang-format for C++."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def check(cmd: list[str]) -> None:
    result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"$ {' '.join(cmd)}\n{result.stdout}\n{result.stderr}"


def test_python_is_ruff_clean() -> None:
    check([str(BIN / "ruff"), "check", "src", "tests", "benchmarks"])
    check([str(BIN / "ruff"), "format", "--check", "src", "tests", "benchmarks"])


def test_cpp_is_clang_formatted() -> None:
    sources = sorted(
        str(path.relative_to(ROOT))
        for folder in ("cpp", "tests", "benchmarks")
        for path in (ROOT / folder).rglob("*")
        if path.suffix in (".cpp", ".hpp")
    )
    assert sources
    check([str(BIN / "clang-format"), "--dry-run", "--Werror", *sources])
