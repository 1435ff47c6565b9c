"""Particles: the MiniMD Lennard-Jones mini-app of the MPI+OpenSHMEM slides.

The standard LJ melt (FCC lattice, reduced units) with MiniMD's loop: atoms migrate to
their owner every ``reneighbor_every`` steps, ghost atoms of the neighbours' boundary
regions are refreshed every step, forces come from a full neighbour list. The particle
messages vary in size every step and go through the transports' particle exchange
(``p2p``: MiniMD's two-sided MPI; ``rma-fence``: the slides' Hybrid-Barrier;
``rma-notify``: their Hybrid-Advanced, a cyclic buffer per neighbour). Every step runs in
C++ (``hybridfd._core.LennardJones``); this module builds the initial state and checks
arguments. Trajectories are bit-identical on any rank count and transport
(docs/design.md, "Particles").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from mpi4py import MPI

from hybridfd import _core
from hybridfd._collective import Problem, agree

__all__ = ["LennardJones", "State", "initial_state", "particle_transport_names"]

# The FCC unit cell's four atoms, in units of the lattice constant.
_FCC_BASIS = np.array([[0.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.5, 0.0, 0.5], [0.0, 0.5, 0.5]])


class State(NamedTuple):
    """All atoms: ``box`` (3,) lengths of the periodic box [0, L); ``positions`` and
    ``velocities`` (N, 3) float64; ``tags`` (N,) int64 atom ids."""

    box: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray
    tags: np.ndarray


def particle_transport_names() -> list[str]:
    """The transports that move particles (the others move grid faces only)."""
    return list(_core.particle_transport_names())


def _cells(cells: int | Sequence[int]) -> tuple[int, int, int]:
    values = (cells,) * 3 if isinstance(cells, (int, np.integer)) else tuple(cells)
    if len(values) != 3 or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values):
        raise ValueError(f"cells must be an integer or 3 integers, got {cells!r}")
    if min(values) < 1:
        raise ValueError(f"cells must be at least 1 along every axis, got {cells!r}")
    return tuple(int(v) for v in values)


def initial_state(
    cells: int | Sequence[int] = (20, 20, 20),
    density: float = 0.8442,
    temperature: float = 1.44,
    seed: int = 87287,
) -> State:
    """The LJ melt's start, the same on every rank and for every rank count.

    An FCC lattice of ``cells`` unit cells (4 atoms each) at reduced ``density``, box
    ``[0, L)`` with ``L = cells * (4 / density) ** (1/3)``, tags 1..N in lattice order
    (x slowest, then y, z, then the basis atom). Velocities uniform in [-1/2, 1/2) from
    ``numpy.random.default_rng(seed)``, total momentum removed, scaled to exactly
    ``temperature`` (LAMMPS's definition: 3N - 3 degrees of freedom, mass 1, kB 1).
    Local (no MPI): every rank raises the same ValueError for bad values.
    """
    counts = _cells(cells)
    if not isinstance(density, (int, float)) or not math.isfinite(density) or density <= 0:
        raise ValueError(f"density must be positive and finite, got {density!r}")
    if not isinstance(temperature, (int, float)) or not math.isfinite(temperature) or temperature < 0:
        raise ValueError(f"temperature must be non-negative and finite, got {temperature!r}")
    lattice = (4.0 / density) ** (1.0 / 3.0)
    corners = np.indices(counts, dtype=np.float64).reshape(3, -1).T
    positions = ((corners[:, None, :] + _FCC_BASIS[None, :, :]) * lattice).reshape(-1, 3)
    atoms = len(positions)
    velocities = np.random.default_rng(seed).uniform(-0.5, 0.5, (atoms, 3))
    velocities -= velocities.mean(axis=0)
    current = float(np.sum(velocities * velocities)) / (3 * atoms - 3) if atoms > 1 else 0.0
    velocities *= math.sqrt(temperature / current) if current > 0 else 0.0
    box = np.array(counts, dtype=np.float64) * lattice
    return State(box, positions, velocities, np.arange(1, atoms + 1, dtype=np.int64))


def _state_arrays(state: object) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The state's arrays as the core takes them, or a Problem naming what is wrong."""
    try:
        box, positions, velocities, tags = (state.box, state.positions, state.velocities, state.tags)
    except AttributeError:
        raise Problem(
            f"state must be a hybridfd.particles.State (box, positions, velocities, tags), got {type(state).__name__}",
            TypeError,
        ) from None
    try:
        box = np.ascontiguousarray(box, dtype=np.float64)
        positions = np.ascontiguousarray(positions, dtype=np.float64)
        velocities = np.ascontiguousarray(velocities, dtype=np.float64)
        tags = np.asarray(tags)
    except (TypeError, ValueError) as error:
        raise Problem(f"state arrays must be numeric: {error}", TypeError) from None
    if box.shape != (3,):
        raise Problem(f"state.box must hold 3 lengths, got shape {box.shape}")
    if tags.ndim != 1 or not np.issubdtype(tags.dtype, np.integer):
        raise Problem(f"state.tags must be a 1-d integer array, got shape {tags.shape} of {tags.dtype}")
    for name, array in (("positions", positions), ("velocities", velocities)):
        if array.shape != (len(tags), 3):
            raise Problem(f"state.{name} must have shape ({len(tags)}, 3) (one row per tag), got {array.shape}")
    return box, positions, velocities, np.ascontiguousarray(tags, dtype=np.int64)


class LennardJones:
    """The LJ mini-app on ``comm`` (collective).

    ``cutoff`` of the pair force, ``skin`` added for the neighbour lists, timestep
    ``dt``; atoms migrate and neighbour lists are rebuilt every ``reneighbor_every``
    steps (LAMMPS ``neigh_modify every 20 delay 0 check no``). ``transport``: one of
    :func:`particle_transport_names`. ``grid``: a (Px, Py, Pz) process grid, default the
    one of least surface (as :class:`hybridfd.Decomposition`); every rank's region must
    be at least ``cutoff + skin`` thick. Bad input raises the same ValueError/TypeError
    on every rank before any message.
    """

    def __init__(
        self,
        comm: MPI.Comm,
        state: State,
        cutoff: float = 2.5,
        skin: float = 0.3,
        dt: float = 0.005,
        reneighbor_every: int = 20,
        transport: str = "p2p",
        grid: Sequence[int] | None = None,
    ) -> None:
        problem = None
        try:
            arrays = _state_arrays(state)
            if not isinstance(transport, str):
                raise Problem(f"transport must be a name (str), got {transport!r}", TypeError)
            if grid is not None and (
                len(grid) != 3
                or not all(
                    isinstance(p, (int, np.integer)) and not isinstance(p, bool) and abs(p) < 2**31 for p in grid
                )
            ):
                raise Problem(f"grid must be 3 integers (Px, Py, Pz) of C int range, got {grid!r}", TypeError)
            if (
                not isinstance(reneighbor_every, (int, np.integer))
                or isinstance(reneighbor_every, bool)
                or abs(reneighbor_every) >= 2**31
            ):
                raise Problem(
                    f"reneighbor_every must be an integer of C int range, got {reneighbor_every!r}", TypeError
                )
            # Converted here, where a rank that fails meets the others' agreement.
            numbers = {"cutoff": cutoff, "skin": skin, "dt": dt}
            for name, value in numbers.items():
                if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
                    raise Problem(f"{name} must be a number, got {value!r}", TypeError)
        except Problem as found:
            problem = found
        agree(comm, problem)
        box, positions, velocities, tags = arrays
        self._box = box
        self._comm = comm
        self._core = _core.LennardJones(
            comm,
            tuple(box),
            positions.ravel(),
            velocities.ravel(),
            tags,
            float(cutoff),
            float(skin),
            float(dt),
            int(reneighbor_every),
            transport,
            None if grid is None else tuple(int(p) for p in grid),
        )
        self.transport = transport

    def run(self, steps: int, thermo_every: int = 0, census: bool = False) -> list[dict]:
        """Runs ``steps`` steps (collective, all in C++). Returns thermo records (dicts
        with ``step``, ``temperature``, ``potential_energy``, ``pressure``,
        ``total_energy``; LAMMPS ``lj`` units, energies per atom) at the starting step,
        every multiple of ``thermo_every`` (0: none between) and the last step. With
        ``census``, the global atom count and tag sum are recorded after every step
        (:attr:`census`)."""
        problem = None
        for name, value in (("steps", steps), ("thermo_every", thermo_every)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or abs(value) >= 2**63:
                problem = problem or Problem(f"{name} must be a 64-bit integer, got {value!r}", TypeError)
        # On every rank (one small allreduce per run, not per step): a value the core
        # cannot be given must not leave the other ranks in the core's collectives.
        agree(self._comm, problem)
        return self._core.run(int(steps), int(thermo_every), bool(census))

    def gather(self) -> State:
        """Every atom on every rank (collective), sorted by tag. Positions are as
        integrated: wrapped into the box only at migration steps."""
        tags, positions, velocities = self._core.gather()
        return State(self._box.copy(), positions, velocities, tags)

    @property
    def step(self) -> int:
        return self._core.step

    @property
    def atoms(self) -> int:
        return self._core.atoms

    @property
    def grid(self) -> tuple[int, int, int]:
        return tuple(self._core.grid)

    @property
    def owned_atoms(self) -> int:
        """Atoms this rank owns now."""
        return self._core.owned_atoms

    @property
    def ghost_atoms(self) -> int:
        return self._core.ghost_atoms

    @property
    def neighbour_pairs(self) -> int:
        """Entries of this rank's (full) neighbour lists."""
        return self._core.neighbour_pairs

    @property
    def largest_border_message(self) -> int:
        """Float64 values of this rank's largest message of the last border exchange."""
        return self._core.largest_border_message

    @property
    def migration_hops(self) -> tuple[int, int, int]:
        """The most regions any atom crossed per axis before the last migration (the
        same on every rank)."""
        return tuple(self._core.migration_hops)

    @property
    def census(self) -> list[tuple[int, int, int]]:
        """(step, atoms, sum of tags) over all ranks at the start and after every step of
        the last run with ``census=True``."""
        return self._core.census

    @property
    def times(self) -> dict:
        """This rank's seconds since the last :meth:`reset_times`: ``total`` (of the
        steps), ``communication`` (migration, borders, ghost refresh), ``force``,
        ``neighbour`` (list builds), ``thermo``; and ``steps``."""
        return self._core.times

    def reset_times(self) -> None:
        self._core.reset_times()
