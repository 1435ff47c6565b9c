"""Distributed apply vs the numpy reference on the whole grid (flat-original)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from _cases import general_stencil
from mpi4py import MPI

import hybridfd as hf

RANKS = (1, 2, 3, 4, 8)

SIZE = MPI.COMM_WORLD.size
# 25, 13 and 26 points split over 2, 3, 4 or 8 boxes never divide evenly on every axis;
# 24 divides evenly by 1, 2, 3, 4 and 8. Slab grids put every rank on one axis and leave
# the others whole (a periodic axis of one box exchanges with itself).
SHAPES = {"uneven": (25, 13, 26), "even": (24, 24, 24)}
GRIDS = [None, (SIZE, 1, 1), (1, 1, SIZE)]
PERIODIC = [(True, True, True), (False, False, False), (True, False, True), (False, True, False)]


def random_batch(shape: tuple[int, ...], dtype: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    batch = rng.standard_normal(shape)
    if dtype == "complex128":
        batch = batch + 1j * rng.standard_normal(shape)
    return batch


def random_stencil(radius: int, seed: int) -> hf.Stencil:
    return hf.Stencil.from_coefficients(np.random.default_rng(seed).uniform(-1, 1, 1 + 6 * radius))


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("periodic", PERIODIC, ids=lambda p: "".join("P" if x else "N" for x in p))
@pytest.mark.parametrize("radius", [1, 2, 3])
@pytest.mark.parametrize("grids", [1, 5])
@pytest.mark.parametrize("process_grid", GRIDS, ids=["auto", "x-slabs", "z-slabs"])
@pytest.mark.parametrize("split", SHAPES)
def test_matches_reference(comm, dtype, periodic, radius, grids, process_grid, split):
    shape = SHAPES[split]
    dom = hf.Domain(shape, periodic=periodic, dtype=dtype)
    dec = hf.Decomposition(dom, comm, grid=process_grid)
    stencil = random_stencil(radius, seed=radius)
    seed = hash((dtype, periodic, radius, grids)) % 2**32
    batch = random_batch((grids, *shape), dtype, seed)
    if split == "even":
        assert all(n % p == 0 for n, p in zip(shape, dec.grid, strict=True))
    op = hf.Operator(dec, stencil, approach="flat-original")
    out = dec.gather(op.apply(dec.scatter(batch if comm.rank == 0 else None)))
    if comm.rank == 0:
        expected = hf.reference.apply(stencil, batch, periodic=periodic)
        scale = np.abs(expected).max()
        np.testing.assert_allclose(out, expected, rtol=0, atol=1e-12 * scale)
        # One documented summation order: float64 agrees to the last bit.
        if dtype == "float64":
            np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("reach", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("process_grid", GRIDS, ids=["auto", "x-slabs", "z-slabs"])
@pytest.mark.parametrize("split", SHAPES)
def test_general_stencil_matches_reference(comm, reach, process_grid, split):
    """Random offsets with edges and corners, reach 1..6, both dtypes, a periodic pattern
    per reach: bit for bit the reference, or, where a box is thinner than the reach along
    an axis that exchanges, the error on every rank."""
    shape = SHAPES[split]
    periodic = PERIODIC[reach % len(PERIODIC)]
    stencil = general_stencil(seed=reach, reach=reach)
    for dtype in ("float64", "complex128"):
        dec = hf.Decomposition(hf.Domain(shape, periodic=periodic, dtype=dtype), comm, grid=process_grid)
        exchanging = [p > 1 or wraps for p, wraps in zip(dec.grid, periodic, strict=True)]
        thinnest = [
            min(dec.splits[axis][i + 1] - dec.splits[axis][i] for i in range(dec.grid[axis])) for axis in range(3)
        ]
        if any(ex and n < reach for ex, n in zip(exchanging, thinnest, strict=True)):
            with pytest.raises(ValueError, match=f"thinner than the stencil reach {reach}"):
                hf.Operator(dec, stencil)
            continue
        batch = random_batch((3, *shape), dtype, seed=reach)
        out = dec.gather(hf.Operator(dec, stencil).apply(dec.scatter(batch if comm.rank == 0 else None)))
        if comm.rank == 0:
            np.testing.assert_array_equal(out, hf.reference.apply(stencil, batch, periodic=periodic))


def test_single_grid_without_batch_axis_and_given_out(comm):
    dom = hf.Domain((17, 16, 15), periodic=(True, True, False))
    dec = hf.Decomposition(dom, comm)
    stencil = hf.Stencil.laplace(2, (0.2, 0.25, 0.3))
    grid = random_batch(dom.shape, "float64", seed=7)
    local = dec.scatter(grid if comm.rank == 0 else None)
    assert local.shape == dec.local_shape()
    out = np.full_like(local, np.nan)
    result = hf.Operator(dec, stencil).apply(local, out=out)
    assert result is out
    gathered = dec.gather(out)
    if comm.rank == 0:
        np.testing.assert_array_equal(gathered, hf.reference.apply(stencil, grid, periodic=dom.periodic))


def test_repeated_applies_reuse_buffers_and_stay_exact(comm):
    # Ghost layers at non-periodic edges must stay zero across applies with new data.
    dom = hf.Domain((12, 14, 16), periodic=(False, True, False))
    dec = hf.Decomposition(dom, comm)
    stencil = hf.Stencil.laplace(3)
    op = hf.Operator(dec, stencil)
    for seed in range(3):
        batch = random_batch((2, *dom.shape), "float64", seed)
        out = dec.gather(op.apply(dec.scatter(batch if comm.rank == 0 else None)))
        if comm.rank == 0:
            np.testing.assert_array_equal(out, hf.reference.apply(stencil, batch, periodic=dom.periodic))


@pytest.mark.parametrize("grids", [0, 3])
def test_every_split_of_a_small_domain(comm, grids):
    # All process grids with this rank count, on a domain where boxes get as thin as r.
    dom = hf.Domain((8, 9, 10), periodic=(True, False, True))
    stencil = random_stencil(1, seed=11)
    batch = random_batch((grids, *dom.shape), "float64", seed=12)
    for px, py in itertools.product(range(1, SIZE + 1), repeat=2):
        if SIZE % (px * py):
            continue
        dec = hf.Decomposition(dom, comm, grid=(px, py, SIZE // (px * py)))
        out = dec.gather(hf.Operator(dec, stencil).apply(dec.scatter(batch if comm.rank == 0 else None)))
        if comm.rank == 0:
            np.testing.assert_array_equal(out, hf.reference.apply(stencil, batch, periodic=dom.periodic))


def test_arrays_hybridfd_makes_start_on_a_line(comm):
    """The batches scatter and zeros make, and an apply's own output, start on a 64-byte
    line (hybridfd.arrays), and the apply on them is exact."""
    dom = hf.Domain((16, 12, 10), periodic=(True, False, True))
    dec = hf.Decomposition(dom, comm)
    stencil = hf.Stencil.laplace(2)
    batch = random_batch((3, *dom.shape), "float64", seed=11)
    local = dec.scatter(batch if comm.rank == 0 else None)
    out = hf.Operator(dec, stencil).apply(local)
    for array in (local, out, dec.zeros(2), dec.zeros()):
        assert array.ctypes.data % 64 == 0
    assert not dec.zeros(2).any()
    gathered = dec.gather(out)
    if comm.rank == 0:
        np.testing.assert_array_equal(gathered, hf.reference.apply(stencil, batch, periodic=dom.periodic))
