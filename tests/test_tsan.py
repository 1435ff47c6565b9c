"""The multi-thread code under ThreadSanitizer: `make tsan` (clang -fsanitize=thread on
LLVM's OpenMP with Archer) builds the core and cpp/tests and runs every model with up to 3
threads on 1 and 2 ranks; any race report fails it (docs/testing.md)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_models_are_race_free_under_thread_sanitizer():
    result = subprocess.run(["make", "-s", "tsan"], cwd=ROOT, capture_output=True, text=True, timeout=1200)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "ThreadSanitizer" not in output, output
    # models_test prints "ok (N configurations)" once per run: on 1 rank and on 2.
    assert len(re.findall(r"^ok \(\d+ configurations\)$", output, flags=re.MULTILINE)) == 2, output
