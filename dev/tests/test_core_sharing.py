"""dev/core_sharing.py: samples every measure in turn, splits them by the issue-rate
probe into the core alone and shared, and checks its kernel against the reference."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "dev"))

import core_sharing  # noqa: E402


def test_a_short_run_reports_every_measure(tmp_path: Path) -> None:
    output, figure = tmp_path / "core_sharing.json", tmp_path / "core_sharing.png"
    assert core_sharing.main(["--seconds", "0.3", "--n", "12", "--output", str(output), "--plot", str(figure)]) == 0
    result = json.loads(output.read_text())
    samples = result["samples"]
    assert samples and figure.stat().st_size > 0
    for sample in samples:
        assert all(sample[name] > 0 for name, _ in core_sharing.MEASURES)
        assert not sample["from_memory"]  # a 12^3 grid lives in cache
    summary = result["summary"]
    assert summary["best_issue_rate"] == max(s["issue_rate"] for s in samples)
    assert summary["alone_samples"] >= 1  # the best sample is alone by definition
    assert summary["measures"]["issue_rate"]["alone"] > 0


def test_samples_split_by_the_probe() -> None:
    """Alone: a probe >= 85 % of the best; shared: <= 70 %; between: neither."""
    rates = {"multiply_add_gflops": 40.0, "fma_gflops": 46.0, "l1_copy_gb_per_s": 70.0, "grid_copy_gb_per_s": 60.0}
    rates["kernel_share_of_copy"] = 0.4
    samples = [
        {"seconds": 0.0, "issue_rate": 14.0, "kernel_mpoints_per_s": 1400.0, **rates},
        {"seconds": 0.1, "issue_rate": 12.0, "kernel_mpoints_per_s": 1300.0, **rates},
        {"seconds": 0.2, "issue_rate": 11.0, "kernel_mpoints_per_s": 1200.0, **rates},
        {"seconds": 0.3, "issue_rate": 7.0, "kernel_mpoints_per_s": 1000.0, **rates},
    ]
    summary = core_sharing.summarise(samples)
    assert (summary["alone_samples"], summary["shared_samples"]) == (2, 1)
    kernel = summary["measures"]["kernel_mpoints_per_s"]
    assert kernel["alone"] == 1350.0 and kernel["shared"] == 1000.0
    assert kernel["shared_over_alone"] == pytest.approx(1000.0 / 1350.0)
    assert kernel["correlation_with_probe"] > 0.9
    assert summary["measures"]["fma_gflops"]["correlation_with_probe"] is None  # constant: no correlation
