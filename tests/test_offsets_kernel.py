"""The general-stencil kernel (cpp/src/kernel/offsets_sweep.cpp) sums every point in the
documented order (stencil.hpp), so its output equals numpy's reference bit for bit: on
every reach, regions of every shape (rows shorter than a vector, rows ending in a part of
one), split over threads, with an axis the stencil does not reach along, from memory or
from cache, with its output streamed (a grid whose input and output outgrow the L2) to
any alignment, and through the operator, whose input rows live in halo buffers."""

from __future__ import annotations

import numpy as np
import pytest
from mpi4py import MPI

import hybridfd as hf
import hybridfd.kernel


def random_stencil(rng: np.random.Generator, reach: int, centre: bool = True) -> hf.Stencil:
    """Up to 30 offsets within ``reach`` (one that reaches it), some with their opposite at
    the same weight (paired terms), some at another (two terms), and some alone."""
    span = range(-reach, reach + 1)
    cube = [(x, y, z) for x in span for y in span for z in span if (x, y, z) != (0, 0, 0)]
    chosen = [cube[i] for i in rng.choice(len(cube), size=min(len(cube), 30), replace=False)]
    offsets = list(dict.fromkeys([*chosen, (reach, -1, 0), *([(0, 0, 0)] if centre else [])]))
    weights = rng.uniform(-1, 1, len(offsets))
    lookup = dict(zip(offsets, weights, strict=True))
    for i, offset in enumerate(offsets):
        opposite = tuple(-d for d in offset)
        if opposite in lookup and i % 3 != 0:
            weights[i] = lookup[opposite]
    return hf.Stencil.from_offsets(offsets, weights)


def gpaw_fcc_laplace(order: int) -> hf.Stencil:
    """The offsets of GPAW's GUCLaplace on an fcc cell (``order`` points each way along its
    six shortest directions), with weights that differ by direction and distance and are
    equal for opposite offsets (paired terms), as GPAW's are."""
    directions = [(0, 0, 1), (0, 1, -1), (0, 1, 0), (1, -1, 0), (1, 0, -1), (1, 0, 0)]
    offsets, weights = [(0, 0, 0)], [-12.5]
    for d, direction in enumerate(directions):
        for k in range(1, order + 1):
            for sign in (1, -1):
                offsets.append(tuple(sign * k * c for c in direction))
                weights.append((1.5 + 0.25 * d) / k**2)
    return hf.Stencil.from_offsets(offsets, weights)


def padded_grid(rng: np.random.Generator, stencil: hf.Stencil, extent: tuple[int, int, int], dtype: type) -> np.ndarray:
    shape = tuple(n + 2 * w for n, w in zip(extent, stencil.widths, strict=True))
    padded = rng.standard_normal(shape)
    if dtype == np.complex128:
        padded = padded + 1j * rng.standard_normal(shape)
    return padded


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("reach", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("from_memory", [False, True])
def test_every_reach_equals_the_reference(dtype, reach, from_memory):
    rng = np.random.default_rng(reach)
    stencil = random_stencil(rng, reach, centre=reach % 2 == 0)
    padded = padded_grid(rng, stencil, (5, 7, 21), dtype)
    expected = hf.reference.apply_padded(stencil, padded)
    out = hf.kernel.apply_padded(stencil, padded, from_memory=from_memory)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    ("begin", "extent"),
    [
        ((0, 0, 0), (9, 8, 37)),
        ((1, 2, 3), (5, 4, 1)),
        ((2, 0, 5), (4, 8, 3)),
        ((0, 3, 0), (9, 1, 37)),
        ((3, 1, 7), (3, 6, 30)),
    ],
)
def test_regions_and_threads_equal_the_reference(dtype, threads, begin, extent):
    rng = np.random.default_rng(7)
    stencil = gpaw_fcc_laplace(3)
    padded = padded_grid(rng, stencil, (9, 8, 37), dtype)
    expected = hf.reference.apply_padded(stencil, padded)
    out = np.full(expected.shape, np.nan, dtype)
    hf.kernel.apply_padded(stencil, padded, out, region=(begin, extent), threads=threads)
    window = tuple(slice(b, b + e) for b, e in zip(begin, extent, strict=True))
    np.testing.assert_array_equal(out[window], expected[window])
    outside = np.ones(out.shape, bool)
    outside[window] = False
    assert np.isnan(out[outside]).all(), "the kernel wrote outside its region"


@pytest.mark.parametrize(
    "offsets",
    [
        [(0, 1, 1), (0, -1, -1), (0, 1, -1), (0, 0, 0)],  # no reach along x
        [(1, 0, 1), (-2, 0, 1), (0, 0, 0)],  # none along y
        [(1, 1, 0), (-1, 2, 0), (0, 0, 0)],  # none along z
    ],
)
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_an_axis_of_width_zero_equals_the_reference(offsets, dtype):
    rng = np.random.default_rng(3)
    stencil = hf.Stencil.from_offsets(offsets, rng.uniform(-1, 1, len(offsets)))
    assert 0 in stencil.widths
    padded = padded_grid(rng, stencil, (6, 5, 11), dtype)
    np.testing.assert_array_equal(hf.kernel.apply_padded(stencil, padded), hf.reference.apply_padded(stencil, padded))


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("order", [2, 3])
@pytest.mark.parametrize("shift", [0, 1, 2])
def test_a_grid_larger_than_the_l2_streams_its_output_to_any_alignment(dtype, order, shift):
    """Input and output together larger than the L2 from memory: whole rows are streamed,
    in pieces as the output's address allows (``shift`` float64 lanes past a cache line)."""
    rng = np.random.default_rng(order)
    stencil = gpaw_fcc_laplace(order)
    level2 = hf._core.cache_sizes()[1]
    item = np.dtype(dtype).itemsize
    edge = 8
    while (2 * (edge // 2) * edge * (edge + 3) + 1) * item <= level2:
        edge += 8
    extent = (edge // 2, edge, edge + 3)  # rows that do not end on a vector
    padded = padded_grid(rng, stencil, extent, dtype)
    assert padded.nbytes + np.prod(extent) * item > level2
    expected = hf.reference.apply_padded(stencil, padded)
    lanes = int(np.prod(extent)) * (2 if dtype == np.complex128 else 1)
    storage = hf.empty_aligned((lanes + 8,), np.float64)
    out = storage[shift : shift + lanes].view(dtype).reshape(extent)
    for threads in (1, 2):
        out[...] = np.nan
        hf.kernel.apply_padded(stencil, padded, out, threads=threads, from_memory=True)
        np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize(
    "options", [{"approach": "flat-original"}, {"schedule": "all-dims", "batch": 3}, {"schedule": "overlap"}]
)
def test_the_operator_equals_the_reference_of_the_wrapped_grid(dtype, options):
    """One rank, periodic: the kernel's input rows come from the box and from halo blocks
    (faces, edges, corners) wherever the schedule keeps them."""
    rng = np.random.default_rng(11)
    stencil = gpaw_fcc_laplace(2)
    shape = (10, 9, 13)
    dec = hf.Decomposition(hf.Domain(shape, dtype=dtype, periodic=True), MPI.COMM_WORLD, grid=(1, 1, 1))
    a = rng.standard_normal((3, *shape))
    if dtype == "complex128":
        a = a + 1j * rng.standard_normal(a.shape)
    out = hf.Operator(dec, stencil, **options).apply(a)
    for g in range(a.shape[0]):
        padded = np.pad(a[g], [(w, w) for w in stencil.widths], mode="wrap")
        np.testing.assert_array_equal(out[g], hf.reference.apply_padded(stencil, padded))
