"""benchmarks/core_state.py: the one rule by which benchmarks split their rounds into the
core alone and the core shared with another hardware thread."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from core_state import core_state  # noqa: E402


@pytest.mark.parametrize(
    ("probes", "state"),
    [
        ((14.0, 12.0), "alone"),  # both >= 85 % of 14
        ((11.9, 14.0), "alone"),  # 11.9 is exactly 85 %
        ((9.7, 7.0), "shared"),  # both <= 70 % (9.8)
        ((14.0, 7.0), None),  # the state changed between the probes
        ((11.0,), None),  # between the states
        ((7.0,), "shared"),
    ],
)
def test_probes_against_the_best_probe_name_the_state(probes: tuple[float, ...], state: str | None) -> None:
    assert core_state(probes, 14.0) == state
