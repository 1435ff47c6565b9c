"""dev/sweep_ab.py, the quick A/B of one wide-vector sweep: two builds of the
sweeps' test driver (revisions HEAD and the working tree's headers) run on the same grids
in alternating rounds; every sweep, both dtypes, must report its two rates and agree bit
for bit (the driver itself is tested by test_kernel_sweeps.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "case",
    [
        ["--sweep", "streamed_planes", "--dtype", "complex128", "--output-plane-pad", "512"],
        ["--sweep", "columns", "--dtype", "float64", "--offset", "0"],
    ],
    ids=["streamed_planes", "columns"],
)
def test_two_builds_agree_and_report_rates(case: list[str]) -> None:
    command = [sys.executable, str(ROOT / "dev" / "sweep_ab.py"), "--a", "HEAD", "--n", "10", "--grids", "2"]
    command += ["--rounds", "2", "--radius", "1", *case]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    row = next(line for line in completed.stdout.splitlines() if line.startswith(f"| {case[1]} r=1"))
    a, b, ratio, identical = re.fullmatch(r"\| [^|]+ \| (\d+) \| (\d+) \| \*\*([\d.]+)\*\* \| (\w+) \|", row).groups()
    assert int(a) > 0 and int(b) > 0 and float(ratio) > 0
    assert identical == "True"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [(["--offset", "12"], "--offset 12"), (["--grids", "0"], "--grids must be at least 1, got 0")],
    ids=["offset-splits-a-lane", "no-grids"],
)
def test_rejects_bad_options_before_building(arguments: list[str], message: str) -> None:
    command = [sys.executable, str(ROOT / "dev" / "sweep_ab.py"), *arguments]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert completed.returncode == 2
    assert message in completed.stderr


def test_refuses_a_revision_from_before_the_kernels_folder() -> None:
    """A revision whose sweeps predate cpp/src/kernel/ is refused by name, before building,
    not compiled against the working tree's headers."""
    added = ["git", "log", "--diff-filter=A", "--format=%h", "--", "cpp/src/kernel/sweep_choice.hpp"]
    split = subprocess.run(added, capture_output=True, text=True, check=True, cwd=ROOT).stdout.split()[-1]
    command = [sys.executable, str(ROOT / "dev" / "sweep_ab.py"), "--a", f"{split}~1", "--n", "10", "--grids", "1"]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert completed.returncode == 1
    assert "predate the kernel's folder" in completed.stderr and split in completed.stderr
