"""benchmarks/kernel_throughput.py: its ratios are paired within a round, and a small run
of each part computes the reference (the script checks every output) and reports
positive rates."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import kernel_throughput  # noqa: E402


def test_paired_median_takes_each_ratio_within_its_round():
    # Copy ran slow in round 2, and both in round 3: paired, the ratio is 1 in two rounds
    # of three (median 1); the ratio of the medians would say 3.
    copy = [1.0, 3.0, 3.0]
    kernel = [1.0, 1.0, 3.0]
    assert kernel_throughput.paired_median(copy, kernel) == 1.0
    assert kernel_throughput.paired_median([2.0, 4.0], [1.0, 1.0, 1.0]) == 3.0  # two rounds of both


def test_paired_median_refuses_no_rounds():
    with pytest.raises(ValueError, match="at least one round"):
        kernel_throughput.paired_median([], [1.0])


def test_two_thread_ratios_pair_kernel_and_copy_within_each_round():
    times = {
        "copy": [2.0, 2.0, 4.0],
        "copy_2_threads": [1.0, 1.6, 2.0],
        "kernel": [2.5, 2.5, 5.0],
        "kernel_2_threads": [1.25, 2.0, 2.5],
    }
    ratios = kernel_throughput.two_thread_ratios(times)
    assert ratios == {
        "two_threads_speedup": 2.0,  # 2.0, 1.25, 2.0
        "two_threads_copy_speedup": 2.0,  # 2.0, 1.25, 2.0
        "two_threads_fraction_of_copy": 0.8,  # 0.8, 0.8, 0.8
    }


def test_cases_report_paired_fractions():
    row = kernel_throughput.measure(8, 2, "complex128", repeats=2, numpy_repeats=1)
    names = ("kernel_fraction_of_copy", "aligned_fraction_of_copy", "two_threads_speedup")
    for name in (*names, "two_threads_copy_speedup", "two_threads_fraction_of_copy"):
        assert row[name] > 0
    assert row["kernel_speedup_over_numpy"] > 0
    kernel_throughput.core_states([row])
    assert row["best_issue_rate"] > 0
    states = row["aligned_copy_alone_shared"]
    assert 1 <= sum(count for _, count in states.values()) <= 2  # the best probe's repeat is alone


def test_size_curve_reports_the_peak_fraction_of_each_round():
    rows = kernel_throughput.size_curve((8,), 0.002)
    kernel_throughput.core_states(rows)
    assert [row["dtype"] for row in rows] == ["float64", "complex128"]
    for row in rows:
        assert 0 < row["fraction_of_fma_peak"] and 0 < row["aligned_fraction_of_fma_peak"]
        assert row["fma_peak_gflops"] > 0 and row["multiply_add_peak_gflops"] > 0
        assert row["in_cache"]
        assert row["two_threads_copy_speedup"] > 0 and row["two_threads_fraction_of_copy"] > 0
        assert row["best_issue_rate"] > 0
        for key in ("fma_peak_alone_shared", "aligned_fma_peak_alone_shared"):
            rounds = sum(count for _, count in row[key].values())
            assert rounds <= kernel_throughput.CURVE_ROUNDS
            assert all((fraction is None) == (count == 0) for fraction, count in row[key].values())


def test_rounds_are_split_by_the_core_state_their_probes_found():
    """A round is the core alone when both probes around its kernel timing reach 85 % of
    the best probe of all the rows, shared when both stay at or below 70 %; others count for
    neither. Each state's share of the peak is paired within its own rounds."""
    split = kernel_throughput.state_split
    probes = [(14.0, 13.0), (13.0, 12.5), (7.0, 7.5), (14.0, 7.0)]
    aligned_probes = [(14.0, 13.0), (11.0, 11.0), (7.0, 9.0), (7.0, 7.0)]
    peak = [1.0, 1.0, 1.0, 1.0]  # seconds the FMA peak would take
    row = {
        "state_splits": {
            "fma_peak_alone_shared": split(peak, [2.0, 2.5, 4.0, 3.0], probes),
            "aligned_fma_peak_alone_shared": split(peak, [2.0, 2.0, 4.0, 3.0], aligned_probes),
        }
    }
    kernel_throughput.core_states([row])
    assert row["best_issue_rate"] == 14.0
    assert row["fma_peak_alone_shared"] == {"alone": (pytest.approx(0.45), 2), "shared": (0.25, 1)}
    assert row["aligned_fma_peak_alone_shared"] == {"alone": (0.5, 1), "shared": (pytest.approx(0.2917, rel=1e-3), 2)}
