"""Decomposition: process grid, Cartesian communicator and each rank's box.

GPAW journal, Sect. 4: every rank owns the same sub-box of every grid. The automatic
process grid minimises the total surface of the sub-boxes; uneven splits give boxes
that differ by at most one point per axis (the larger ones first). An explicit
:class:`Layout` reproduces a decomposition made elsewhere (GPAW's, for one): any cut
points per axis and any assignment of ranks to boxes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from mpi4py import MPI

from hybridfd import _core
from hybridfd._collective import Problem, agree, agree_on_setting, checked_root
from hybridfd.arrays import empty_aligned
from hybridfd.domain import Domain
from hybridfd.mapping import MappingInfo, Metrics, Topology, stencil_pattern
from hybridfd.mapping.apply import map_ranks


class Box(NamedTuple):
    """A rank's part of every grid: global ``offset`` and ``extent`` per axis."""

    offset: tuple[int, int, int]
    extent: tuple[int, int, int]

    def slices(self) -> tuple[slice, slice, slice]:
        """Index of this box in a global (Nx, Ny, Nz) grid."""
        return tuple(slice(o, o + n) for o, n in zip(self.offset, self.extent, strict=True))


class Layout(NamedTuple):
    """An explicit decomposition.

    ``splits[axis] = (0, s1, ..., N)``: box i along the axis spans ``[splits[i],
    splits[i+1])``, so the process grid is ``(len(splits[0]) - 1, ...)``.
    ``positions[rank]``: the process-grid coordinates of that rank of the communicator;
    None means row-major, rank = (px*Py + py)*Pz + pz (``MPI_Cart_create``'s order,
    and GPAW's).
    """

    splits: tuple[Sequence[int], Sequence[int], Sequence[int]]
    positions: Sequence[Sequence[int]] | None = None


def _layout_lists(layout: object) -> tuple[list[list[int]], list[list[int]]]:
    """The layout as plain int lists for the core, or a Problem naming what is not."""
    if not isinstance(layout, Layout):
        raise Problem(f"layout must be a hybridfd.Layout, got {type(layout).__name__}", TypeError)

    def integers(values: object, name: str, count: int | None = None) -> list[int]:
        if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
            raise Problem(f"layout {name} must be a sequence of integers, got {values!r}")
        if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values):
            raise Problem(f"layout {name} must be integers, got {tuple(values)!r}")
        if count is not None and len(values) != count:
            raise Problem(f"layout {name} must have {count} entries, got {tuple(values)!r}")
        return [int(v) for v in values]

    if isinstance(layout.splits, (str, bytes)) or len(layout.splits) != 3:
        raise Problem(f"layout splits must hold 3 sequences (x, y, z), got {layout.splits!r}")
    splits = [integers(axis_splits, f"splits of axis {axis}") for axis, axis_splits in enumerate(layout.splits)]
    positions = []
    if layout.positions is not None:
        positions = [integers(p, f"position of rank {rank}", 3) for rank, p in enumerate(layout.positions)]
    return splits, positions


def _grid_entries(grid: object) -> tuple[int, int, int]:
    """The process grid as 3 ints for the core (which checks their values), or a Problem."""
    if isinstance(grid, (str, bytes)) or not isinstance(grid, (Sequence, np.ndarray)) or len(grid) != 3:
        raise Problem(f"process grid must have 3 entries (Px, Py, Pz), got {grid!r}")
    if not all(isinstance(p, (int, np.integer)) and not isinstance(p, bool) for p in grid):
        raise Problem(f"process grid must be 3 integers (Px, Py, Pz), got {tuple(grid)!r}", TypeError)
    if not all(-(2**31) <= p < 2**31 for p in grid):
        raise Problem(f"process grid {tuple(int(p) for p in grid)!r} has an entry beyond a C int")
    return tuple(int(p) for p in grid)


def automatic_grid(shape: Sequence[int], ranks: int) -> tuple[int, int, int]:
    """The process grid of ``ranks`` boxes with the smallest total surface (ties: cut x first)."""
    return tuple(_core.automatic_grid(tuple(shape), ranks))


def total_surface(shape: Sequence[int], grid: Sequence[int]) -> int:
    """Total surface, in grid points, of the boxes ``grid`` cuts ``shape`` into."""
    return _core.total_surface(tuple(shape), tuple(grid))


def split_axis(points: int, parts: int, part: int) -> tuple[int, int]:
    """(offset, extent) of part ``part`` when ``points`` are split into ``parts``."""
    return _core.split_axis(points, parts, part)


class Decomposition:
    """Splits ``domain`` over the ranks of ``comm`` (default ``MPI.COMM_WORLD``).

    Collective. ``grid=(Px, Py, Pz)`` fixes the process grid; by default it minimises
    the boxes' total surface, as GPAW does. ``layout`` (a :class:`Layout`) fixes the
    cut points and the rank of each box instead. Bad arguments, or a domain, grid,
    layout or mapping that differs between ranks, raise on every rank, naming the values.

    ``mapping`` names a strategy (:func:`hybridfd.mapping.strategy_names`) that places
    the grid's boxes on the ``topology``'s cores (a :class:`~hybridfd.mapping.Topology`,
    a preset ``host`` (default), ``bluegene-p``, ``cray-xe6``, or a .toml/.json file),
    optimising the halo exchange of this domain; the ranks of ``comm`` are renumbered
    accordingly (results do not change, only which rank holds which box). A topology
    without a mapping means ``packed``. :attr:`mapping` then tells what was done.

    The renumbering (a mapping's, or a layout's ``positions``) is hybridfd's own: the
    ``root`` of :meth:`scatter` and :meth:`gather`, and the ranks named by the errors of
    this decomposition and of the operators on it, are ranks of ``comm``. :attr:`comm`,
    :attr:`rank`, :meth:`coords` and :meth:`box` speak of the renumbered Cartesian
    communicator.
    """

    def __init__(
        self,
        domain: Domain,
        comm: MPI.Comm | None = None,
        grid: Sequence[int] | None = None,
        *,
        layout: Layout | None = None,
        mapping: str | None = None,
        topology: Topology | str | None = None,
    ) -> None:
        comm = MPI.COMM_WORLD if comm is None else comm
        if not isinstance(comm, MPI.Comm):
            # Local: without a communicator there is no one to agree with.
            raise TypeError(f"comm must be an mpi4py.MPI.Comm, got {type(comm).__name__}")
        # What the core cannot see, checked and agreed on every rank before the core's
        # collectives: which of them a rank enters depends on these arguments.
        problem, splits, positions = None, [[0], [0], [0]], []
        try:
            if not isinstance(domain, Domain):
                raise Problem(f"domain must be a hybridfd.Domain, got {type(domain).__name__}", TypeError)
            if grid is not None:
                grid = _grid_entries(grid)
            if layout is not None:
                if grid is not None or mapping is not None or topology is not None:
                    raise Problem(
                        "a layout fixes the process grid and the rank of every box: give no grid, mapping or topology"
                    )
                splits, positions = _layout_lists(layout)
        except Problem as found:
            problem = found
        if layout is not None:
            placement = "a layout"
        elif mapping is None and topology is None:
            placement = "no mapping"
        else:
            placement = f"mapping {mapping or 'packed'!r} on topology {topology!r}"
        agree_on_setting(comm, problem, placement, "layout or mapping")
        self.domain = domain
        if layout is not None:
            self._core = _core.Decomposition(comm, domain.shape, domain.periodic, domain.dtype, splits, positions)
        else:
            # Validates the grid on every rank (and picks it if not given).
            self._core = _core.Decomposition(comm, domain.shape, domain.periodic, domain.dtype, grid)
        #: What the mapping did (strategy, topology, metrics for radius 1 and one grid), or None.
        self.mapping: MappingInfo | None = None
        if mapping is not None or topology is not None:
            self._core, self.mapping = self._mapped(comm, mapping or "packed", topology)
        #: The Cartesian communicator all of hybridfd's messages use.
        self.comm: MPI.Comm = self._core.communicator
        # The rank in ``comm`` of each Cartesian rank, and the other way round.
        self._caller_ranks = tuple(self._core.caller_ranks)
        self._cartesian_rank_of = tuple(np.argsort(self._caller_ranks).tolist())

    def _agree(self, problem: Problem | None, value: int = 0, value_name: str = "") -> None:
        """Collective over :attr:`comm`: :func:`hybridfd._collective.agree`, naming the caller's
        ranks. Over the Cartesian communicator, as the core's agreements run, so a check here
        and the core's meet in the same collectives."""
        agree(self.comm, problem, value, value_name, self._caller_ranks)

    def _agree_on_setting(self, problem: Problem | None, setting: str, setting_name: str) -> None:
        """Collective over :attr:`comm`: :func:`hybridfd._collective.agree_on_setting`, naming the caller's ranks."""
        agree_on_setting(self.comm, problem, setting, setting_name, self._caller_ranks)

    def _mapped(self, comm: MPI.Comm, strategy: str, topology: Topology | str | None) -> tuple:
        domain, grid = self.domain, tuple(self._core.grid)
        # Per grid and radius 1: face bytes scale with radius and grids alike, so the
        # placement that is best for one is best for all (see mapping_metrics).
        pattern = stencil_pattern(domain.shape, grid, domain.periodic, 1, np.dtype(domain.dtype).itemsize)
        info = map_ranks(comm, grid, strategy, topology, pattern=pattern)
        # The mapping as a layout of the same boxes: the core renumbers the ranks of comm
        # itself, so it knows each one's rank in comm and its errors name that.
        positions = [[0, 0, 0]] * comm.size
        for position, rank in enumerate(info.rank_order):
            positions[rank] = [int(c) for c in np.unravel_index(position, grid)]
        splits = [list(axis_splits) for axis_splits in self._core.splits]
        core = _core.Decomposition(comm, domain.shape, domain.periodic, domain.dtype, splits, positions)
        # MPI_Cart_create without reorder keeps ranks: rank p sits at row-major position p.
        if info.rank_order[core.rank] != comm.rank:
            raise RuntimeError(
                f"rank {comm.rank} was mapped to position {info.rank_order.index(comm.rank)} but the "
                f"Cartesian communicator put it at {core.rank}"
            )
        return core, info

    def mapping_metrics(self, radius: int = 1, grids: int = 1) -> Metrics | None:
        """Metrics of this decomposition's placement for a stencil of ``radius`` on ``grids`` grids."""
        if self.mapping is None:
            return None
        domain = self.domain
        pattern = stencil_pattern(
            domain.shape, self.grid, domain.periodic, radius, np.dtype(domain.dtype).itemsize, grids
        )
        return self.mapping.metrics_for(pattern)

    @property
    def grid(self) -> tuple[int, int, int]:
        return tuple(self._core.grid)

    @property
    def splits(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """Where each axis is cut: ``(0, ..., N)`` per axis (see :class:`Layout`)."""
        return tuple(tuple(axis_splits) for axis_splits in self._core.splits)

    @property
    def rank(self) -> int:
        """This process's rank in :attr:`comm` (renumbered by a mapping or a layout's positions)."""
        return self._core.rank

    @property
    def size(self) -> int:
        return self._core.size

    def coords(self, rank: int | None = None) -> tuple[int, int, int]:
        return tuple(self._core.coords(self.rank if rank is None else rank))

    def box(self, rank: int | None = None) -> Box:
        """The box of ``rank`` (default: this rank)."""
        offset, extent = self._core.box(self.rank if rank is None else rank)
        return Box(tuple(offset), tuple(extent))

    def local_shape(self, grids: int | None = None) -> tuple[int, ...]:
        """Shape of this rank's local batch of ``grids`` grids, or of one grid if None."""
        extent = self.box().extent
        return extent if grids is None else (int(grids), *extent)

    def neighbours(self, axis: int) -> tuple[int, int]:
        """(lower, upper) neighbour ranks along ``axis``; ``MPI.PROC_NULL`` at a non-periodic edge."""
        return tuple(self._core.neighbours(axis))

    def zeros(self, grids: int | None = None) -> np.ndarray:
        """A zeroed local batch of this domain's dtype, on a cache line (hybridfd.arrays)."""
        batch = empty_aligned(self.local_shape(grids), self.domain.dtype)
        batch.fill(0)
        return batch

    def scatter(self, global_batch: np.ndarray | None, root: int = 0) -> np.ndarray:
        """Collective: (G, Nx, Ny, Nz) or (Nx, Ny, Nz) on ``root`` -> this rank's box on every rank.

        ``root`` is a rank of the communicator given to the decomposition (not of the
        renumbered :attr:`comm`). Only ``root``'s argument is read; other ranks may pass
        None. The box is a new array on a cache line (hybridfd.arrays).
        """
        comm = self.comm
        root, problem = checked_root(self.size, root)
        header = None
        if problem is None and self._caller_ranks[self.rank] == root:
            try:
                header = self._check_global(global_batch)
            except Problem as found:
                problem = found
        self._agree(problem, root, "root")
        root = self._cartesian_rank_of[root]
        ndim, grids = comm.bcast(header, root=root)
        local_shape = self.local_shape(grids if ndim == 4 else None)
        local = empty_aligned(local_shape, self.domain.dtype)
        if comm.rank != root:
            comm.Recv(local, source=root, tag=0)
            return local
        batch = global_batch if ndim == 4 else global_batch[np.newaxis]
        for rank in range(comm.size):
            part = batch[(slice(None), *self.box(rank).slices())]
            if rank == root:
                local[...] = part.reshape(local_shape)
            else:
                comm.Send(np.ascontiguousarray(part), dest=rank, tag=0)
        return local

    def gather(self, local_batch: np.ndarray, root: int = 0) -> np.ndarray | None:
        """Collective: every rank's box -> the whole (G, Nx, Ny, Nz) or (Nx, Ny, Nz) on ``root``, None elsewhere.

        ``root`` is a rank of the communicator given to the decomposition (not of the
        renumbered :attr:`comm`).
        """
        comm = self.comm
        root, problem = checked_root(self.size, root)
        grids = 0
        if problem is None:
            try:
                grids = self._check_local(local_batch)
            except Problem as found:
                problem = found
        setting = f"root {root}, number of grids G {grids}"
        self._agree_on_setting(problem, setting, "root and number of grids G")
        root = self._cartesian_rank_of[root]
        if comm.rank != root:
            comm.Send(np.ascontiguousarray(local_batch), dest=root, tag=1)
            return None
        ndim = local_batch.ndim
        result = np.empty((grids, *self.domain.shape), dtype=self.domain.dtype)
        for rank in range(comm.size):
            box = self.box(rank)
            if rank == root:
                part = local_batch.reshape(grids, *box.extent)
            else:
                part = np.empty((grids, *box.extent), dtype=self.domain.dtype)
                comm.Recv(part, source=rank, tag=1)
            result[(slice(None), *box.slices())] = part
        return result if ndim == 4 else result[0]

    def _check_global(self, batch: object) -> tuple[int, int]:
        if not isinstance(batch, np.ndarray):
            raise Problem(f"scatter needs a numpy.ndarray on the root rank, got {type(batch).__name__}", TypeError)
        if batch.dtype != self.domain.dtype:
            raise Problem(
                f"scatter: array has dtype {batch.dtype}; the domain's dtype is {self.domain.dtype}", TypeError
            )
        if batch.ndim not in (3, 4) or batch.shape[-3:] != self.domain.shape:
            raise Problem(
                f"scatter: array has shape {batch.shape}; the domain is {self.domain.shape}, so expected "
                f"(G, {', '.join(map(str, self.domain.shape))}) or {self.domain.shape}"
            )
        return batch.ndim, batch.shape[0] if batch.ndim == 4 else 1

    def _check_local(self, batch: object) -> int:
        if not isinstance(batch, np.ndarray):
            raise Problem(f"gather needs a numpy.ndarray, got {type(batch).__name__}", TypeError)
        if batch.dtype != self.domain.dtype:
            raise Problem(
                f"gather: array has dtype {batch.dtype}; the domain's dtype is {self.domain.dtype}", TypeError
            )
        extent = self.box().extent
        if batch.ndim not in (3, 4) or batch.shape[-3:] != extent:
            raise Problem(f"gather: array has shape {batch.shape}; this rank's box is {extent}")
        return batch.shape[0] if batch.ndim == 4 else 1

    def __repr__(self) -> str:
        mapping = "" if self.mapping is None else f", mapping={self.mapping.strategy!r}"
        return f"Decomposition(domain={self.domain}, grid={self.grid}, ranks={self.size}{mapping})"
