"""dev/placement.py, the kernel on grids placed at offsets past a cache line: each
array lies where it was asked to, and every placement computes the reference (the
script checks each output) and reports a positive rate beside hybridfd's own."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from hybridfd.arrays import ALIGNMENT

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "dev"))
import placement  # noqa: E402


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("offset", [0, 8, 16, 40])
def test_placed_puts_the_byte_asked_for_at_the_offset(dtype: str, offset: int) -> None:
    first = 3 * np.dtype(dtype).itemsize
    array = placement.placed((5, 6, 7), dtype, first, offset)
    assert array.shape == (5, 6, 7) and array.dtype == np.dtype(dtype) and array.flags.c_contiguous
    assert (array.ctypes.data + first) % ALIGNMENT == offset


def test_every_placement_computes_the_reference_and_is_timed() -> None:
    rows = placement.measure(6, "float64", rounds=1, seconds=0.002)
    pairs = {(row["input_offset"], row["output_offset"]) for row in rows}
    assert pairs == {(i, o) for i in placement.INPUT_OFFSETS for o in placement.OUTPUT_OFFSETS}
    assert all(row["mpoints_per_s"] > 0 and row["rate_vs_hybridfd_placement"] > 0 for row in rows)
