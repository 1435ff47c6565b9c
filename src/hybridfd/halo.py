"""Halo: the halo exchange on its own, under your own kernel.

What GHEX's exchange objects, AMReX's ``FillBoundary_nowait``/``_finish`` and PETSc's
``DMGlobalToLocalBegin``/``End`` offer, with the papers' techniques: a :class:`Halo`
takes the same approach and options as an :class:`~hybridfd.Operator` (batching, slope,
double buffering, threading model, transport), and fills the ghost layers of batches of
padded grids, shape (G, nx+2wx, ny+2wy, nz+2wz), whose interior ``[w, w+n)`` holds the
rank's box. Ghosts come from the neighbours, from the grid's own other end along a
periodic axis of one box (times the Bloch phases where they cross the domain's periodic
boundary), and are zero beyond a non-periodic edge. With ``corners`` the edge and
corner blocks are filled too, each straight from the neighbour that owns it.

Three ways to run it: :meth:`Halo.exchange` fills every ghost; :meth:`Halo.start` returns
a handle whose ``finish()`` completes it (split phase: compute what needs no ghost in
between); :meth:`Halo.pipeline` calls ``compute(first, last)`` for each batch of grids as
soon as that batch's ghosts are in, so the batch's compute overlaps the next batches'
messages (double-buffered schedules keep them in flight).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from hybridfd import _core
from hybridfd._collective import Problem
from hybridfd.arrays import placed_flat
from hybridfd.decomposition import Decomposition
from hybridfd.operator import _option_problem, _phase_pairs
from hybridfd.stencil import Stencil


class Halo:
    """``halo.exchange(a)`` fills the ghost layers of this rank's padded grids ``a``.

    Collective, like every exchange. ``widths`` are the ghost layers per axis (0..6, an
    axis of width 0 exchanges nothing); ``corners`` adds the edge and corner blocks (what a
    stencil reaching along diagonals reads; without them the six faces are filled and the
    padded grids' edges and corners are left as they are). ``approach`` and the keywords
    are those of :class:`~hybridfd.Operator` (``approach="auto"`` excepted); the default is
    ``flat-optimized`` (all directions at once, batched, double buffered), which an
    exchange on its own wants more than the papers' baseline. Bad input raises on every
    rank, naming the value, before any message is sent.
    """

    def __init__(
        self,
        decomposition: Decomposition,
        widths: Sequence[int] = (1, 1, 1),
        corners: bool = True,
        approach: str = "flat-optimized",
        *,
        model: str | None = None,
        threads: int | None = None,
        master_share: float | None = None,
        schedule: str | None = None,
        transport: str | None = None,
        batch: int | None = None,
        slope: int | None = None,
        slope_kind: str | None = None,
        progress: int | None = None,
        _stencil: Stencil | None = None,
    ) -> None:
        if not isinstance(decomposition, Decomposition):
            raise TypeError(f"decomposition must be a hybridfd.Decomposition, got {type(decomposition).__name__}")
        problem = _option_problem(
            _stencil if _stencil is not None else Stencil.laplace(1),
            approach,
            {"model": model, "schedule": schedule, "transport": transport, "slope_kind": slope_kind},
            {"threads": threads, "batch": batch, "slope": slope, "progress": progress},
            master_share,
        )
        if problem is None and approach == "auto":
            problem = Problem("a Halo takes a named approach; approach='auto' tunes an Operator's stencil")
        if problem is None and _stencil is None:
            problem = _widths_problem(widths, corners)
        if problem is not None:
            decomposition._agree(problem)
        self.decomposition = decomposition
        self._core = _core.Halo(
            decomposition._core,
            None if _stencil is not None else tuple(int(w) for w in widths),
            bool(corners),
            None if _stencil is None else _stencil._core,
            approach,
            model or "",
            threads,
            master_share,
            schedule or "",
            transport or "",
            batch,
            slope,
            slope_kind or "",
            progress,
        )

    @classmethod
    def for_stencil(
        cls, decomposition: Decomposition, stencil: Stencil, approach: str = "flat-optimized", **options: object
    ) -> Halo:
        """The halo ``stencil`` reads: its :attr:`~hybridfd.Stencil.widths`, and the edge and
        corner blocks its diagonal offsets point to (a star stencil: the six faces)."""
        if not isinstance(stencil, Stencil):
            decomposition._agree(
                Problem(f"stencil must be a hybridfd.Stencil, got {type(stencil).__name__}", TypeError)
            )
        return cls(decomposition, approach=approach, _stencil=stencil, **options)  # type: ignore[arg-type]

    @property
    def widths(self) -> tuple[int, int, int]:
        return tuple(self._core.widths)

    @property
    def padded_shape(self) -> tuple[int, int, int]:
        """One padded grid's shape on this rank: its box plus twice the widths."""
        return tuple(self._core.padded_extent)

    @property
    def config(self) -> dict:
        """The resolved configuration, as :attr:`hybridfd.Operator.config`."""
        return self._core.config

    @property
    def messages(self) -> list[tuple[tuple[int, int, int], int, int]]:
        """Per direction exchanged: (direction, neighbour rank or -1 for none or
        MPI_PROC_NULL, float64 lanes per grid); a direction whose neighbour is this rank
        moves no message."""
        return [(tuple(direction), neighbour, lanes) for direction, neighbour, lanes in self._core.messages]

    def empty(self, grids: int | None = None) -> np.ndarray:
        """Zeroed padded grids for this rank, (G, ...) or one grid for ``grids=None``,
        C-contiguous, the first grid's interior starting on a 64-byte cache line."""
        shape = self.padded_shape
        if grids is not None and (isinstance(grids, bool) or not isinstance(grids, (int, np.integer)) or grids < 0):
            raise ValueError(f"grids must be a non-negative int or None, got {grids!r}")
        dtype = np.dtype(self.decomposition.domain.dtype)
        w = self.widths
        interior = ((w[0] * shape[1] + w[1]) * shape[2] + w[2]) * dtype.itemsize
        count = 1 if grids is None else int(grids)
        flat = placed_flat(count * int(np.prod(shape)) * dtype.itemsize, dtype, first=interior)
        flat[...] = 0
        batch = flat.reshape((count, *shape))
        return batch[0] if grids is None else batch

    def interior(self, padded: np.ndarray) -> np.ndarray:
        """The view of ``padded`` that holds the rank's box (the points an exchange sends)."""
        w = self.widths
        return padded[
            ..., w[0] : padded.shape[-3] - w[0], w[1] : padded.shape[-2] - w[1], w[2] : padded.shape[-1] - w[2]
        ]

    def exchange(self, a: np.ndarray, phases: np.ndarray | None = None) -> np.ndarray:
        """Fill every ghost layer of ``a``; returns ``a``. ``phases`` as for
        :meth:`hybridfd.Operator.apply` (complex128 domains only)."""
        core_phases = self._checked(a, phases)
        self._core.exchange(a, a.flags.writeable, core_phases)
        return a

    def start(self, a: np.ndarray, phases: np.ndarray | None = None) -> HaloHandle:
        """Post the messages of every grid of ``a`` at once and return; the handle's
        ``finish()`` waits for them and fills the ghosts. Until then ``a`` must stay
        unchanged; a second start, an exchange or a pipeline before it raise."""
        core_phases = self._checked(a, phases)
        self._core.start(a, a.flags.writeable, core_phases)
        return HaloHandle(self, a)

    def pipeline(
        self, a: np.ndarray, compute: Callable[[int, int], object], phases: np.ndarray | None = None
    ) -> np.ndarray:
        """Fill the ghosts batch by batch and call ``compute(first, last)`` for the grids
        ``a[first:last]`` as soon as their ghosts are in (under the multiple model, from
        each thread for its share of the grids); returns ``a``. If ``compute`` raises on
        some rank, the exchange still runs to its end there (later computes skipped), so
        no rank waits for messages never sent; then that rank raises its exception and
        the others a ValueError naming it."""
        problem = None if callable(compute) else Problem(f"compute must be callable, got {compute!r}", TypeError)
        core_phases = self._checked(a, phases, problem)
        self._core.pipeline(a, a.flags.writeable, compute, core_phases)
        return a

    def _checked(self, a: object, phases: object, problem: Problem | None = None) -> tuple | None:
        """What the core could not even be given, agreed by every rank; the core checks
        the rest (shape, dtype, contiguity, a start not finished)."""
        if problem is None and not isinstance(a, np.ndarray):
            problem = Problem(f"padded array must be a numpy.ndarray, got {type(a).__name__}", TypeError)
        core_phases = None
        if problem is None and phases is not None:
            try:
                core_phases = _phase_pairs(phases)
            except Problem as found:
                problem = found
        if problem is not None:
            self.decomposition._agree(problem, 0, "number of grids G")
        return core_phases


class HaloHandle:
    """A started exchange (:meth:`Halo.start`); ``finish()`` completes it. Collective."""

    def __init__(self, halo: Halo, array: np.ndarray) -> None:
        self._halo = halo
        self._array = array  # kept alive while messages read and write it

    def finish(self) -> np.ndarray:
        """Wait for the messages and fill the ghosts; returns the padded array."""
        self._halo._core.finish()
        return self._array


def _widths_problem(widths: object, corners: object) -> Problem | None:
    if not isinstance(corners, (bool, np.bool_)):
        return Problem(f"corners must be a bool, got {corners!r}", TypeError)
    if (
        not isinstance(widths, (tuple, list))
        or len(widths) != 3
        or not all(isinstance(w, (int, np.integer)) and not isinstance(w, bool) for w in widths)
    ):
        return Problem(f"widths must be three ints (wx, wy, wz), got {widths!r}", TypeError)
    return None
