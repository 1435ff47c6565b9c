"""The pure-Python parts of the side-by-side benchmarks (benchmarks/peers/job.py and
benchmarks/compare_peers.py): checksums over interior points, how codes' results are
compared, which hybridfd setting counts as best and which peer is paired with which
boundary, and that an absent peer is skipped with a message."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from mpi4py import MPI

from hybridfd import launch

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))  # as for a script of benchmarks/, which imports peers.job
from peers import job  # noqa: E402


def load_compare_peers():  # noqa: ANN201 - a module
    spec = importlib.util.spec_from_file_location("compare_peers", BENCHMARKS / "compare_peers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_peers_print_their_result_the_way_the_launcher_reads_it() -> None:
    assert job.RESULT_PREFIX == launch.RESULT_PREFIX


def test_interior_checksums_leave_out_the_boundary_shell_and_add_up_over_parts() -> None:
    rng = np.random.default_rng(0)
    shape = (9, 7, 6)
    a = rng.standard_normal((3, *shape)) + 1j * rng.standard_normal((3, *shape))
    b = rng.standard_normal((3, *shape))
    inner = (slice(None), slice(2, 7), slice(2, 5), slice(2, 4))
    expected = np.sum(b[inner] * np.conj(a[inner]), axis=(1, 2, 3))
    whole = job.interior_checksums(a, b, [0, 0, 0], shape, MPI.COMM_SELF)
    np.testing.assert_allclose([complex(*c) for c in whole], expected, rtol=1e-12)
    # Two x-slabs as two ranks would hold them, the second starting at x = 4; a slab
    # entirely inside the shell (x < 2) contributes nothing.
    parts = [
        job.interior_checksums(a[:, s], b[:, s], [s.start, 0, 0], shape, MPI.COMM_SELF)
        for s in (slice(0, 4), slice(4, 9))
    ]
    summed = [complex(*p) + complex(*q) for p, q in zip(*parts, strict=True)]
    np.testing.assert_allclose(summed, expected, rtol=1e-12)
    assert job.interior_checksums(a[:, :2], b[:, :2], [0, 0, 0], shape, MPI.COMM_SELF) == [[0.0, 0.0]] * 3
    every_point = job.interior_checksums(a, b, [0, 0, 0], shape, MPI.COMM_SELF, radius=0)
    np.testing.assert_allclose([complex(*c) for c in every_point], np.sum(b * np.conj(a), axis=(1, 2, 3)))


def test_differences_are_relative_to_the_reference_or_a_given_scale() -> None:
    reference = [[4.0, 0.0], [-2.0, 1.0]]
    assert job.checksum_difference(reference, [[4.0, 0.0], [-2.0, 1.0]]) == 0.0
    assert job.checksum_difference(reference, [[4.0, 0.0], [-2.0, 1.4]]) == pytest.approx(0.1)
    assert job.checksum_difference(reference, [[4.4, 0.0], [-2.0, 1.0]], scale=100.0) == pytest.approx(0.004)
    with pytest.raises(ValueError, match="3 grids compared with 2"):
        job.checksum_difference([*reference, [1.0, 0.0]], reference)
    ours = np.ones((6, 6, 6))
    theirs = ours.copy()
    theirs[0] = 99.0  # the boundary shell is not compared
    theirs[3, 3, 3] = 1.5
    assert job.sample_difference(ours, theirs) == pytest.approx(0.5)
    assert job.sample_difference(ours, theirs, scale=50.0) == pytest.approx(0.01)


def test_best_settings_pair_each_peer_with_hybridfd_on_the_same_boundary() -> None:
    compare = load_compare_peers()
    median = {
        "hybridfd flat-original (periodic)": 2.0,
        "hybridfd all-dims b=8 (periodic)": 1.0,
        "hybridfd flat-original (non-periodic)": 4.0,
        "GPAW": 8.0,
        "GPAW ASYNC OMP=1 msg=0 KiB": 6.0,
        "GPAW ASYNC OMP=2 msg=256 KiB": 3.0,
        compare.DEVITO_LABEL: 10.0,
    }
    assert compare.best(median, "hybridfd", "(periodic)") == ("hybridfd all-dims b=8 (periodic)", 1.0)
    assert compare.ratios(median) == {
        "GPAW default": 8.0,
        "GPAW ASYNC best": 3.0,
        "GPAW best": 3.0,
        "Devito": 2.5,
    }
    only_devito = {k: v for k, v in median.items() if not k.startswith("GPAW")}
    assert compare.ratios(only_devito) == {"Devito": 2.5}


def test_absent_peers_are_skipped_with_a_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    compare = load_compare_peers()
    compare.ROOT = tmp_path
    compare.GPAW_DEFAULT = compare.GPAW_ASYNC = compare.DEVITO = tmp_path / "absent"
    assert (
        compare.run_jobs(
            [(1, 8, 1, "float64")], compare.argparse.Namespace(rounds=1, repeats=1, msg_sizes=[0]), "kernel"
        )
        == []
    )
    output = capsys.readouterr().out
    assert "GPAW is not installed" in output and "Devito is not installed" in output
    assert "nothing to compare. Skipping." in output


def test_the_curve_keeps_the_points_per_job_about_constant() -> None:
    jobs = load_compare_peers().curve_jobs([16, 96, 256])
    assert jobs[:3] == [(1, 16, 512, "float64"), (1, 96, 8, "float64"), (1, 256, 1, "float64")]
    assert [dtype for *_, dtype in jobs].count("complex128") == 3


def test_the_summary_has_one_line_per_job_with_each_codes_best() -> None:
    compare = load_compare_peers()
    median = {
        "hybridfd flat-original (periodic)": 2.0,
        "hybridfd flat-optimized (periodic)": 1.5,
        "hybridfd all-dims b=8 (periodic)": 1.0,
        "hybridfd flat-original (non-periodic)": 4.0,
        "GPAW": 8.0,
        compare.DEVITO_LABEL: 10.0,
    }
    row = {"ranks": 2, "n": 24, "grids": 512, "dtype": "float64", "ms_per_grid": median}
    row["speedups"] = compare.ratios(median)
    header, rule, line = compare.summary_table([row]).splitlines()
    assert header.count("|") == rule.count("|") == line.count("|")
    assert line == (
        "| 2 | 512 x 24^3 | float64 | 2.00 | 1.50 | 1.00 (all-dims b=8) | 8.00 | - | 4.00 (flat-original)"
        " | 10.00 | 8.00x | 2.50x |"
    )


def test_general_stencil_flops_count_the_documented_sum() -> None:
    import hybridfd as hf

    compare = load_compare_peers()
    # centre first (one multiply), then a paired term (add, multiply, add) and two unpaired
    # ones (multiply, add each)
    stencil = hf.Stencil.from_offsets([(0, 0, 0), (1, 1, 0), (-1, -1, 0), (0, 1, 1), (0, -1, -1)], [1, 2, 2, 3, 4])
    assert [paired for _, _, paired in stencil.terms()] == [False, True, False, False]
    assert compare.general_flops_per_point(stencil, "float64") == 1 + 3 + 2 + 2
    assert compare.general_flops_per_point(stencil, "complex128") == 2 * 8


def test_general_rows_pair_each_round_and_each_apply_with_its_copy() -> None:
    compare = load_compare_peers()
    key = (2, "float64")

    def ours(scale: float) -> dict:
        return {
            "terms": 13,
            "flops_per_point": 37,
            "ms_per_grid": {
                "flat-original": [4.0 * scale] * 3,
                "all-dims b=8": [2.0 * scale, 2.0 * scale, 4.0 * scale],
                compare.GENERAL_KERNEL: [1.5 * scale] * 3,
            },
            "memcpy_ms_per_grid": {
                "flat-original": [1.0] * 3,
                "all-dims b=8": [1.0, 0.5, 1.0],
                compare.GENERAL_KERNEL: [1.0] * 3,
            },
            "fma_peak_gflops": 37 * 8**3 / (1e6 * scale),  # the fastest setting at half the peak
        }

    rounds = [({key: {"ms_per_grid": 20.0}}, {key: ours(1.0)}), ({key: {"ms_per_grid": 60.0}}, {key: ours(2.0)})]
    row = compare.general_row(key, rounds, 8, 32)
    assert row["fastest"] == "all-dims b=8"
    assert row["speedup_over_gpaw"] == pytest.approx(12.5)  # rounds: 20 / 2 and 60 / 4
    assert row["fraction_of_memcpy"] == pytest.approx(0.1875)  # rounds: 0.25 and 0.125 (median pairs)
    assert row["fraction_of_fma_peak"] == pytest.approx(0.5)
    assert row["ms_per_grid"]["GPAW"] == 40.0 and row["ms_per_grid"]["memcpy"] == 1.0
    header, rule, line = compare.general_table([row]).splitlines()
    assert header.count("|") == rule.count("|") == line.count("|")
    assert line.startswith("| n=2 (13 terms) | float64 | 40.0 | 4.00 (all-dims b=8) |")
