"""GPAW drop-in: hybridfd applies GPAW's finite-difference operators on GPAW's own grids.

The seed papers optimised GPAW's ``FDOperator.apply`` (GPAW journal, Sect. 4-6); this
module gives a GPAW run those approaches by changing one line::

    from hybridfd.gpaw import Laplace      # instead of: from gpaw.fd_operators import Laplace

An operator here takes GPAW's calling convention, ``op.apply(in_xg, out_xg, phase_cd)``,
on GPAW's arrays (``gd.empty(n, dtype)``, any leading batch dimensions), and reproduces
GPAW's decomposition exactly: its process grid ``gd.parsize_c``, its rank order
(row-major, ``Domain.get_processor_position_from_rank``; GPAW does not use
``MPI_Cart_create``), its cut points ``gd.n_cp`` (GPAW rounds ``i*N/P + 0.4999``, which
spreads the remainder differently from hybridfd's default) and its non-periodic
convention: an axis that is not periodic has ``N_c - 1`` points, indices 1..N-1 of GPAW's
grid, with zero boundary values at 0 and N, so hybridfd sees ``N_c - 1`` points with zero
ghosts and GPAW's cut points shifted down by one.

GPAW is only imported when a GPAW object needs it (its communicator, ``Laplace``,
``GUCLaplace`` and ``Gradient``, which build GPAW's operator and convert it); the
layout and stencil logic reads plain attributes, so it works on any object that carries
them. See docs/gpaw.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from mpi4py import MPI

from hybridfd._collective import Problem, agree
from hybridfd.decomposition import Decomposition, Layout
from hybridfd.domain import Domain
from hybridfd.operator import Operator
from hybridfd.stencil import Stencil

__all__ = ["FDOperator", "GUCLaplace", "Gradient", "Laplace", "decomposition_of", "from_gpaw", "stencil_of"]

#: The approach a GPAW operator gets unless told otherwise (the papers' best flat one).
DEFAULT_APPROACH = "flat-optimized"

# |phase| may differ from 1 by rounding only: GPAW's phases are exp(2 pi i sdisp k).
_UNIT_TOLERANCE = 1e-12


def _gpaw_module(name: str) -> Any:
    try:
        import importlib

        return importlib.import_module(name)
    except ImportError as error:
        raise ImportError(
            f"hybridfd.gpaw needs GPAW for this ({name} could not be imported: {error}); install it with "
            "`pip install gpaw` in an environment whose mpi4py and hybridfd use the same MPI (see docs/gpaw.md, "
            "or `make peers` for the GPAW environment the tests use)"
        ) from error


def _dtype_name(dtype: object) -> str:
    name = np.dtype(dtype).name
    if name not in ("float64", "complex128"):
        raise TypeError(f"dtype {dtype!r} is not one GPAW's operators take; use float or complex")
    return name


def mpi4py_communicator(comm: object) -> MPI.Comm:
    """An mpi4py communicator with the same processes in the same rank order as ``comm``.

    ``comm`` is an mpi4py communicator, GPAW's ``mpi4py`` backend wrapper (``.comm``), a
    one-process communicator (GPAW's serial one included), or GPAW's C communicator,
    whose processes are found through ``gpaw.mpi.world``. Collective over ``comm``.
    """
    if isinstance(comm, MPI.Comm):
        return comm
    inner = getattr(comm, "comm", None)
    if isinstance(inner, MPI.Comm):
        return inner
    if comm.size == 1:
        return MPI.COMM_SELF
    world = _gpaw_module("gpaw.mpi").world
    world_ranks = np.asarray(comm.translate_ranks(world, np.arange(comm.size)))
    if world.size != MPI.COMM_WORLD.size:
        raise RuntimeError(
            f"GPAW's world has {world.size} ranks but mpi4py's has {MPI.COMM_WORLD.size}: GPAW and hybridfd "
            "must run on the same MPI library"
        )
    group = MPI.COMM_WORLD.Get_group().Incl([int(rank) for rank in world_ranks])
    try:
        return MPI.COMM_WORLD.Create_group(group)
    finally:
        group.Free()


def layout_of(gd: Any) -> tuple[Domain, Layout]:
    """The hybridfd domain shape and periodicity, and the layout, of GPAW's grid ``gd``.

    Reads ``gd.N_c``, ``gd.pbc_c``, ``gd.parsize_c``, ``gd.n_cp`` and (for the rank
    order) ``gd.get_processor_position_from_rank``, checking this rank's box against
    ``gd.beg_c`` and ``gd.n_c``. Raises ValueError if they disagree. Local.
    """
    big_n = np.asarray(gd.N_c, dtype=int)
    periodic = np.asarray(gd.pbc_c, dtype=bool)
    parsize = np.asarray(gd.parsize_c, dtype=int)
    if big_n.shape != (3,) or periodic.shape != (3,) or parsize.shape != (3,):
        raise ValueError(f"gd.N_c, gd.pbc_c and gd.parsize_c must have 3 entries, got {big_n}, {periodic}, {parsize}")
    # A non-periodic axis holds GPAW's points 1..N-1: index i of GPAW is i - 1 here.
    shift = 1 - periodic.astype(int)
    shape = tuple(int(n) for n in big_n - shift)
    splits = []
    for axis in range(3):
        cuts = np.asarray(gd.n_cp[axis], dtype=int)
        if cuts.shape != (parsize[axis] + 1,):
            raise ValueError(
                f"gd.n_cp[{axis}] = {cuts.tolist()} does not have gd.parsize_c[{axis}] + 1 = "
                f"{parsize[axis] + 1} entries"
            )
        axis_splits = cuts - shift[axis]
        # GPAW's first cut of a non-periodic axis is its boundary point 1, hybridfd's 0.
        splits.append(tuple(int(s) for s in axis_splits))
    size = int(np.prod(parsize))
    position = getattr(gd, "get_processor_position_from_rank", None)
    if position is not None:
        positions = tuple(tuple(int(p) for p in position(rank)) for rank in range(size))
    else:
        positions = tuple(tuple(int(p) for p in np.unravel_index(rank, tuple(parsize))) for rank in range(size))
    here = positions[gd.comm.rank]
    begin = np.array([splits[axis][here[axis]] for axis in range(3)])
    extent = np.array([splits[axis][here[axis] + 1] - splits[axis][here[axis]] for axis in range(3)])
    expected_begin = np.asarray(gd.beg_c, dtype=int) - shift
    if (begin != expected_begin).any() or (extent != np.asarray(gd.n_c, dtype=int)).any():
        raise ValueError(
            f"rank {gd.comm.rank}: GPAW's box (beg_c={list(gd.beg_c)}, n_c={list(gd.n_c)}) does not follow from "
            f"its n_cp {[list(c) for c in gd.n_cp]} at position {here}"
        )
    row_major = all(np.ravel_multi_index(p, tuple(parsize)) == rank for rank, p in enumerate(positions))
    return Domain(shape, tuple(bool(p) for p in periodic)), Layout(tuple(splits), None if row_major else positions)


def decomposition_of(gd: Any, dtype: object = float) -> Decomposition:
    """The hybridfd Decomposition that holds, on each rank, exactly GPAW's box of ``gd``.

    Collective over ``gd.comm``. Its communicator has GPAW's rank order, so rank r of
    ``gd.comm`` holds the box of rank r here.
    """
    problem, domain, layout = None, Domain((1, 1, 1)), Layout(((0, 1), (0, 1), (0, 1)))
    comm = mpi4py_communicator(gd.comm)
    try:
        domain, layout = layout_of(gd)
        domain = Domain(domain.shape, domain.periodic, _dtype_name(dtype))
    except (ValueError, TypeError) as error:
        problem = Problem(str(error), type(error))
    agree(comm, problem)
    return Decomposition(domain, comm, layout=layout)


def stencil_of(coef_p: Sequence[float], offset_pc: Sequence[Sequence[int]]) -> Stencil:
    """The stencil with GPAW's coefficients ``coef_p`` at offsets ``offset_pc``.

    Any offsets: along the axes only (GPAW's operators on orthogonal cells) they make a
    star stencil, which the star kernels apply; an offset along two or three axes (GPAW's
    ``Laplace`` and ``Gradient`` on non-orthogonal cells) makes a general one
    (:meth:`hybridfd.Stencil.from_offsets`). Raises ValueError naming an offset beyond
    radius 6 or given twice, or arrays of the wrong shape; TypeError for offsets that are
    not integers.
    """
    coefficients = np.asarray(coef_p, dtype=float)
    offsets = np.asarray(offset_pc)
    if coefficients.ndim != 1 or offsets.shape != (len(coefficients), 3):
        raise ValueError(
            f"coef_p must have shape (P,) and offset_pc (P, 3); got {coefficients.shape} and {offsets.shape}"
        )
    return Stencil.from_offsets(offsets, coefficients)


class FDOperator:
    """GPAW's ``FDOperator(coef_p, offset_pc, gd, dtype)``, applied by hybridfd.

    Any offsets with ``|d| <= 6`` per axis (see :func:`stencil_of`), on any cell: GPAW's
    ``offset_pc`` are grid steps, so the cell's shape is in the coefficients only.
    ``approach`` and ``options`` are :class:`hybridfd.Operator`'s. Collective over
    ``gd.comm`` (it builds a communicator and the operator's buffers).
    """

    def __init__(
        self,
        coef_p: Sequence[float],
        offset_pc: Sequence[Sequence[int]],
        gd: Any,
        dtype: object = float,
        description: str | None = None,
        *,
        approach: str = DEFAULT_APPROACH,
        **options: Any,
    ) -> None:
        dtype_name = _dtype_name(dtype)
        self.decomposition = decomposition_of(gd, dtype_name)
        problem, stencil = None, Stencil.laplace(1)
        try:
            stencil = stencil_of(coef_p, offset_pc)
        except (ValueError, TypeError) as error:
            problem = Problem(str(error), type(error))
        # The error names GPAW's ranks (the ranks of gd.comm), not the layout's Cartesian ones.
        self.decomposition._agree(problem)
        #: The hybridfd Operator that does the work (``operator`` is GPAW's name for its C object).
        self.hybridfd_operator = Operator(self.decomposition, stencil, approach, **options)
        self.gd = gd
        self.dtype = complex if dtype_name == "complex128" else float
        self.shape = tuple(int(n) for n in gd.n_c)
        self.coef_p = np.asarray(coef_p, dtype=float)
        self.offset_pc = np.asarray(offset_pc, dtype=int)
        self.npoints = len(self.coef_p)
        self.mp = stencil.radius
        self.description = description or f"{self.npoints} point finite-difference stencil (hybridfd, {approach})"
        self._at_lower = tuple(c == 0 for c in self.decomposition.coords())
        self._at_upper = tuple(
            c == p - 1 for c, p in zip(self.decomposition.coords(), self.decomposition.grid, strict=True)
        )

    def __str__(self) -> str:
        return f"<{self.description}>"

    @property
    def stencil(self) -> Stencil:
        return self.hybridfd_operator.stencil

    def get_diagonal_element(self) -> float:
        """The coefficient of the centre point (GPAW's ``Operator.get_diagonal_element``)."""
        return self.stencil.centre

    def apply(self, in_xg: np.ndarray, out_xg: np.ndarray, phase_cd: np.ndarray | None = None) -> None:
        """GPAW's ``apply``: ``out_xg`` = the stencil on ``in_xg``, shape (..., n0, n1, n2).

        ``phase_cd`` (complex only; ignored for float arrays, as GPAW does) is this rank's
        factor for what it sends along axis c towards side d, GPAW's
        ``exp(2 pi i sdisp_cd k_c)``. Collective over ``gd.comm``.
        """
        phases = None
        if phase_cd is not None and self.dtype is complex:
            try:
                phases = self._bloch_phases(phase_cd)
            except Problem as problem:
                self.decomposition._agree(problem, 0, "number of grids G")
        shape = np.shape(in_xg)
        if len(shape) > 4 and isinstance(in_xg, np.ndarray) and isinstance(out_xg, np.ndarray):
            # Leading batch dimensions fold into one G axis (views of GPAW's C-contiguous arrays).
            in_xg = in_xg.reshape(-1, *shape[-3:])
            out_xg = out_xg.reshape(-1, *np.shape(out_xg)[-3:])
        self.hybridfd_operator.apply(in_xg, out_xg, phases)

    def __call__(self, in_xR: Any, out_xR: Any = None) -> Any:
        """GPAW's newer interface: ``UGArray`` in, ``UGArray`` out (a new one if not given)."""
        if out_xR is None:
            out_xR = in_xR.new()
        self.apply(in_xR.data, out_xR.data, in_xR.desc.phase_factor_cd)
        return out_xR

    def _bloch_phases(self, phase_cd: object) -> np.ndarray:
        """GPAW's per-rank sender phases -> hybridfd's per-face receiver phases.

        GPAW multiplies what a rank sends towards side d by its ``phase_cd[c, d]``, which
        is 1 unless the message crosses the periodic boundary; hybridfd multiplies the
        ghosts that cross it. A box at the lower edge receives there what the box at the
        upper edge sent up, times that box's ``exp(-2 pi i k_c)``, the conjugate of its own
        ``phase_cd[c, 0] = exp(2 pi i k_c)``; likewise at the upper edge. One box along
        an axis is its own neighbour and uses its own sender phase directly.
        """
        try:
            sender = np.asarray(phase_cd, dtype=complex)
        except (TypeError, ValueError) as error:
            raise Problem(f"phase_cd must be a (3, 2) complex array: {error}", TypeError) from None
        if sender.shape != (3, 2):
            raise Problem(f"phase_cd must have shape (3, 2), got {sender.shape}")
        phases = np.ones((3, 2), dtype=complex)
        grid = self.decomposition.grid
        for axis in range(3):
            if not self.decomposition.domain.periodic[axis]:
                continue
            edges = (self._at_lower[axis], self._at_upper[axis])
            for side in range(2):
                if not edges[side]:
                    continue
                if grid[axis] == 1:
                    phases[axis, side] = sender[axis, 1 - side]
                    continue
                own = sender[axis, side]
                if not abs(abs(own) - 1) <= _UNIT_TOLERANCE:
                    raise Problem(
                        f"phase_cd[{axis}, {side}] = {own} is not a Bloch phase (modulus {abs(own)}, not 1): the "
                        "phase of the neighbour's message across the boundary cannot be inferred from it"
                    )
                phases[axis, side] = np.conj(own)
        return phases


def from_gpaw(operator: Any, *, approach: str = DEFAULT_APPROACH, **options: Any) -> FDOperator:
    """hybridfd's version of GPAW's ``FDOperator`` (a ``Laplace`` included) ``operator``.

    Keeps GPAW's operator for what hybridfd does not do: ``relax`` (the smoother of GPAW's
    multigrid Poisson solver) and ``operator``, GPAW's C object, which GPAW's C
    preconditioner (``cgpaw.fd_precond``) calls directly.
    """
    if not hasattr(operator, "coef_p") or not hasattr(operator, "offset_pc"):
        raise TypeError(
            f"{type(operator).__name__} is not a finite-difference operator (no coef_p/offset_pc); hybridfd replaces "
            "GPAW's FDOperator and its Laplace (n < 9; n = 9 is GPAW's Fourier-space FTLaplace)"
        )
    result = FDOperator(
        operator.coef_p,
        operator.offset_pc,
        operator.gd,
        operator.dtype,
        operator.description,
        approach=approach,
        **options,
    )
    result.gpaw_operator = operator
    result.operator = operator.operator
    result.relax = operator.relax
    return result


def Laplace(  # noqa: N802 (GPAW's name, so that switching is one import)
    gd: Any, scale: float = 1.0, n: int = 1, dtype: object = float, *, approach: str = DEFAULT_APPROACH, **options: Any
) -> FDOperator:
    """GPAW's ``Laplace(gd, scale, n, dtype)``, applied by hybridfd, on any cell.

    The coefficients and offsets are GPAW's own (its ``Laplace`` is built, then
    converted), so the weights agree to the last bit. ``n`` is 1..6 (``n = 9``, GPAW's
    Fourier-space ``FTLaplace``, raises TypeError). Needs GPAW.
    """
    fd_operators = _gpaw_module("gpaw.fd_operators")
    return from_gpaw(fd_operators.Laplace(gd, scale, n, dtype), approach=approach, **options)


def GUCLaplace(  # noqa: N802 (GPAW's name)
    gd: Any, scale: float = 1.0, n: int = 1, dtype: object = float, *, approach: str = DEFAULT_APPROACH, **options: Any
) -> FDOperator:
    """GPAW's ``GUCLaplace(gd, scale, n, dtype)`` (the Laplacian of any cell), applied by
    hybridfd; GPAW's coefficients and offsets, as :func:`Laplace`. Needs GPAW."""
    fd_operators = _gpaw_module("gpaw.fd_operators")
    return from_gpaw(fd_operators.GUCLaplace(gd, scale, n, dtype), approach=approach, **options)


def Gradient(  # noqa: N802 (GPAW's name)
    gd: Any,
    v: int,
    scale: float = 1.0,
    n: int = 1,
    dtype: object = float,
    *,
    approach: str = DEFAULT_APPROACH,
    **options: Any,
) -> FDOperator:
    """GPAW's ``Gradient(gd, v, scale, n, dtype)``, the derivative along Cartesian axis
    ``v`` (0, 1, 2) on any cell, applied by hybridfd; GPAW's coefficients and offsets.
    ``gd`` is a GridDescriptor or a ``UGDesc``, as in GPAW. On a strongly skewed cell
    GPAW's neighbour directions can step two or more points along an axis; ``n`` times
    that step must stay within 6 points (ValueError naming the offset). Needs GPAW."""
    fd_operators = _gpaw_module("gpaw.fd_operators")
    return from_gpaw(fd_operators.Gradient(gd, v, scale, n, dtype), approach=approach, **options)
