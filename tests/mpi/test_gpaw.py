"""The GPAW adaptor's own logic without GPAW: fake grid descriptors that carry GPAW's
attributes, computed by GPAW 26.7's rules (gpaw/old/domain.py, grid_descriptor.py):
row-major rank order, cut points round(i*N/P + 0.4999), a non-periodic axis of N-1 points
starting at GPAW's index 1, Bloch phases exp(2 pi i sdisp_cd k) on the sending side.
The agreement with GPAW itself is tests/gpaw/ (`make test-gpaw`)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from mpi4py import MPI

import hybridfd as hf
import hybridfd.gpaw as hfg

RANKS = (1, 2, 4)

SIZE = MPI.COMM_WORLD.size
# Chelikowsky et al.'s Laplacian weights, GPAW's `laplace` table (n = 1, 2, 3).
LAPLACE = {1: [-2, 1], 2: [-5 / 2, 4 / 3, -1 / 12], 3: [-49 / 18, 3 / 2, -3 / 20, 1 / 90]}


class FakeGridDescriptor:
    """The attributes of GPAW's GridDescriptor that the adaptor reads, by GPAW's rules."""

    def __init__(self, big_n, pbc, comm, parsize, cell=(2.0, 2.4, 2.6)):
        self.N_c = np.array(big_n)
        self.pbc_c = np.array(pbc, dtype=bool)
        self.comm = comm
        self.parsize_c = np.array(parsize)
        self.stride_c = np.array([parsize[1] * parsize[2], parsize[2], 1])
        self.parpos_c = self.get_processor_position_from_rank(comm.rank)
        self.n_cp = []
        for axis in range(3):
            n_p = np.around(np.arange(parsize[axis] + 1) * float(big_n[axis]) / parsize[axis] + 0.4999).astype(int)
            if not pbc[axis]:
                n_p[0] = 1
            self.n_cp.append(n_p)
        self.beg_c = np.array([self.n_cp[c][self.parpos_c[c]] for c in range(3)])
        self.end_c = np.array([self.n_cp[c][self.parpos_c[c] + 1] for c in range(3)])
        self.n_c = self.end_c - self.beg_c
        self.h_cv = np.diag(cell) / self.N_c[:, np.newaxis]
        # GPAW's find_neighbor_processors: +-1 where a message wraps around a periodic axis.
        self.sdisp_cd = np.zeros((3, 2), int)
        for c in range(3):
            for d in range(2):
                step = 2 * d - 1
                if not 0 <= self.parpos_c[c] + step < parsize[c] and pbc[c]:
                    self.sdisp_cd[c, d] = -step

    def get_processor_position_from_rank(self, rank):
        return np.array(
            [rank // self.stride_c[0], (rank % self.stride_c[0]) // self.stride_c[1], rank % self.stride_c[1]]
        )

    def empty(self, n=(), dtype=float):
        n = (n,) if isinstance(n, int) else tuple(n)
        return np.empty((*n, *self.n_c), dtype=dtype)

    def global_slices(self):
        """This rank's box in the global array of N - 1 + pbc points per axis."""
        return tuple(slice(b - 1 + p, e - 1 + p) for b, e, p in zip(self.beg_c, self.end_c, self.pbc_c, strict=True))


def laplace_terms(gd, scale, n):
    """GPAW's (coef_p, offset_pc) of an orthorhombic Laplace: centre, then per axis the
    offsets +1..+n and -1..-n (GUCLaplace's order)."""
    weights = scale / np.diag(gd.h_cv) ** 2
    coefs, offsets = [LAPLACE[n][0] * weights.sum()], [(0, 0, 0)]
    for axis in range(3):
        for sign in (1, -1):
            for d in range(1, n + 1):
                offset = [0, 0, 0]
                offset[axis] = sign * d
                offsets.append(tuple(offset))
                coefs.append(weights[axis] * LAPLACE[n][d])
    return coefs, offsets


# GPAW's stencils for non-orthogonal cells (gpaw/fd_operators.py): GUCLaplace and Gradient
# take, along each of D neighbour directions M, the multiples +1..+n then -1..-n of M.
# Directions of hexagonal, fcc and bcc cells; the weights here are made up.
DIRECTIONS = {
    "hexagonal": [(1, 0, 0), (0, 1, 0), (0, 0, 1), (1, -1, 0)],
    "fcc": [(1, 0, 0), (0, 1, 0), (0, 0, 1), (1, -1, 0), (0, 1, -1), (1, 0, -1)],
    "bcc": [(1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 1)],
}
# GPAW's `derivatives` table (n = 1, 2): Gradient's weights at +M..+nM (-M..-nM negated).
DERIVATIVES = {1: [1 / 2], 2: [2 / 3, -1 / 12]}


def direction_terms(directions, n, gradient=False):
    """GPAW's (coef_p, offset_pc) of a GUCLaplace (or, ``gradient``, a Gradient) along
    ``directions``: the centre (Laplacian only), then per direction +1..+n, -1..-n."""
    weights = 0.75 + 0.125 * np.arange(len(directions))
    coefs, offsets = ([], []) if gradient else ([LAPLACE[n][0] * weights.sum()], [(0, 0, 0)])
    for weight, direction in zip(weights, np.array(directions), strict=True):
        for sign in (1, -1):
            for d in range(1, n + 1):
                offsets.append(tuple(int(o) for o in sign * d * direction))
                coefs.append(sign * weight * DERIVATIVES[n][d - 1] if gradient else weight * LAPLACE[n][d])
    return coefs, offsets


STENCILS = {
    "orthorhombic": lambda gd: laplace_terms(gd, -0.5, 2),
    "hexagonal": lambda gd: direction_terms(DIRECTIONS["hexagonal"], 2),
    "fcc": lambda gd: direction_terms(DIRECTIONS["fcc"], 2),
    "bcc": lambda gd: direction_terms(DIRECTIONS["bcc"], 1),
    "gradient-fcc": lambda gd: direction_terms(DIRECTIONS["fcc"], 2, gradient=True),
    "gradient-bcc": lambda gd: direction_terms(DIRECTIONS["bcc"], 1, gradient=True),
}


def global_batch(shape, batch, dtype, seed):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal((*batch, *shape))
    return values + 1j * rng.standard_normal((*batch, *shape)) if dtype is complex else values


def test_importing_the_adaptor_does_not_import_gpaw():
    assert "gpaw" not in sys.modules


GRIDS = [None, (SIZE, 1, 1), (1, SIZE, 1)]
PBCS = [(True, True, True), (False, False, False), (True, False, True)]


@pytest.mark.parametrize("parsize", GRIDS, ids=["auto", "x", "y"])
@pytest.mark.parametrize("pbc", PBCS, ids=["PPP", "NNN", "PNP"])
def test_decomposition_holds_gpaws_boxes(comm, parsize, pbc):
    big_n = (10, 13, 9)
    shape = tuple(n - 1 + p for n, p in zip(big_n, pbc, strict=True))
    parsize = parsize or hf.decomposition.automatic_grid(shape, SIZE)
    gd = FakeGridDescriptor(big_n, pbc, comm, parsize)
    dec = hfg.decomposition_of(gd, complex)
    assert dec.domain == hf.Domain(shape, pbc, "complex128")
    assert dec.grid == tuple(parsize)
    assert dec.coords() == tuple(gd.parpos_c)
    assert dec.box().slices() == gd.global_slices()
    assert dec.local_shape(3) == gd.empty(3).shape


@pytest.mark.parametrize("kind", list(STENCILS))
@pytest.mark.parametrize(("dtype", "phased"), [(float, False), (complex, False), (complex, True)])
@pytest.mark.parametrize("pbc", PBCS, ids=["PPP", "NNN", "PNP"])
@pytest.mark.parametrize("parsize", GRIDS, ids=["auto", "x", "y"])
def test_apply_matches_reference(comm, dtype, pbc, parsize, phased, kind):
    # GPAW's phases are per sender; the reference's per face of the domain, its edges and
    # corners taking the product of the faces they cross.
    big_n = (12, 14, 11)
    shape = tuple(n - 1 + p for n, p in zip(big_n, pbc, strict=True))
    gd = FakeGridDescriptor(big_n, pbc, comm, parsize or hf.decomposition.automatic_grid(shape, SIZE))
    coefs, offsets = STENCILS[kind](gd)
    op = hfg.FDOperator(coefs, offsets, gd, dtype, approach="flat-original")
    assert op.stencil.is_star == (kind == "orthorhombic")
    full = global_batch(shape, (2, 3), dtype, seed=11)
    a = gd.empty((2, 3), dtype)
    a[...] = full[(..., *gd.global_slices())]
    b = gd.empty((2, 3), dtype)
    k = np.array([0.25, -0.125, 1 / 3])
    phase_cd = np.exp(2j * np.pi * gd.sdisp_cd * k[:, np.newaxis]) if phased else None
    op.apply(a, b, phase_cd)
    # The same with GPAW's no-phase call for complex arrays: all ones.
    if dtype is complex and not phased:
        c = gd.empty((2, 3), dtype)
        op.apply(a, c, np.ones((3, 2), complex))
        np.testing.assert_array_equal(c, b)
    phases = None
    if phased:
        phases = np.ones((3, 2), complex)
        for axis in range(3):
            if pbc[axis]:
                phases[axis] = np.exp(2j * np.pi * np.array([-1, 1]) * k[axis])
    expected = hf.reference.apply(op.stencil, full.reshape(6, *shape), periodic=pbc, phases=phases)
    expected = expected.reshape(full.shape)[(..., *gd.global_slices())]
    np.testing.assert_allclose(b, expected, rtol=0, atol=1e-13 * np.abs(expected).max())
    optimized = gd.empty((2, 3), dtype)
    hfg.FDOperator(coefs, offsets, gd, dtype, approach="flat-optimized").apply(a, optimized, phase_cd)
    np.testing.assert_array_equal(optimized, b)


@pytest.mark.parametrize(("dtype", "phased"), [(float, False), (complex, True)])
def test_diagonal_offsets_across_a_one_point_axis(comm, dtype, phased):
    # GPAW's own test of Gradient on a (1, 7, 1) grid of a skewed cell: x is one point
    # thick, so the offsets along (-1, 1, 0) read this box's own x-wrapped points from the
    # neighbour along y, with the phases of both boundaries where they cross both.
    big_n, pbc = (1, 8, 1), (True, True, True)
    gd = FakeGridDescriptor(big_n, pbc, comm, (1, SIZE, 1))
    coefs, offsets = direction_terms([(1, 0, 0), (0, 1, 0), (0, 0, 1), (-1, 1, 0)], 1, gradient=True)
    op = hfg.FDOperator(coefs, offsets, gd, dtype)
    full = global_batch(big_n, (2,), dtype, seed=3)
    a = gd.empty(2, dtype)
    a[...] = full[(..., *gd.global_slices())]
    b = gd.empty(2, dtype)
    k = np.array([0.25, -0.125, 1 / 3])
    op.apply(a, b, np.exp(2j * np.pi * gd.sdisp_cd * k[:, np.newaxis]) if phased else None)
    phases = np.exp(2j * np.pi * np.array([-1, 1]) * k[:, np.newaxis]) if phased else None
    expected = hf.reference.apply(op.stencil, full, periodic=pbc, phases=phases)[(..., *gd.global_slices())]
    np.testing.assert_allclose(b, expected, rtol=0, atol=1e-13 * np.abs(expected).max())


def test_float_ignores_phases(comm):
    # GPAW's C operator never reads phase_cd for real arrays; a drop-in must not either.
    gd = FakeGridDescriptor((8, 8, 8), (True,) * 3, comm, (SIZE, 1, 1))
    op = hfg.FDOperator(*laplace_terms(gd, 1.0, 1), gd, float)
    a = gd.empty(2)
    a[...] = np.random.default_rng(comm.rank).standard_normal(a.shape)
    with_phases, without = gd.empty(2), gd.empty(2)
    op.apply(a, with_phases, np.full((3, 2), 1j))
    op.apply(a, without)
    np.testing.assert_array_equal(with_phases, without)


def test_single_grid_and_gpaw_attributes(comm):
    gd = FakeGridDescriptor((9, 10, 12), (True, False, True), comm, (1, 1, SIZE))
    coefs, offsets = laplace_terms(gd, 1.0, 3)
    op = hfg.FDOperator(coefs, offsets, gd, float)
    assert (op.shape, op.npoints, op.mp, op.dtype) == (tuple(gd.n_c), 19, 3, float)
    assert op.get_diagonal_element() == coefs[0]
    assert "19 point" in str(op)
    a, b, c = gd.empty(), gd.empty(), gd.empty(1)
    a[...] = 1.0
    op.apply(a, b)
    op.apply(a[np.newaxis], c)
    np.testing.assert_array_equal(b, c[0])


def test_stencil_of_gpaw_terms():
    coefs = [-3.0, 1.0, 0.5, 1.5, 2.0, 0.25, 0.75]
    offsets = [(0, 0, 0), (1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)]
    stencil = hfg.stencil_of(coefs, offsets)
    assert stencil.is_star and stencil.radius == 1 and stencil.centre == -3.0
    np.testing.assert_array_equal(stencil.plus[:, 0], [1.0, 1.5, 0.25])
    np.testing.assert_array_equal(stencil.minus[:, 0], [0.5, 2.0, 0.75])


@pytest.mark.parametrize("kind", ["hexagonal", "fcc", "bcc"])
@pytest.mark.parametrize("gradient", [False, True], ids=["laplace", "gradient"])
def test_stencil_of_offsets_along_several_axes(kind, gradient):
    # GPAW's offset_pc as GUCLaplace builds it: a list of numpy rows.
    coefs, offsets = direction_terms(DIRECTIONS[kind], 2, gradient)
    stencil = hfg.stencil_of(np.array(coefs), [np.array(o) for o in offsets])
    assert not stencil.is_star and stencil.reads_edges and stencil.radius == 2
    given = dict(zip(offsets, coefs, strict=True))
    got = dict(zip(map(tuple, stencil.offsets.tolist()), stencil.weights.tolist(), strict=True))
    assert got == given


def test_gpaw_star_offsets_keep_the_star_kernels():
    # GPAW's Gradient on an orthogonal cell: one axis, no centre.
    stencil = hfg.stencil_of([0.5, -0.5, 1 / 12, -1 / 12], [(0, 2, 0), (0, -2, 0), (0, 1, 0), (0, -1, 0)])
    assert stencil.is_star and stencil.radius == 2 and stencil.centre == 0.0
    np.testing.assert_array_equal(stencil.plus[1], [1 / 12, 0.5])
    np.testing.assert_array_equal(stencil.minus[1], [-1 / 12, -0.5])


@pytest.mark.parametrize(
    ("coefs", "offsets", "error", "message"),
    [
        ([1.0, 2.0], [(0, 0, 0), (3, -7, 0)], ValueError, r"stencil offset \(3, -7, 0\) reaches beyond 6 points"),
        ([1.0, 2.0, 3.0], [(0, 0, 0), (1, 1, 0), (1, 1, 0)], ValueError, r"stencil offset \(1, 1, 0\) is given twice"),
        ([1.0], [(0, 0)], ValueError, r"offset_pc \(P, 3\)"),
        ([1.0, 2.0], [(0, 0, 0), (0.5, 1, 0)], TypeError, "stencil offsets must be integers"),
        ([1.0], [(0, 0, 0)], ValueError, "at least one offset other than the centre"),
    ],
)
def test_bad_stencil_raises_on_every_rank(comm, coefs, offsets, error, message):
    gd = FakeGridDescriptor((8, 8, 8), (True,) * 3, comm, (SIZE, 1, 1))
    with pytest.raises(error, match=message):
        hfg.FDOperator(coefs, offsets, gd, float)


class ReversedGridDescriptor(FakeGridDescriptor):
    """GPAW's rank r at the process-grid position of rank size - 1 - r."""

    def get_processor_position_from_rank(self, rank):
        return super().get_processor_position_from_rank(self.comm.size - 1 - rank)


def test_errors_name_gpaws_ranks(comm):
    gd = ReversedGridDescriptor((8, 8, 8), (True,) * 3, comm, (SIZE, 1, 1))
    assert hfg.decomposition_of(gd).rank == SIZE - 1 - comm.rank
    coefs, offsets = laplace_terms(gd, 1.0, 1)
    if comm.rank == SIZE - 1:
        offsets[2] = offsets[1]
    with pytest.raises(ValueError, match=rf"^rank {SIZE - 1}: .*offset \(1, 0, 0\) is given twice"):
        hfg.FDOperator(coefs, offsets, gd, float)


def test_apply_errors_name_gpaws_ranks(comm):
    """The core's agreement on the arrays, and the adaptor's phase check that meets it
    there, name GPAW's ranks, not the layout's Cartesian ones."""
    gd = ReversedGridDescriptor((8, 8, 8), (True,) * 3, comm, (SIZE, 1, 1))
    op = hfg.FDOperator(*laplace_terms(gd, 1.0, 1), gd, complex)
    last = comm.rank == SIZE - 1
    a, b = gd.empty(1, complex), gd.empty(1, complex)
    with pytest.raises(ValueError, match=rf"^rank {SIZE - 1}: input array has shape \(1, 1, 1, 1\)"):
        op.apply(np.zeros((1, 1, 1, 1), complex) if last else a, b)
    with pytest.raises(ValueError, match=rf"^rank {SIZE - 1}: phase_cd must have shape \(3, 2\)"):
        op.apply(a, b, np.ones(3) if last else np.ones((3, 2), complex))


def test_phase_that_is_not_bloch_raises_on_every_rank(comm):
    # With several boxes along a periodic axis, the neighbour's factor is inferred from
    # this rank's own Bloch phase; a factor of modulus 2 cannot be one.
    gd = FakeGridDescriptor((8, 8, 8), (True,) * 3, comm, (SIZE, 1, 1))
    op = hfg.FDOperator(*laplace_terms(gd, 1.0, 1), gd, complex)
    a, b = gd.empty(1, complex), gd.empty(1, complex)
    a[...] = 1
    phase_cd = np.ones((3, 2), complex)
    phase_cd[0] = 2.0
    if SIZE == 1:
        op.apply(a, b, phase_cd)  # its own neighbour: GPAW's factor is used as it is
        phases = [[2, 2], [1, 1], [1, 1]]
        np.testing.assert_allclose(b, hf.reference.apply(op.stencil, a, phases=phases), rtol=1e-14)
        return
    with pytest.raises(ValueError, match=r"phase_cd\[0, \d\] = \(2\+0j\) is not a Bloch phase"):
        op.apply(a, b, phase_cd)


def test_bad_phase_shape_raises(comm):
    gd = FakeGridDescriptor((8, 8, 8), (True,) * 3, comm, (SIZE, 1, 1))
    op = hfg.FDOperator(*laplace_terms(gd, 1.0, 1), gd, complex)
    a, b = gd.empty(1, complex), gd.empty(1, complex)
    with pytest.raises(ValueError, match=r"phase_cd must have shape \(3, 2\)"):
        op.apply(a, b, np.ones(3))


def test_gpaw_box_that_does_not_follow_its_cuts_is_refused(comm):
    gd = FakeGridDescriptor((8, 8, 8), (True,) * 3, comm, (SIZE, 1, 1))
    gd.n_c = gd.n_c + (comm.rank == 0)
    with pytest.raises(ValueError, match=r"rank 0: GPAW's box .* does not follow from its n_cp"):
        hfg.decomposition_of(gd)


def test_mpi4py_backend_wrapper_is_unwrapped(comm):
    class Wrapper:  # GPAW's mpi4py backend: the mpi4py communicator is .comm
        def __init__(self, inner):
            self.comm, self.rank, self.size = inner, inner.rank, inner.size

    assert hfg.mpi4py_communicator(Wrapper(comm)) is comm
    assert hfg.mpi4py_communicator(comm) is comm


def test_laplace_without_gpaw_says_how_to_get_it(comm, monkeypatch):
    monkeypatch.setitem(sys.modules, "gpaw.fd_operators", None)  # absent, even where GPAW is installed
    gd = FakeGridDescriptor((8, 8, 8), (True,) * 3, comm, (SIZE, 1, 1))
    for build in (lambda: hfg.Laplace(gd, 1.0, 2), lambda: hfg.GUCLaplace(gd), lambda: hfg.Gradient(gd, 0)):
        with pytest.raises(ImportError, match="hybridfd.gpaw needs GPAW for this .*pip install gpaw"):
            build()
