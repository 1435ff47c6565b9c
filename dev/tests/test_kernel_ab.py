"""dev/kernel_ab.py, the tool a kernel change is judged by: it
builds the kernel at two revisions into one harness (symbols renamed apart), runs them on
the same arrays and reports each case's rates, their ratio and whether every output lane
agreed. Two copies of one revision must build, run every input layout the cases name, and
agree bit for bit, and weak functions two kernels define differently must be named, not
linked once for both. Also dev/streaming_limit.py, which builds its probe against the
same core library (one build for both tests)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CASES = [
    "--n 12 --grids 3 --rounds 2 --repeats 2",  # an apply's box input, rows that border a ghost
    "--dtype complex128 --n 9 --grids 2 --padded --rounds 2 --repeats 2",
    "--n 20 --grids 2 --input-in-cache --output-in-cache --offset 2 --rounds 2 --repeats 2",
    "--n 16 --grids 2 --padded --interior-on-a-line --offset 1 --rounds 2 --repeats 2",
    "--n 14 --grids 2 --padded --told-in-cache --rounds 2 --repeats 2",  # as apply_padded(from_memory=False)
]


@pytest.fixture(scope="module")
def build_dir() -> Path:
    """Inside the tree, where the compiler cache (Makefile) takes paths relative to it, so a
    later run or clone reuses this one's kernels. Emptied first: the tool's own reuse of
    compiled kernels is not what this test checks."""
    build = ROOT / "build" / "test-kernel-ab"
    shutil.rmtree(build, ignore_errors=True)
    return build


def test_two_builds_of_one_revision_agree_bit_for_bit(build_dir: Path) -> None:
    command = [sys.executable, str(ROOT / "dev" / "kernel_ab.py"), "--a", "HEAD", "--b", "HEAD"]
    command += ["--repeats", "1", "--build-dir", str(build_dir)]
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
        # Rounds where the core was alone, and where it was shared: "ratio (rounds)", at
        # most the 2 rounds of the one run between them.
        states = [re.fullmatch(r"(\S+) \((\d+)\)", cell) for cell in cells[5:7]]
        assert all(states), row
        assert sum(int(state.group(2)) for state in states) <= 2, row
        for state in states:
            assert (state.group(1) == "nan") == (state.group(2) == "0"), row


def test_streaming_limit_probe_reports_every_loop_and_matches_the_library(build_dir: Path) -> None:
    """The probe's row loops on wide vectors (one plane, and 2, 3 or 4 planes at a time) are the
    Laplacian in the documented order: their outputs equal the library's bit for bit, on
    4 KiB and on huge pages; every loop reports a share of the same run's Copy."""
    command = [sys.executable, str(ROOT / "dev" / "streaming_limit.py"), "--n", "24", "--grids", "2"]
    command += ["--rounds", "1", "--repeats", "2", "--build-dir", str(build_dir)]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=ROOT / "dev")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    rows = [line for line in completed.stdout.splitlines() if line.startswith(("| 4 KiB", "| 2 MiB"))]
    assert len(rows) == 2, completed.stdout
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert float(cells[1]) > 0, row  # Copy's rate
        assert len(cells) == 11, row  # pages, Copy, 8 loops, bit-identical
        for cell in cells[2:10]:  # one_stream, rows_8_lanes, library, 5 planes loops: median, then the 2 runs
            shares = [int(share) for share in re.findall(r"\d+", cell)]
            assert len(shares) == 3 and all(share > 0 for share in shares), row
        assert cells[10] == "True", row


def test_streaming_limit_probe_names_a_bad_grid_edge(build_dir: Path) -> None:
    command = [sys.executable, str(ROOT / "dev" / "streaming_limit.py"), "--n", "20", "--grids", "1"]
    command += ["--rounds", "1", "--repeats", "1", "--build-dir", str(build_dir)]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=ROOT / "dev")
    assert completed.returncode != 0
    assert "--n must be a multiple of 24, at least 24, got 20" in completed.stderr + completed.stdout


def test_rounds_are_compared_within_the_core_state_their_probes_found() -> None:
    """A round counts as alone when both its probes reach 85 % of the run's best probe,
    as shared when both stay at or below 70 %; a round between, or whose probes
    disagree, counts for neither."""
    sys.path.insert(0, str(ROOT / "dev"))
    from kernel_ab import best_probe, by_core_state

    rounds = [
        [14.0, 1.0, 13.0, 0.5],  # alone: b twice as fast
        [13.5, 1.0, 14.0, 0.8],  # alone: 1.25
        [7.0, 2.0, 7.5, 1.6],  # shared: 1.25
        [7.0, 2.0, 14.0, 1.0],  # the probes disagree
        [11.0, 1.0, 11.0, 1.0],  # between the states
    ]
    results = [{"rounds": rounds[:2]}, {"rounds": rounds[2:]}]
    assert best_probe(results) == 14.0
    states = by_core_state(results, 14.0)
    assert states["alone"] == (pytest.approx(1.625), 2)
    assert states["shared"] == (pytest.approx(1.25), 1)
    # Measured against a faster core, none of these rounds had it alone.
    assert by_core_state(results, 20.0)["alone"][1] == 0


def test_weak_functions_that_differ_between_the_kernels_are_named(tmp_path: Path) -> None:
    """An inline function two revisions define differently would run one revision's code
    on both sides (the linker keeps one copy): kernel_ab names it instead of comparing."""
    sys.path.insert(0, str(ROOT / "dev"))
    from kernel_ab import differing_weak_functions

    objects = []
    for name, body in (("a", "x + 1"), ("a_again", "x + 1"), ("b", "x + 2")):
        source = tmp_path / f"{name}.cpp"
        helper = f"namespace hybridfd {{ inline int helper(int x) {{ return {body}; }} }}\n"
        caller = f"int kernel_{name}(int x) {{ return hybridfd::helper(x) + hybridfd::helper(-x); }}\n"
        source.write_text(helper + caller)
        objects.append(tmp_path / f"{name}.o")
        subprocess.run(["c++", "-O0", "-c", str(source), "-o", str(objects[-1])], check=True)
    assert differing_weak_functions(objects[0], objects[2]) == ["hybridfd::helper(int)"]
    assert differing_weak_functions(objects[0], objects[1]) == []


def test_weak_functions_are_compared_by_what_their_constants_hold(tmp_path: Path) -> None:
    """A local label (.LC3, a string literal) is numbered per object: the same inline
    function in two objects with other literals before it is the same code, and the
    same code holding another literal is not."""
    sys.path.insert(0, str(ROOT / "dev"))
    from kernel_ab import differing_weak_functions

    objects = []
    for name, before, literal in (
        ("a", 'const char* other() { return "unrelated"; }', "positive"),
        ("b", "", "positive"),
        ("c", "", "negative"),
    ):
        source = tmp_path / f"{name}.cpp"
        helper = (
            "namespace hybridfd { inline std::string label(int x) {"
            f' if (x > 3) return std::string("{literal}") + std::to_string(x); return "small"; }} }}\n'
        )
        caller = f"std::string kernel_{name}(int x) {{ return hybridfd::label(x) + hybridfd::label(-x); }}\n"
        source.write_text(f"#include <string>\n{before}\n{helper}{caller}")
        objects.append(tmp_path / f"{name}.o")
        subprocess.run(["c++", "-O3", "-c", str(source), "-o", str(objects[-1])], check=True)
    assert differing_weak_functions(objects[0], objects[1]) == []
    assert differing_weak_functions(objects[1], objects[2]) == ["hybridfd::label[abi:cxx11](int)"]


def test_refuses_a_revision_from_before_the_kernels_folder(tmp_path: Path) -> None:
    """A revision whose kernel is the single cpp/src/kernel.cpp is refused before compiling,
    naming the commit that made cpp/src/kernel/."""
    added = ["git", "log", "--diff-filter=A", "--format=%h", "--", "cpp/src/kernel/sweep_choice.hpp"]
    split = subprocess.run(added, capture_output=True, text=True, check=True, cwd=ROOT).stdout.split()[-1]
    command = [sys.executable, str(ROOT / "dev" / "kernel_ab.py"), "--a", f"{split}~1", "--build-dir", str(tmp_path)]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert completed.returncode == 1
    assert "predates the kernel's folder" in completed.stderr and split in completed.stderr
    assert not list(tmp_path.glob("kernel_*.o"))
