"""benchmarks/kernel_ab.py, the tool every kernel claim in docs/benchmarks.md rests on: it
builds the kernel at two revisions into one harness (symbols renamed apart), runs them on
the same arrays and reports each case's rates, their ratio and whether every output lane
agreed. Two copies of one revision must build, run every input layout the cases name, and
agree bit for bit."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

CASES = [
    "--n 12 --grids 3 --rounds 2 --repeats 2",  # an apply's box input, rows that border a ghost
    "--dtype complex128 --n 9 --grids 2 --padded --rounds 2 --repeats 2",
    "--n 20 --grids 2 --input-in-cache --output-in-cache --offset 2 --rounds 2 --repeats 2",
]


def test_two_builds_of_one_revision_agree_bit_for_bit(tmp_path: Path) -> None:
    command = [sys.executable, str(ROOT / "benchmarks" / "kernel_ab.py"), "--a", "HEAD", "--b", "HEAD"]
    command += ["--repeats", "1", "--build-dir", str(tmp_path / "build")]
    for case in CASES:
        command += ["--case", case]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    rows = [line for line in completed.stdout.splitlines() if line.startswith("| `")]
    assert [re.match(r"\| `([^`]*)`", row).group(1) for row in rows] == CASES
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        a_rate, b_rate = float(cells[1]), float(cells[2])
        ratio = float(cells[3].split("**")[1])
        assert a_rate > 0 and b_rate > 0
        assert ratio == pytest.approx(b_rate / a_rate, rel=0.02), row  # one run each: the ratio of the rates
        assert cells[4] == "True", row
