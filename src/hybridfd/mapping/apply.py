"""Applying a mapping: a communicator whose rank p is the process placed at grid position p.

MPICH and Open MPI ignore ``MPI_Cart_create``'s ``reorder`` flag, so hybridfd renumbers
the ranks itself, as the CP2K seed does (Sect. 4: "as an output we provide ... a new
communicator that has a different ordering for the MPI processes"): every rank learns
the position it was mapped to and ``MPI_Comm_split`` with that position as its key makes
the new communicator. A Cartesian communicator built on it with ``reorder = 0`` then
puts rank p at row-major position p, where the mapping wanted it. No data moves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from mpi4py import MPI

from hybridfd._collective import Problem, agree
from hybridfd.mapping.metrics import Metrics, evaluate
from hybridfd.mapping.patterns import CommPattern, cannon_pattern, neighbour_pattern
from hybridfd.mapping.strategies import Mapping, check_strategy, compute_mapping
from hybridfd.mapping.topology import Topology, resolve


@dataclass(frozen=True)
class MappingInfo:
    """What a reordering did: the strategy's mapping and the ranks it moved.

    ``rank_order[p]`` is the rank, in the communicator that was reordered, of the
    process now at grid position p (the new communicator's rank p).
    """

    mapping: Mapping
    rank_order: tuple[int, ...]

    @property
    def strategy(self) -> str:
        return self.mapping.strategy

    @property
    def topology(self) -> Topology:
        return self.mapping.topology

    @property
    def reordered(self) -> bool:
        return self.rank_order != tuple(range(len(self.rank_order)))

    @property
    def metrics(self) -> Metrics:
        return self.mapping.metrics

    def metrics_for(self, pattern: CommPattern) -> Metrics:
        """Metrics of this placement for another pattern on the same grid (e.g. a larger radius)."""
        if tuple(pattern.grid) != tuple(self.mapping.pattern.grid):
            raise ValueError(f"pattern grid {pattern.grid} differs from the mapped grid {self.mapping.pattern.grid}")
        return evaluate(pattern, self.topology, self.mapping.slots)

    def as_dict(self, metrics: Metrics | None = None) -> dict:
        """Strategy, topology, whether ranks moved, the strategy's choices and the metrics, for printing."""
        metrics = self.metrics if metrics is None else metrics
        return {
            "strategy": self.strategy,
            "topology": self.topology.describe(),
            "pattern": self.mapping.pattern.name,
            "reordered": self.reordered,
            **{k: v for k, v in self.mapping.details.items() if k in ("direction_order", "kept")},
            **metrics.as_dict(),
        }


def reorder_communicator(
    comm: MPI.Comm,
    grid: Sequence[int],
    strategy: str = "packed",
    topology: Topology | str | Path | None = None,
    *,
    pattern: CommPattern | None = None,
) -> tuple[MPI.Comm, MappingInfo]:
    """Collective: a new communicator in which rank p is the process mapped to grid position p.

    ``grid`` is the process grid (2 or 3 axes, product = ``comm.size``); ``topology`` a
    :class:`Topology`, a preset name (``host``, the default; ``bluegene-p``, ``cray-xe6``)
    or a ``.toml``/``.json`` file; ``pattern`` the communication to optimise (default:
    Cannon's shifts for a 2D grid, one byte to each face neighbour for 3D). Bad
    arguments raise ValueError on every rank before anything is sent. The caller frees
    the returned communicator.
    """
    info = map_ranks(comm, grid, strategy, topology, pattern=pattern)
    position = np.empty(len(info.rank_order), dtype=int)
    position[list(info.rank_order)] = np.arange(position.size)
    return comm.Split(0, int(position[comm.rank])), info


def map_ranks(
    comm: MPI.Comm,
    grid: Sequence[int],
    strategy: str = "packed",
    topology: Topology | str | Path | None = None,
    *,
    pattern: CommPattern | None = None,
) -> MappingInfo:
    """Collective: where ``strategy`` places each rank of ``comm`` (see :func:`reorder_communicator`,
    which takes the same arguments), without making a communicator."""
    problem = None
    resolved: Topology | str | None = None
    try:
        check_strategy(strategy)
        grid = tuple(int(p) for p in grid)
        if pattern is None:
            pattern = cannon_pattern(grid) if len(grid) == 2 else neighbour_pattern(grid)
        elif tuple(pattern.grid) != grid:
            raise ValueError(f"pattern grid {pattern.grid} differs from process grid {grid}")
        if pattern.processes != comm.size:
            raise ValueError(
                f"process grid {grid} has {pattern.processes} processes but the communicator has {comm.size} ranks"
            )
        resolved = resolve(topology, comm.size)
        if isinstance(resolved, Topology):
            resolved.occupied_slots(comm.size)
    except (ValueError, TypeError) as error:
        problem = Problem(str(error), type(error))
    agree(comm, problem)
    if resolved == "host":
        resolved = Topology.host(comm)
    # One rank computes and broadcasts: the strategies are deterministic (METIS has a
    # fixed seed), but one broadcast of P integers guarantees every rank agrees.
    outcome: tuple[np.ndarray, dict] | str | None = None
    if comm.rank == 0:
        try:
            found = compute_mapping(strategy, pattern, resolved)
            outcome = (found.slots, found.details)
        except Exception as error:  # any failure is re-raised on every rank below
            outcome = f"{type(error).__name__}: {error}"
    outcome = comm.bcast(outcome, root=0)
    if isinstance(outcome, str):
        raise RuntimeError(f"mapping strategy {strategy!r} failed on rank 0: {outcome}")
    mapping = Mapping(strategy, pattern, resolved, *outcome)
    return MappingInfo(mapping, tuple(int(r) for r in mapping.rank_of_position()))
