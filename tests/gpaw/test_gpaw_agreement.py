"""hybridfd.gpaw vs GPAW's own operators on GPAW's grids and arrays: equal within 1e-13
relative for float64 and complex128 (with and without Bloch phases), periodic and not,
GPAW's default and user-given parsize, orthogonal and non-orthogonal cells (`make
test-gpaw` runs this on 1, 2 and 4 ranks in GPAW's environment; see conftest.py)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from gpaw.fd_operators import FDOperator as GpawFDOperator
from gpaw.fd_operators import Gradient, GUCLaplace
from gpaw.fd_operators import Laplace as GpawLaplace
from gpaw.mpi import world
from gpaw.old.grid_descriptor import GridDescriptor
from mpi4py import MPI

import hybridfd.gpaw as hfg

SIZE = world.size
N_C = (18, 20, 22)
CELL = (3.4, 3.9, 4.3)
PARSIZES = {1: [None], 2: [None, (1, 1, 2)], 4: [None, (2, 1, 2), (1, 4, 1)]}[SIZE]
PBCS = [(True, True, True), (False, False, False), (True, False, True)]
# (dtype, phased): complex without phases is GPAW's call with all-one phases.
KINDS = [(float, False), (complex, False), (complex, True)]
K_C = np.array([0.25, -0.125, 1 / 3])
# Non-orthogonal cells (Bohr) from GPAW's own gpaw/test/fd_ops/test_laplace.py, scaled to
# the grid, and a triclinic one; each gets its own stencil range n, so that every n is
# tried without trying every pair. GPAW's Laplace reaches n points along 3 to 6
# neighbour directions, its Gradient along up to 7, some of them stepping along all axes.
S3 = 3**0.5
CELLS = {
    "hexagonal": ([(4, 0, 0), (2, 2 * S3, 0), (0, 0, 4.4)], 1),
    "fcc": (2.2 * np.array([(0, 1, 1), (1, 0, 1), (1, 1, 0)]), 2),
    "bcc": (2.0 * np.array([(-1, 1, 1), (1, -1, 1), (1, 1, -1)]), 3),
    "rocksalt": (
        4.0 * np.array([(2 / S3, 8**-0.5, -(24**-0.5)), (2 / S3, -(8**-0.5), -(24**-0.5)), (2 / S3, 0, 6**-0.5)]),
        2,
    ),
    "distorted-sc": ([(4, 0, 0), (0.04, 4, 0), (0, 0.08, 4)], 3),
    "triclinic": ([(4.0, 0, 0), (-0.6, 4.2, 0), (0.5, -0.4, 4.6)], 1),
}


def descriptor(pbc, parsize, cell=CELL) -> GridDescriptor:
    return GridDescriptor(N_C, cell, pbc, comm=world, parsize_c=parsize)


def random_arrays(gd, shape, dtype, seed):
    rng = np.random.default_rng(seed + 100 * world.rank)
    a = gd.empty(shape, dtype)
    a[...] = rng.standard_normal(a.shape)
    if dtype is complex:
        a.imag = rng.standard_normal(a.shape)
    return a


def phases_of(gd, dtype, phased):
    if dtype is float:
        return None
    return np.exp(2j * np.pi * gd.sdisp_cd * K_C[:, np.newaxis]) if phased else np.ones((3, 2), complex)


def assert_agree(ours, theirs, tolerance=1e-13):
    error = MPI.COMM_WORLD.allreduce(float(np.abs(ours - theirs).max()), op=MPI.MAX)
    scale = MPI.COMM_WORLD.allreduce(float(np.abs(theirs).max()), op=MPI.MAX)
    assert scale > 0
    assert error <= tolerance * scale, f"max difference {error:.3e}, {error / scale:.3e} relative"


@pytest.mark.parametrize(("dtype", "phased"), KINDS, ids=["float64", "complex128", "complex128-k"])
@pytest.mark.parametrize("pbc", PBCS, ids=["PPP", "NNN", "PNP"])
@pytest.mark.parametrize("parsize", PARSIZES, ids=str)
@pytest.mark.parametrize("n", [1, 2, 3])
def test_laplace_agrees(dtype, phased, pbc, parsize, n):
    gd = descriptor(pbc, parsize)
    theirs_op = GpawLaplace(gd, -0.5, n, dtype)
    ours_op = hfg.Laplace(gd, -0.5, n, dtype, approach="flat-optimized")
    assert ours_op.decomposition.box().extent == tuple(gd.n_c)
    assert ours_op.decomposition.grid == tuple(gd.parsize_c)
    a = random_arrays(gd, 5, dtype, seed=n)
    theirs, ours = gd.zeros(5, dtype), gd.zeros(5, dtype)
    phase_cd = phases_of(gd, dtype, phased)
    theirs_op.apply(a, theirs, phase_cd)
    ours_op.apply(a, ours, phase_cd)
    assert_agree(ours, theirs)


@pytest.mark.parametrize(("dtype", "phased"), KINDS, ids=["float64", "complex128", "complex128-k"])
@pytest.mark.parametrize("pbc", PBCS, ids=["PPP", "NNN", "PNP"])
def test_gradient_agrees(dtype, phased, pbc):
    # An antisymmetric star stencil: GPAW's Gradient along each axis.
    gd = descriptor(pbc, PARSIZES[-1])
    a = random_arrays(gd, 3, dtype, seed=7)
    for axis in range(3):
        theirs_op = Gradient(gd, axis, 1.0, 2, dtype)
        ours_op = hfg.from_gpaw(theirs_op)
        theirs, ours = gd.zeros(3, dtype), gd.zeros(3, dtype)
        phase_cd = phases_of(gd, dtype, phased)
        theirs_op.apply(a, theirs, phase_cd)
        ours_op.apply(a, ours, phase_cd)
        assert_agree(ours, theirs)


def test_leading_batch_dimensions_and_approaches():
    gd = descriptor((True, False, True), PARSIZES[-1])
    a = random_arrays(gd, (2, 3), complex, seed=3)
    phase_cd = phases_of(gd, complex, True)
    theirs = gd.zeros((2, 3), complex)
    GpawLaplace(gd, 1.0, 2, complex).apply(a.reshape(6, *gd.n_c), theirs.reshape(6, *gd.n_c), phase_cd)
    results = []
    for approach in ("flat-original", "flat-optimized", "hybrid-master-only"):
        ours = gd.zeros((2, 3), complex)
        hfg.Laplace(gd, 1.0, 2, complex, approach=approach).apply(a, ours, phase_cd)
        results.append(ours)
    assert_agree(results[0], theirs)
    for other in results[1:]:
        np.testing.assert_array_equal(other, results[0])


def test_coefficients_are_gpaws():
    gd = descriptor((True, True, True), None)
    theirs_op = GpawLaplace(gd, -0.5, 3, float)
    ours_op = hfg.from_gpaw(theirs_op)
    assert ours_op.get_diagonal_element() == theirs_op.get_diagonal_element()
    for coefficient, offset in zip(theirs_op.coef_p, theirs_op.offset_pc, strict=True):
        axis = int(np.flatnonzero(offset)[0]) if any(offset) else None
        if axis is None:
            assert ours_op.stencil.centre == coefficient
        else:
            d = offset[axis]
            assert (ours_op.stencil.plus if d > 0 else ours_op.stencil.minus)[axis, abs(d) - 1] == coefficient


def apply_both(theirs_op, ours_op, gd, dtype, phased, batch=3, seed=1):
    a = random_arrays(gd, batch, dtype, seed)
    theirs, ours = gd.zeros(batch, dtype), gd.zeros(batch, dtype)
    phase_cd = phases_of(gd, dtype, phased)
    theirs_op.apply(a, theirs, phase_cd)
    ours_op.apply(a, ours, phase_cd)
    return ours, theirs


@pytest.mark.parametrize(("dtype", "phased"), KINDS, ids=["float64", "complex128", "complex128-k"])
@pytest.mark.parametrize("pbc", PBCS, ids=["PPP", "NNN", "PNP"])
@pytest.mark.parametrize("parsize", PARSIZES, ids=str)
@pytest.mark.parametrize("cell", list(CELLS))
def test_laplace_agrees_on_any_cell(dtype, phased, pbc, parsize, cell):
    cell_cv, n = CELLS[cell]
    gd = descriptor(pbc, parsize, cell_cv)
    theirs_op = GpawLaplace(gd, -0.5, n, dtype)
    ours_op = hfg.Laplace(gd, -0.5, n, dtype)
    assert not ours_op.stencil.is_star and ours_op.npoints == theirs_op.npoints
    assert_agree(*apply_both(theirs_op, ours_op, gd, dtype, phased))
    # GPAW's GUCLaplace is what its Laplace builds for n < 9; the adaptor's the same.
    guc = hfg.GUCLaplace(gd, -0.5, n, dtype)
    assert_agree(*apply_both(GUCLaplace(gd, -0.5, n, dtype), guc, gd, dtype, phased))


@pytest.mark.parametrize(("dtype", "phased"), KINDS, ids=["float64", "complex128", "complex128-k"])
@pytest.mark.parametrize("pbc", PBCS, ids=["PPP", "NNN", "PNP"])
@pytest.mark.parametrize("cell", list(CELLS))
def test_gradient_agrees_on_any_cell(dtype, phased, pbc, cell):
    cell_cv, n = CELLS[cell]
    gd = descriptor(pbc, PARSIZES[-1], cell_cv)
    for v in range(3):
        theirs_op = Gradient(gd, v, 0.5, n, dtype)
        ours_op = hfg.Gradient(gd, v, 0.5, n, dtype)
        assert_agree(*apply_both(theirs_op, ours_op, gd, dtype, phased, seed=v))


@pytest.mark.parametrize(("dtype", "phased"), KINDS, ids=["float64", "complex128", "complex128-k"])
@pytest.mark.parametrize("pbc", PBCS, ids=["PPP", "NNN", "PNP"])
@pytest.mark.parametrize("parsize", PARSIZES, ids=str)
@pytest.mark.parametrize("seed", [1, 2])
def test_fd_operator_with_any_offsets_agrees(dtype, phased, pbc, parsize, seed):
    # Any offsets within GPAW's reach (|d| <= 3 here: the smallest box has 4 points), not
    # symmetric, with or without the centre.
    rng = np.random.default_rng(seed)  # the same on every rank
    offsets = {tuple(int(d) for d in rng.integers(-3, 4, 3)) for _ in range(30)} | {(0, 0, 1)}
    if seed == 1:
        offsets.add((0, 0, 0))
    else:
        offsets.discard((0, 0, 0))
    offset_pc = np.array(sorted(offsets))
    coef_p = rng.standard_normal(len(offset_pc))
    gd = descriptor(pbc, parsize, CELLS["triclinic"][0])
    theirs_op = GpawFDOperator(coef_p, offset_pc, gd, dtype)
    ours_op = hfg.FDOperator(coef_p, offset_pc, gd, dtype)
    assert_agree(*apply_both(theirs_op, ours_op, gd, dtype, phased, seed=seed))


@pytest.mark.parametrize("cell", list(CELLS))
def test_coefficients_and_offsets_are_gpaws_on_any_cell(cell):
    gd = descriptor((True, True, True), None, CELLS[cell][0])
    for theirs_op in (GpawLaplace(gd, -0.5, 3, float), Gradient(gd, 1, 1.0, 2, float)):
        ours_op = hfg.from_gpaw(theirs_op)
        pairs = zip(theirs_op.offset_pc, theirs_op.coef_p, strict=True)
        theirs = {tuple(int(d) for d in offset): float(coefficient) for offset, coefficient in pairs}
        ours = dict(zip(map(tuple, ours_op.stencil.offsets.tolist()), ours_op.stencil.weights.tolist(), strict=True))
        assert ours == theirs
        assert ours_op.mp == theirs_op.mp and ours_op.npoints == theirs_op.npoints


def test_new_interface_on_uniform_grid_arrays():
    # GPAW's newer code calls kin(psit_nR, out) on UGArrays with the grid's own phases.
    from gpaw.core import UGDesc

    cells = (CELL, CELLS["hexagonal"][0])
    for cell, dtype, kpt in itertools.product(cells, (float, complex), ((0, 0, 0), (K_C[0], 0, K_C[2]))):
        if dtype is float and any(kpt):
            continue
        grid = UGDesc(cell=cell, size=N_C, pbc=(True, False, True), kpt=kpt, comm=world, dtype=dtype)
        psit = grid.empty(4)
        psit.data[...] = random_arrays(grid._gd, 4, dtype, seed=5)
        theirs = GpawLaplace(grid._gd, -0.5, 3, dtype)(psit)
        ours = hfg.Laplace(grid._gd, -0.5, 3, dtype)(psit)
        assert_agree(ours.data, theirs.data)
