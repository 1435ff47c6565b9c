"""Decomposition under MPI: boxes, neighbours, scatter and gather."""

from __future__ import annotations

import numpy as np
import pytest
from mpi4py import MPI

import hybridfd as hf
from hybridfd.decomposition import automatic_grid, split_axis

RANKS = (1, 2, 3, 4, 8)


@pytest.mark.parametrize("shape", [(16, 16, 16), (13, 11, 10), (40, 9, 9)])
def test_boxes_follow_the_process_grid(comm, shape):
    dec = hf.Decomposition(hf.Domain(shape), comm)
    assert dec.grid == automatic_grid(shape, comm.size)
    assert dec.size == comm.size
    boxes = comm.allgather(dec.box())
    for rank, box in enumerate(boxes):
        assert dec.box(rank) == box
        coords = dec.coords(rank)
        for axis in range(3):
            assert (box.offset[axis], box.extent[axis]) == split_axis(shape[axis], dec.grid[axis], coords[axis])
    assert sum(np.prod(box.extent) for box in boxes) == np.prod(shape)
    assert dec.local_shape(4) == (4, *dec.box().extent)


def test_neighbours_are_the_adjacent_boxes(comm):
    dom = hf.Domain((12, 12, 12), periodic=(True, False, True))
    dec = hf.Decomposition(dom, comm)
    for axis in range(3):
        lower, upper = dec.neighbours(axis)
        coords = dec.coords()
        p = dec.grid[axis]
        for neighbour, step in ((lower, -1), (upper, 1)):
            target = coords[axis] + step
            if not dom.periodic[axis] and not 0 <= target < p:
                assert neighbour == MPI.PROC_NULL
            else:
                expected = list(coords)
                expected[axis] = target % p
                assert dec.coords(neighbour) == tuple(expected)


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_scatter_gather_round_trip(comm, dtype):
    dom = hf.Domain((11, 7, 9), dtype=dtype)
    dec = hf.Decomposition(dom, comm)
    batch = np.arange(3 * 11 * 7 * 9, dtype=dtype).reshape(3, 11, 7, 9) * (1 + 1j if dtype == "complex128" else 1)
    local = dec.scatter(batch if comm.rank == 0 else None)
    assert local.shape == dec.local_shape(3)
    np.testing.assert_array_equal(local, batch[(slice(None), *dec.box().slices())])
    back = dec.gather(local)
    if comm.rank == 0:
        np.testing.assert_array_equal(back, batch)
    else:
        assert back is None
    single = dec.gather(dec.scatter(batch[1] if comm.rank == 0 else None))
    if comm.rank == 0:
        np.testing.assert_array_equal(single, batch[1])


def test_root_other_than_zero(comm):
    dec = hf.Decomposition(hf.Domain((8, 8, 8)), comm)
    root = comm.size - 1
    batch = np.random.default_rng(0).standard_normal((2, 8, 8, 8))
    back = dec.gather(dec.scatter(batch if comm.rank == root else None, root=root), root=root)
    if comm.rank == root:
        np.testing.assert_array_equal(back, batch)
