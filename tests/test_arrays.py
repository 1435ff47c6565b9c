"""Arrays hybridfd places for the kernel (hybridfd.arrays): every array, or every padded
grid's interior, starts on a 64-byte line, whatever malloc hands back; the kernel on
them is bit-identical to the reference; a bad request is named."""

from __future__ import annotations

import re

import numpy as np
import pytest
from test_kernel import make_stencil, random_padded

import hybridfd as hf
from hybridfd.arrays import empty_aligned, empty_padded
from hybridfd.kernel import apply_padded


def line_offset(array: np.ndarray) -> int:
    return array.ctypes.data % 64


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("shape", [(0,), (1,), (3, 4, 5), (2, 24, 24, 24), (5, 7, 9, 11)])
def test_empty_aligned_starts_on_a_line(shape, dtype):
    for _ in range(5):  # whatever malloc hands back
        array = empty_aligned(shape, dtype)
        assert (array.shape, array.dtype) == (shape, np.dtype(dtype))
        assert line_offset(array) == 0 or array.size == 0  # an empty array's address means nothing
        assert array.flags.c_contiguous and array.flags.writeable and array.flags.aligned


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("radius", range(1, 7))
@pytest.mark.parametrize("shape", [(3, 4, 5), (2, 6, 5, 7), (3, 8, 8, 8), (0, 2, 2, 2)])
def test_empty_padded_puts_every_interior_on_a_line(shape, radius, dtype):
    """Each grid of a batch is C-contiguous, its first interior point on a line (a
    batch whose grids are not whole lines is a view with gaps), and the kernel applied
    to it is bit-identical to the reference on the same values."""
    padded = empty_padded(shape, radius, dtype)
    grids = padded if len(shape) == 4 else padded[np.newaxis]
    assert padded.shape == (*shape[:-3], *(n + 2 * radius for n in shape[-3:]))
    assert padded.dtype == np.dtype(dtype) and padded.flags.writeable
    stencil = make_stencil(radius, symmetric=radius % 2 == 0)
    for index, grid in enumerate(grids):
        assert grid.flags.c_contiguous and grid.flags.aligned
        assert line_offset(grid[radius, radius, radius:]) == 0
        grid[...] = random_padded(shape[-3:], radius, dtype, seed=index)
        np.testing.assert_array_equal(apply_padded(stencil, grid), hf.reference.apply_padded(stencil, grid.copy()))
    # The grids do not overlap: each keeps what was written to it.
    for index, grid in enumerate(grids):
        np.testing.assert_array_equal(grid, random_padded(shape[-3:], radius, dtype, seed=index))


def test_apply_padded_places_the_output_it_makes():
    stencil = make_stencil(2, symmetric=True)
    for shape in ((8, 8, 8), (5, 6, 7), (24, 24, 24)):
        padded = empty_padded(shape, 2)
        padded[...] = random_padded(shape, 2, "float64", seed=1)
        out = apply_padded(stencil, padded)
        assert line_offset(out) == 0
        np.testing.assert_array_equal(out, hf.reference.apply_padded(stencil, padded))


def test_placement_names_a_bad_request():
    with pytest.raises(TypeError, match="dtype must be float64 or complex128, got float32"):
        empty_aligned((4, 4, 4), np.float32)
    with pytest.raises(TypeError, match="got int64"):
        empty_padded((4, 4, 4), 2, np.int64)
    for radius in (0, 7, True, 2.0):
        with pytest.raises(ValueError, match=re.escape(f"radius must be an int in 1..6, got {radius!r}")):
            empty_padded((4, 4, 4), radius)
    for shape in ((4, 4), (1, 2, 3, 4, 5), (4, -1, 4), (4, 4.0, 4), "444"):
        with pytest.raises(ValueError, match=re.escape(f"got {shape!r}")):
            empty_padded(shape, 1)
    with pytest.raises(ValueError, match=re.escape("shape must be a tuple of non-negative ints, got (2, -3)")):
        empty_aligned((2, -3))


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_aligned_copy_is_an_equal_array_on_a_line(dtype):
    source = random_padded((5, 6, 7), 1, dtype, seed=3)[1:, :, 1:]  # not contiguous
    copy = hf.aligned_copy(source)
    assert line_offset(copy) == 0 and copy.flags.c_contiguous and copy.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(copy, source)
    with pytest.raises(TypeError, match="got int32"):
        hf.aligned_copy(np.zeros(3, dtype=np.int32))
