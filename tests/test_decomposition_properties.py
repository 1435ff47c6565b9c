"""Property-based tests of the decomposition's arithmetic (no MPI needed)."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hybridfd.decomposition import automatic_grid, split_axis, total_surface

extents = st.integers(min_value=1, max_value=60)


@given(points=st.integers(1, 500), parts=st.integers(1, 64))
def test_split_axis_tiles_the_axis(points, parts):
    if parts > points:
        parts = points
    pieces = [split_axis(points, parts, part) for part in range(parts)]
    offset = 0
    for start, extent in pieces:
        assert start == offset  # no gap, no overlap
        offset += extent
    assert offset == points
    sizes = [extent for _, extent in pieces]
    assert max(sizes) - min(sizes) <= 1
    assert min(sizes) >= 1


def factorisations(ranks, shape):
    for px, py in itertools.product(range(1, ranks + 1), repeat=2):
        if ranks % (px * py) == 0:
            grid = (px, py, ranks // (px * py))
            if all(p <= n for p, n in zip(grid, shape, strict=True)):
                yield grid


@settings(max_examples=300)
@given(shape=st.tuples(extents, extents, extents), ranks=st.integers(1, 72))
def test_automatic_grid_has_minimal_surface(shape, ranks):
    candidates = list(factorisations(ranks, shape))
    if not candidates:
        with pytest.raises(ValueError, match="cannot split"):
            automatic_grid(shape, ranks)
        return
    grid = automatic_grid(shape, ranks)
    assert np.prod(grid) == ranks
    assert grid in candidates
    best = min(total_surface(shape, g) for g in candidates)
    assert total_surface(shape, grid) == best
    # Ties go to the grid that cuts x most (GPAW's preference for long z rows).
    assert grid == max(g for g in candidates if total_surface(shape, g) == best)


@settings(max_examples=100)
@given(shape=st.tuples(extents, extents, extents), ranks=st.integers(1, 32))
def test_boxes_tile_the_domain_exactly(shape, ranks):
    if not list(factorisations(ranks, shape)):
        return
    grid = automatic_grid(shape, ranks)
    owner = np.full(shape, -1)
    for rank, coords in enumerate(itertools.product(*(range(p) for p in grid))):
        index = []
        for axis in range(3):
            offset, extent = split_axis(shape[axis], grid[axis], coords[axis])
            index.append(slice(offset, offset + extent))
        assert (owner[tuple(index)] == -1).all()  # no overlap
        owner[tuple(index)] = rank
    assert (owner >= 0).all()  # no gap


@given(shape=st.tuples(extents, extents, extents), grid=st.tuples(*(st.integers(1, 8),) * 3))
def test_total_surface_counts_every_box_face(shape, grid):
    if any(p > n for p, n in zip(grid, shape, strict=True)):
        return
    surface = 0
    for coords in itertools.product(*(range(p) for p in grid)):
        nx, ny, nz = (split_axis(shape[a], grid[a], coords[a])[1] for a in range(3))
        surface += 2 * (nx * ny + ny * nz + nx * nz)
    assert total_surface(shape, grid) == surface


def test_gpaw_like_choice_for_two_ranks():
    assert automatic_grid((96, 96, 96), 2) == (2, 1, 1)  # what GPAW chose (PEERS.md)
