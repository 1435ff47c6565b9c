"""Total apply time of a configuration: Fig. 5.2's waiting plus what the paper leaves out.

The paper's formula counts only the waiting for halos that computation does not hide.
An apply also computes every grid, packs and unpacks every halo byte, and, in a
threaded model, synchronises its thread team; :func:`predict` adds those, per schedule
and model, from calibrated machine costs (:class:`Costs`) and the geometry of this
rank's box (:class:`Problem`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hybridfd.perfmodel.formula import batch_sizes, schedule_wait_time


@dataclass(frozen=True)
class Costs:
    """Calibrated costs of one machine (see :mod:`hybridfd.perfmodel.calibrate`).

    ``latency`` l in seconds per exchange; ``bandwidth`` in bytes per second;
    ``compute_per_point`` seconds per stencil point on one core; ``pack_per_byte``
    seconds per halo byte copied once (a face to another rank is copied once, packed
    into its message, which the stencil then reads in place; a face to the rank itself
    costs nothing: its ghosts are the grid's other end, read in place);
    ``sync`` seconds per thread-team synchronisation (one fork and join); ``cores``
    the cores this rank's host has, and ``ranks_per_host`` how many ranks share them;
    ``per_message`` CPU seconds one message costs the rank that posts and completes it
    (each send and each receive counts once): the cost Fig. 5.2 leaves out, which
    grows with the number of batches, not with their bytes, and which computation does
    not hide because the same core pays it.
    """

    latency: float
    bandwidth: float
    compute_per_point: float
    pack_per_byte: float
    sync: float
    cores: int
    ranks_per_host: int
    per_message: float = 0.0

    def __post_init__(self) -> None:
        for name in ("latency", "compute_per_point", "pack_per_byte", "sync", "per_message"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ValueError(f"cost {name} must be a finite number >= 0, got {value!r}")
        if not (isinstance(self.bandwidth, (int, float)) and self.bandwidth > 0):
            raise ValueError(f"bandwidth must be > 0 bytes/s, got {self.bandwidth!r}")
        for name in ("cores", "ranks_per_host"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")


@dataclass(frozen=True)
class Problem:
    """One rank's share of a job: ``grids`` (t), ``points`` per grid of its box, and the
    halo ``bytes_per_grid`` its exchanging faces send (face points x radius x itemsize,
    summed over faces), ``interior_points`` (the box less a shell of the radius),
    ``messages_per_batch``, the sends plus receives one batch's exchange posts (two per
    face whose neighbour is another rank), and ``self_bytes_per_grid``, the part of
    ``bytes_per_grid`` on faces whose neighbour is the rank itself (a periodic axis in
    one box): neither sent nor copied."""

    grids: int
    points: int
    bytes_per_grid: int
    interior_points: int
    messages_per_batch: int = 0
    self_bytes_per_grid: int = 0

    @property
    def remote_bytes_per_grid(self) -> int:
        return self.bytes_per_grid - self.self_bytes_per_grid


def halo_bytes_per_grid(extent: tuple[int, int, int], radius: int, itemsize: int, exchanges: tuple) -> int:
    """Bytes one grid's halo sends: for each axis, each of its two faces that has a
    neighbour (``exchanges[axis]`` = (lower, upper) booleans) sends face points x radius
    x itemsize."""
    nx, ny, nz = extent
    face_points = (ny * nz, nx * nz, nx * ny)
    return sum(face_points[axis] * radius * itemsize * sum(map(bool, exchanges[axis])) for axis in range(3))


def problem_of(decomposition: object, radius: int, grids: int) -> Problem:
    """The :class:`Problem` of this rank in ``decomposition`` (a hybridfd.Decomposition)."""
    from mpi4py import MPI

    extent = decomposition.box().extent
    own = decomposition.comm.Get_rank()
    neighbours = [decomposition.neighbours(axis) for axis in range(3)]
    exchanges = tuple(tuple(rank != MPI.PROC_NULL for rank in pair) for pair in neighbours)
    to_itself = tuple(tuple(rank == own for rank in pair) for pair in neighbours)
    itemsize = np.dtype(decomposition.domain.dtype).itemsize
    interior = math.prod(max(n - 2 * radius, 0) for n in extent)
    return Problem(
        grids=int(grids),
        points=math.prod(extent),
        bytes_per_grid=halo_bytes_per_grid(extent, radius, itemsize, exchanges),
        interior_points=interior,
        # Faces to the rank itself are copied, not sent.
        messages_per_batch=2 * sum(rank not in (MPI.PROC_NULL, own) for pair in neighbours for rank in pair),
        self_bytes_per_grid=halo_bytes_per_grid(extent, radius, itemsize, to_itself),
    )


# What each schedule overlaps (cpp/src/schedules/): serial-dims exchanges x, y, z in turn
# (three latencies, nothing hidden); all-dims exchanges all at once, nothing hidden;
# double-buffered hides batch k+1's exchange behind batch k's computation (Fig. 5.2);
# overlap hides a batch's own exchange behind its interior.
EXCHANGES_PER_BATCH = {"serial-dims": 3, "all-dims": 1, "double-buffered": 1, "overlap": 1}


def predict(
    costs: Costs,
    problem: Problem,
    *,
    model: str,
    schedule: str,
    batch: int,
    slope: int,
    threads: int = 1,
    slope_kind: str = "geometric",
) -> float:
    """Predicted seconds of one apply of ``problem.grids`` grids on this rank.

    Compute rate: a thread runs at one core's speed unless the host's ranks x threads
    exceed its cores, then proportionally slower. Per model: ``flat`` runs the schedule
    over all grids; ``multiple`` gives each of T threads t/T whole grids and its own
    schedule (one team synchronisation per apply); ``masteronly`` and
    ``masteronly-threaded-comm`` split every batch among T threads (one synchronisation
    per batch); ``funneled-overlap`` computes on T-1 threads while thread 0
    communicates. A schedule hybridfd adds later without a model here is predicted as
    ``all-dims`` (nothing hidden), an upper bound.
    """
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    if problem.grids == 0:
        return 0.0
    oversubscription = max(1.0, costs.ranks_per_host * threads / costs.cores)
    per_grid_compute = costs.compute_per_point * problem.points * oversubscription
    grids = problem.grids
    syncs = 0
    if model == "flat":
        workers = 1
    elif model == "multiple":
        # Each thread runs the schedule on its share; the slowest holds ceil(t/T) grids.
        grids = math.ceil(problem.grids / threads)
        workers, syncs = 1, 1
    elif model == "funneled-overlap":
        workers = max(threads - 1, 1)
    else:  # masteronly, masteronly-threaded-comm: every grid split among the team
        workers = threads
    per_grid_compute /= workers
    sizes = batch_sizes(grids, batch, slope, slope_kind)
    if model not in ("flat", "multiple"):
        syncs = len(sizes)
    # Bandwidth in grids per second, as Fig. 5.2 counts it.
    remote = problem.remote_bytes_per_grid
    grids_per_second = math.inf if remote == 0 else costs.bandwidth / remote
    exchanges = EXCHANGES_PER_BATCH.get(schedule, 1)
    # A box with no neighbour but itself (one rank) sends no message at all.
    latency = costs.latency if remote else 0.0
    if schedule == "double-buffered":
        waiting = schedule_wait_time(latency, grids_per_second, per_grid_compute, sizes)
    elif schedule == "overlap":
        interior_share = problem.interior_points / problem.points
        waiting = sum(max(0.0, latency + s / grids_per_second - per_grid_compute * interior_share * s) for s in sizes)
    else:
        waiting = sum(exchanges * latency + s / grids_per_second for s in sizes)
    packing = costs.pack_per_byte * remote * grids
    messaging = costs.per_message * problem.messages_per_batch * len(sizes)
    return waiting + per_grid_compute * grids + packing + messaging + costs.sync * syncs
