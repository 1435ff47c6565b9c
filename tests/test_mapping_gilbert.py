"""The generalized Hilbert curve: a bijection with unit steps, and a Hilbert curve on powers of two."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hybridfd.mapping.gilbert import gilbert_curve, gilbert_order


def steps(cells: np.ndarray) -> np.ndarray:
    """L1 length of each step along the curve."""
    return np.abs(np.diff(cells, axis=0)).sum(axis=1)


def assert_bijection(shape: tuple[int, ...]) -> np.ndarray:
    cells = gilbert_curve(shape)
    assert cells.shape == (int(np.prod(shape)), len(shape))
    assert (cells >= 0).all() and (cells < np.array(shape)).all()
    order = gilbert_order(shape)
    assert np.array_equal(np.sort(order), np.arange(int(np.prod(shape))))
    assert tuple(cells[0]) == (0,) * len(shape)
    return cells


@settings(deadline=None, max_examples=150)
@given(st.lists(st.integers(1, 13), min_size=1, max_size=3))
def test_every_shape_is_a_bijection(shape):
    assert_bijection(tuple(shape))


@settings(deadline=None, max_examples=150)
@given(st.integers(1, 24), st.integers(1, 24))
def test_2d_steps_are_unit_unless_the_longer_side_is_odd_and_the_shorter_even(a, b):
    cells = assert_bijection((a, b))
    lengths = steps(cells)
    longer, shorter = max(a, b), min(a, b)
    if longer % 2 == 1 and shorter % 2 == 0:
        # gilbert's documented exception: one diagonal step (two face steps long).
        assert (lengths == 1).sum() >= lengths.size - 1
        assert lengths.max() <= 2
    else:
        assert (lengths == 1).all()


@settings(deadline=None, max_examples=60)
@given(st.integers(1, 6), st.integers(1, 6), st.integers(1, 6))
def test_3d_steps_are_unit_for_even_sides(a, b, c):
    cells = assert_bijection((2 * a, 2 * b, 2 * c))
    assert (steps(cells) == 1).all()


@pytest.mark.parametrize("shape", [(3, 3, 3), (7, 6, 4), (5, 5, 5), (6, 5, 4)])
def test_3d_odd_sides_stay_local(shape):
    # Odd sides cost a few longer steps (the author advises even sizes in 3D); they stay short.
    lengths = steps(assert_bijection(shape))
    assert lengths.max() <= 3
    assert (lengths > 1).sum() <= 5


@pytest.mark.parametrize("shape", [(16,), (8, 8), (32, 32), (4, 4, 4), (8, 8, 8)])
def test_power_of_two_sides_give_a_hilbert_curve(shape):
    # A Hilbert curve visits every aligned 2^k block in one run, at every level k.
    cells = assert_bijection(shape)
    assert (steps(cells) == 1).all()
    side = shape[0]
    block = side // 2
    while block >= 1:
        blocks = np.ravel_multi_index(tuple((cells // block).T), tuple(n // block for n in shape))
        assert (np.diff(blocks) != 0).sum() == blocks.max(), f"blocks of {block} are not visited in one run"
        block //= 2


def test_2d_hilbert_curve_of_side_four():
    # The standard order-2 Hilbert curve, from (0, 0) to (3, 0).
    expected = [(0, 0), (1, 0), (1, 1), (0, 1), (0, 2), (0, 3), (1, 3), (1, 2)]
    expected += [(2, 2), (2, 3), (3, 3), (3, 2), (3, 1), (2, 1), (2, 0), (3, 0)]
    assert [tuple(c) for c in gilbert_curve((4, 4)).tolist()] == expected


def test_axes_of_one_are_skipped():
    flat = gilbert_curve((6, 1, 4))
    assert np.array_equal(flat[:, [0, 2]], gilbert_curve((6, 4)))
    assert (flat[:, 1] == 0).all()


def test_bad_shapes_are_rejected():
    for shape in [(), (0, 3), (2, 2, 2, 2), (-1,)]:
        with pytest.raises(ValueError, match="positive sizes"):
            gilbert_curve(shape)
