"""Decomposition with an explicit Layout: any cut points per axis, any rank order; bad
layouts raise on every rank, naming the value, before any message."""

from __future__ import annotations

import numpy as np
import pytest
from _cases import batch_of
from mpi4py import MPI

import hybridfd as hf

# One rank has no rank order to get wrong (the GPAW adaptor tests cover it on 1 rank).
RANKS = (2, 3, 4)

SIZE = MPI.COMM_WORLD.size
SHAPE = (14, 9, 11)


def lopsided_splits(points: int, parts: int) -> tuple[int, ...]:
    """Cut points far from hybridfd's own (boxes of 2 first, the rest last)."""
    return (*range(0, 2 * parts, 2), points)


def layout(reverse: bool) -> hf.Layout:
    splits = (lopsided_splits(SHAPE[0], SIZE), (0, SHAPE[1]), (0, SHAPE[2]))
    positions = [(SIZE - 1 - rank, 0, 0) for rank in range(SIZE)] if reverse else None
    return hf.Layout(splits, positions)


@pytest.mark.parametrize("reverse", [False, True], ids=["row-major", "reversed"])
def test_boxes_follow_the_layout(comm, reverse):
    dec = hf.Decomposition(hf.Domain(SHAPE), comm, layout=layout(reverse))
    assert dec.grid == (SIZE, 1, 1)
    assert dec.splits == layout(reverse).splits
    # The rank of comm sits at its given position, whatever its rank in dec.comm.
    x = SIZE - 1 - comm.rank if reverse else comm.rank
    assert dec.coords() == (x, 0, 0)
    splits = layout(reverse).splits[0]
    assert dec.box() == hf.Box((splits[x], 0, 0), (splits[x + 1] - splits[x], *SHAPE[1:]))
    assert [dec.box(rank) for rank in range(SIZE)] == dec.comm.allgather(dec.box())


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("periodic", [(True, True, True), (False, True, False)], ids=["PPP", "NPN"])
@pytest.mark.parametrize("reverse", [False, True], ids=["row-major", "reversed"])
def test_apply_with_layout_matches_reference(comm, dtype, periodic, reverse):
    dec = hf.Decomposition(hf.Domain(SHAPE, periodic=periodic, dtype=dtype), comm, layout=layout(reverse))
    stencil = hf.Stencil.laplace(2, (0.3, 0.2, 0.25))
    full = batch_of((3, *SHAPE), dtype, seed=1)
    local = dec.scatter(full if comm.rank == 0 else None)
    original = hf.Operator(dec, stencil, "flat-original").apply(local)
    np.testing.assert_array_equal(hf.Operator(dec, stencil, "flat-optimized").apply(local), original)
    out = dec.gather(original)
    if comm.rank == 0:
        expected = hf.reference.apply(stencil, full, periodic=periodic)
        np.testing.assert_allclose(out, expected, rtol=0, atol=1e-13 * np.abs(expected).max())


def test_roots_and_errors_are_ranks_of_the_given_communicator(comm):
    dec = hf.Decomposition(hf.Domain(SHAPE), comm, layout=layout(True))
    assert dec.rank == SIZE - 1 - comm.rank  # reversed: rank 0 of comm is the last Cartesian rank
    full = batch_of((2, *SHAPE), "float64", seed=3)
    for root in (0, SIZE - 1):
        # Only the root holds the batch: it is found there, and gathered back there, bit for bit.
        local = dec.scatter(full if comm.rank == root else None, root=root)
        assert local.tobytes() == np.ascontiguousarray(full[(slice(None), *dec.box().slices())]).tobytes()
        back = dec.gather(local, root=root)
        assert (back is None) == (comm.rank != root)
        if comm.rank == root:
            assert back.tobytes() == full.tobytes()
    with pytest.raises(TypeError, match=rf"^rank {SIZE - 1}: scatter needs a numpy.ndarray on the root rank"):
        dec.scatter(full if comm.rank == 0 else None, root=SIZE - 1)


def test_three_axes_cut(comm):
    grid = hf.decomposition.automatic_grid(SHAPE, SIZE)
    splits = tuple(lopsided_splits(n, p) for n, p in zip(SHAPE, grid, strict=True))
    dec = hf.Decomposition(hf.Domain(SHAPE), comm, layout=hf.Layout(splits))
    assert dec.grid == grid
    assert sum(np.prod(box.extent) for box in comm.allgather(dec.box())) == np.prod(SHAPE)


X = lopsided_splits(SHAPE[0], SIZE)
BAD = [
    (lambda: hf.Layout(((1, SHAPE[0]), (0, 9), (0, 11))), r"layout splits \(1, 14\) of axis 0 must run from 0 to"),
    (
        lambda: hf.Layout(((0, 14), (0, 8), (0, 11))),
        r"splits \(0, 8\) of axis 1 must run from 0 to the domain's extent 9",
    ),
    (lambda: hf.Layout(((0, 14), (0, 9), (0, 5, 5, 11))), r"splits \(0, 5, 5, 11\) of axis 2 must increase strictly"),
    (lambda: hf.Layout(((0, 7, 14), (0, 3, 9), (0, 5, 11))), r"process grid \(2, 2, 2\) has 8 processes"),
    (lambda: hf.Layout((X, (0, 9), (0, 11)), [(0, 0, 0)] * (SIZE + 1)), rf"positions has {SIZE + 1} entries"),
    (lambda: hf.Layout((X, (0, 9), (0, 11)), [(0, 1, 0)] * SIZE), r"position \(0, 1, 0\) of rank 0 lies outside"),
    (lambda: hf.Layout((X, (0, 9), (0, 11)), [(0, 0)] * SIZE), "position of rank 0 must have 3 entries"),
    (lambda: hf.Layout(((0, 14.0), (0, 9), (0, 11))), "splits of axis 0 must be integers"),
    (lambda: ((0, 14), (0, 9), (0, 11)), "layout must be a hybridfd.Layout"),
]


@pytest.mark.parametrize(("make", "message"), BAD)
def test_bad_layout_raises_on_every_rank(comm, make, message):
    with pytest.raises((ValueError, TypeError), match=message):
        hf.Decomposition(hf.Domain(SHAPE), comm, layout=make())


def test_repeated_position_is_named(comm):
    splits = (lopsided_splits(SHAPE[0], SIZE), (0, 9), (0, 11))
    with pytest.raises(ValueError, match=r"position \(0, 0, 0\) is given to both rank 0 and rank 1"):
        hf.Decomposition(hf.Domain(SHAPE), comm, layout=hf.Layout(splits, [(0, 0, 0)] * SIZE))


def test_layout_differing_between_ranks_raises_on_every_rank(comm):
    # Valid on each rank, but the last rank cuts x one point earlier.
    splits = list(lopsided_splits(SHAPE[0], SIZE))
    splits[1] -= comm.rank == SIZE - 1
    with pytest.raises(ValueError, match=r"domain and layout must be the same on every rank, got .*layout splits \("):
        hf.Decomposition(hf.Domain(SHAPE), comm, layout=hf.Layout((tuple(splits), (0, 9), (0, 11))))


def test_layout_and_grid_together_are_refused(comm):
    with pytest.raises(ValueError, match="a layout fixes the process grid"):
        hf.Decomposition(hf.Domain(SHAPE), comm, grid=(SIZE, 1, 1), layout=layout(False))
