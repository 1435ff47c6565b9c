"""Bloch-periodic boundaries: op.apply(a, out, phases=...) vs the numpy reference with the
same phases, and every approach, schedule and transport bit-identical to flat-original
(GPAW's apply(in, out, phase_cd); one rank is its own neighbour on every periodic axis)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from _cases import batch_of, stencil_of
from mpi4py import MPI

import hybridfd as hf

RANKS = (1, 2, 4)

SIZE = MPI.COMM_WORLD.size
GRIDS = 5
# (periodic, radius, shape, process grid): uneven boxes, slabs along x and z, and an axis
# that is not periodic (its phases are 1).
CASES = [
    ((True, True, True), 2, (13, 11, 10), None),
    ((True, False, True), 1, (9, 12, 14), (SIZE, 1, 1)),
    ((True, True, False), 3, (12, 9, 13), (1, 1, SIZE)),
    # z and y cut, every axis phased: overlap-xy phases its z faces before the interior
    # and its y faces after it.
    ((True, True, True), 2, (9, 10, 16), (1, 2, SIZE // 2) if SIZE >= 4 else (1, 1, SIZE)),
    # A general stencil: edge and corner ghosts cross two or three periodic boundaries
    # and take the product of their phases.
    ((True, True, True), ("general", 2), (10, 9, 11), None),
    ((True, False, True), ("general", 1), (9, 12, 10), (1, 1, SIZE)),
]


def bloch(k: tuple[float, float, float], periodic: tuple[bool, bool, bool]) -> np.ndarray:
    """GPAW's phases for k-point k: exp(-2 pi i k) below, exp(+2 pi i k) above."""
    phases = np.ones((3, 2), dtype=complex)
    for axis, (k_c, wraps) in enumerate(zip(k, periodic, strict=True)):
        if wraps:
            phases[axis] = np.exp(2j * np.pi * np.array([-1, 1]) * k_c)
    return phases


def general(seed: int, periodic: tuple[bool, bool, bool]) -> np.ndarray:
    """Any complex factors (not of modulus 1, lower and upper unrelated): hybridfd's phases
    are per face, not only Bloch's."""
    rng = np.random.default_rng(seed)
    phases = rng.uniform(-2, 2, (3, 2)) + 1j * rng.uniform(-2, 2, (3, 2))
    phases[~np.array(periodic)] = 1
    return phases


def prepared(case: tuple, seed: int) -> tuple:
    periodic, radius, shape, grid = case
    dec = hf.Decomposition(hf.Domain(shape, periodic=periodic, dtype="complex128"), MPI.COMM_WORLD, grid=grid)
    stencil = stencil_of(seed, radius)
    full = batch_of((GRIDS, *shape), "complex128", seed)
    return dec, stencil, full, dec.scatter(full if dec.comm.rank == 0 else None)


@pytest.mark.parametrize(
    "case", CASES, ids=["PPP-auto", "PNP-x-slabs", "PPN-z-slabs", "PPP-y-z-cut", "PPP-general", "PNP-general-z-slabs"]
)
@pytest.mark.parametrize("kind", ["bloch", "general"])
def test_phases_match_reference(comm, case, kind):
    dec, stencil, full, local = prepared(case, seed=3)
    periodic = case[0]
    phases = bloch((0.25, -1 / 3, 0.1), periodic) if kind == "bloch" else general(5, periodic)
    out = dec.gather(hf.Operator(dec, stencil).apply(local, phases=phases))
    if comm.rank == 0:
        expected = hf.reference.apply(stencil, full, periodic=periodic, phases=phases)
        np.testing.assert_allclose(out, expected, rtol=0, atol=1e-14 * np.abs(expected).max())
        # The phases matter: without them the result differs at the periodic boundary.
        assert not np.allclose(expected, hf.reference.apply(stencil, full, periodic=periodic))


def test_unit_phases_change_nothing(comm):
    dec, stencil, _, local = prepared(CASES[0], seed=4)
    op = hf.Operator(dec, stencil, "flat-optimized")
    np.testing.assert_array_equal(op.apply(local, phases=np.ones((3, 2))), op.apply(local))


def test_phases_apply_per_call(comm):
    # An apply without phases after one with them has plain periodic ghosts again.
    dec, stencil, _, local = prepared(CASES[0], seed=6)
    op = hf.Operator(dec, stencil, "flat-optimized")
    plain = op.apply(local).copy()
    op.apply(local, phases=general(1, CASES[0][0]))
    np.testing.assert_array_equal(op.apply(local), plain)


CONFIGS = [(approach, {}) for approach in hf.approach_names()] + [
    ("flat-optimized", {"schedule": schedule, "transport": transport, "batch": batch, "slope": 1})
    for schedule, transport, batch in itertools.product(hf.schedule_names(), hf.transport_names(), (2, GRIDS))
]


@pytest.mark.parametrize(
    ("approach", "options"), CONFIGS, ids=["-".join([a, *map(str, o.values())]) for a, o in CONFIGS]
)
def test_every_approach_bit_identical_to_flat_original(comm, approach, options):
    for seed, case in enumerate(CASES):
        dec, stencil, _, local = prepared(case, seed)
        phases = general(seed, case[0])
        original = hf.Operator(dec, stencil, "flat-original").apply(local, phases=phases)
        threads = {} if approach.startswith("flat") else {"threads": 2}
        out = hf.Operator(dec, stencil, approach, **threads, **options).apply(local, phases=phases)
        np.testing.assert_array_equal(out, original)


@pytest.mark.parametrize(
    ("phases", "error", "message"),
    [
        (np.ones((3, 3)), ValueError, r"phases must have shape \(3, 2\)"),
        ([[1, 1], [1, "x"], [1, 1]], TypeError, "phases must be numbers"),
        ([[1, 1], [1, 2], [1, 1]], ValueError, r"phase \(2,0\) of axis 1 side 1 must be 1: the axis is not periodic"),
        ([[1, np.nan], [1, 1], [1, 1]], ValueError, r"phase \(nan,0\) of axis 0 side 1 is not finite"),
    ],
)
def test_bad_phases_raise_on_every_rank(comm, phases, error, message):
    dec, stencil, _, local = prepared(CASES[1], seed=7)
    op = hf.Operator(dec, stencil)
    with pytest.raises(error, match=message):
        op.apply(local, phases=phases)
    # Every rank raised before any message: the operator still works.
    op.apply(local)


def test_phases_on_float64_grids_raise(comm):
    dec = hf.Decomposition(hf.Domain((8, 8, 8)), comm)
    op = hf.Operator(dec, hf.Stencil.laplace(1))
    with pytest.raises(TypeError, match="Bloch phases need a complex128 domain; this domain is float64"):
        op.apply(dec.zeros(2), phases=np.ones((3, 2)))


def test_one_rank_with_bad_phases_stops_all(comm):
    dec, stencil, _, local = prepared(CASES[0], seed=8)
    op = hf.Operator(dec, stencil)
    phases = np.ones((3, 2)) if comm.rank != comm.size - 1 else np.ones((2, 2))
    with pytest.raises(ValueError, match=rf"rank {comm.size - 1}: phases must have shape \(3, 2\)"):
        op.apply(local, phases=phases)
