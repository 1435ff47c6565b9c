"""Total apply time of a configuration: Fig. 5.2's waiting plus what the paper leaves out.

The paper's formula counts only the waiting for halos that computation does not hide.
An apply also computes every grid, packs and unpacks every halo byte, and, in a
threaded model, synchronises its thread team; :func:`predict` adds those, per schedule
and model, from calibrated machine costs (:class:`Costs`) and the geometry of this
rank's box (:class:`Problem`).
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from hybridfd import traits
from hybridfd.perfmodel.formula import batch_runs


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
    not hide because the same core pays it; ``hidden_share`` the share of a message's
    transfer that moves while the rank computes without calling MPI (1: the network
    progresses it by itself, as Fig. 5.2 assumes; 0: the MPI library moves it only inside
    its calls, so an overlapping schedule without progress tests pays it in its wait).

    Two costs are the tuner's, not the model's (:class:`hybridfd.tune.Budget` charges
    them to each trial it considers): ``tuner_round`` rank 0's seconds for one round of
    a race's collectives (a timed chunk's barrier, the reduction of the chunk times, the
    broadcast of the decision), and ``tuner_operator`` the seconds to build and free one
    entrant's Operator. Both 0 where a calibration file predates them; the tuner then
    counts only what it measures itself.
    """

    latency: float
    bandwidth: float
    compute_per_point: float
    pack_per_byte: float
    sync: float
    cores: int
    ranks_per_host: int
    per_message: float = 0.0
    hidden_share: float = 1.0
    tuner_round: float = 0.0
    tuner_operator: float = 0.0

    def __post_init__(self) -> None:
        names = (
            "latency",
            "compute_per_point",
            "pack_per_byte",
            "sync",
            "per_message",
            "tuner_round",
            "tuner_operator",
        )
        for name in names:
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ValueError(f"cost {name} must be a finite number >= 0, got {value!r}")
        if not (isinstance(self.hidden_share, (int, float)) and 0 <= self.hidden_share <= 1):
            raise ValueError(f"hidden_share must be a number in [0, 1], got {self.hidden_share!r}")
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
    summed over faces), ``interior_points`` (the box less a shell of the radius along
    every axis that sends to another rank: the ``overlap`` schedule's interior),
    ``messages_per_batch``, the sends plus receives one batch's exchange posts (two per
    face whose neighbour is another rank), ``self_bytes_per_grid``, the part of
    ``bytes_per_grid`` on faces whose neighbour is the rank itself (a periodic axis in
    one box): neither sent nor copied; for the ``overlap-xy`` schedule, which waits for
    the z faces before its interior, ``z_bytes_per_grid``, the part of
    ``bytes_per_grid`` that z faces send to other ranks, and ``interior_points_xy``, the
    box less its x and y shells (0: no such interior)."""

    grids: int
    points: int
    bytes_per_grid: int
    interior_points: int
    messages_per_batch: int = 0
    self_bytes_per_grid: int = 0
    z_bytes_per_grid: int = 0
    interior_points_xy: int = 0

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


def _box_problem(extent: tuple, radius: int, itemsize: int, exchanges: tuple, to_itself: tuple, grids: int) -> Problem:
    """The :class:`Problem` of a box of ``extent`` whose faces exchange where
    ``exchanges[axis]`` (lower, upper) says so, with the rank itself where ``to_itself``
    does."""
    # Faces to the rank itself are copied, not sent.
    sends = tuple(
        tuple(exchange and not itself for exchange, itself in zip(exchanges[axis], to_itself[axis], strict=True))
        for axis in range(3)
    )
    # The overlap schedules cut their interior only along the axes that send to another
    # rank (cpp/src/schedules/overlap.cpp), overlap-xy never along z.
    cut = tuple(any(axis) for axis in sends)

    def interior_points(axes_cut: tuple[bool, ...]) -> int:
        return math.prod(max(n - 2 * radius, 0) if c else n for n, c in zip(extent, axes_cut, strict=True))

    return Problem(
        grids=int(grids),
        points=math.prod(extent),
        bytes_per_grid=halo_bytes_per_grid(extent, radius, itemsize, exchanges),
        interior_points=interior_points(cut),
        messages_per_batch=2 * sum(sum(axis) for axis in sends),
        self_bytes_per_grid=halo_bytes_per_grid(extent, radius, itemsize, to_itself),
        z_bytes_per_grid=halo_bytes_per_grid(extent, radius, itemsize, ((False, False), (False, False), sends[2])),
        interior_points_xy=interior_points((*cut[:2], False)),
    )


def problem_of(decomposition: object, radius: int, grids: int) -> Problem:
    """The :class:`Problem` of this rank in ``decomposition`` (a hybridfd.Decomposition)."""
    from mpi4py import MPI

    own = decomposition.comm.Get_rank()
    neighbours = [decomposition.neighbours(axis) for axis in range(3)]
    exchanges = tuple(tuple(rank != MPI.PROC_NULL for rank in pair) for pair in neighbours)
    to_itself = tuple(tuple(rank == own for rank in pair) for pair in neighbours)
    itemsize = np.dtype(decomposition.domain.dtype).itemsize
    return _box_problem(decomposition.box().extent, radius, itemsize, exchanges, to_itself, grids)


def slowest_problem(decomposition: object, radius: int, grids: int) -> Problem:
    """The :class:`Problem` of the rank that sets a collective apply's pace: the most
    points, then the most halo bytes, then messages (the :func:`problem_of` of some rank).

    Local, no message: a box's extent and which of its faces exchange, and whether with
    the rank itself, depend on its position along each axis alone (the cuts, the
    process grid and the periodicity), so the boxes' problems are those of the
    combinations of each axis' kinds of position, a handful whatever the rank count.
    """
    grid, periodic, splits = decomposition.grid, decomposition.domain.periodic, decomposition.splits
    kinds = [
        {
            (splits[axis][c + 1] - splits[axis][c], periodic[axis] or c > 0, periodic[axis] or c < grid[axis] - 1)
            for c in range(grid[axis])
        }
        for axis in range(3)
    ]
    # A periodic axis of one box: both faces are the rank's own other end.
    to_itself = tuple((periodic[axis] and grid[axis] == 1,) * 2 for axis in range(3))
    itemsize = np.dtype(decomposition.domain.dtype).itemsize
    problems = (
        _box_problem(
            tuple(kind[0] for kind in combination),
            radius,
            itemsize,
            tuple(kind[1:] for kind in combination),
            to_itself,
            grids,
        )
        for combination in itertools.product(*(sorted(k) for k in kinds))
    )
    return max(problems, key=lambda p: (p.points, p.bytes_per_grid, p.messages_per_batch))


# What each schedule overlaps, as its registry line declares (hybridfd.traits): serial-dims
# exchanges x, y, z in turn (three latencies, nothing hidden); all-dims exchanges all at
# once, nothing hidden; double-buffered hides batch k+1's exchange behind batch k's
# computation (Fig. 5.2); overlap hides a batch's own exchange behind its interior;
# overlap-xy only its x and y faces', behind an interior of whole rows, the z faces
# waited for first.
EXCHANGES_PER_BATCH = traits.exchanges_per_batch()


@dataclass(frozen=True)
class Settings:
    """Settings to predict, as columns with one row each (model, schedule, batch, slope,
    threads; one slope kind for all): what :func:`predict_all` evaluates at once. The
    tuner ranks its whole candidate pool as one :class:`Settings`; :func:`predict` is one
    row of it."""

    model: tuple[str, ...]
    schedule: tuple[str, ...]
    batch: tuple[int, ...]
    slope: tuple[int, ...]
    threads: tuple[int, ...]
    slope_kind: str = "geometric"

    def __post_init__(self) -> None:
        columns = ("model", "schedule", "batch", "slope", "threads")
        for name in columns:  # tuples, so that a Settings is hashable (its batches are cached)
            object.__setattr__(self, name, tuple(getattr(self, name)))
        lengths = {len(getattr(self, name)) for name in columns}
        if len(lengths) != 1:
            raise ValueError(f"settings' columns must have one length, got lengths {sorted(lengths)}")
        for t in self.threads:
            if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or t < 1:
                raise ValueError(f"threads must be at least 1, got {t!r}")


class _Rows(NamedTuple):
    """What a :class:`Settings` implies for G grids whatever the machine's costs, per row:
    the grids its schedule runs (``grids``: ceil(G/T) for ``multiple``, whose threads
    each run their own), the threads sharing each grid's compute (``workers``), its
    batches (``sizes``, with ``runs`` batches of each size one after another: a
    :func:`batch_runs`) and their number, its team synchronisations per apply, and its
    waiting formula as one shape for every schedule: a batch of column j waits
    ``max(0, exchanges x l + s_j/B - C x hiders_j)``, where ``hiders`` are the grids
    whose compute hides its exchange: the previous batch for double-buffered (none for
    the first), the batch's own for overlap and overlap-xy (of which only the interior
    counts, ``overlap`` and ``overlap_xy`` rows), none for the others."""

    threads: np.ndarray
    grids: np.ndarray
    workers: np.ndarray
    sizes: np.ndarray
    runs: np.ndarray
    batches: np.ndarray
    syncs: np.ndarray
    exchanges: np.ndarray
    hiders: np.ndarray
    hidden: np.ndarray
    overlap: np.ndarray
    overlap_xy: np.ndarray


@functools.lru_cache(maxsize=64)
def _rows(settings: Settings, grids: int) -> _Rows:
    """The cost-free part of :func:`predict_all`, made once per (settings, G): a tuning
    ranks the same pool each time it runs in a process."""
    threads = np.array(settings.threads, dtype=np.int64)
    model = np.array(settings.model, dtype=object)
    schedule = np.array(settings.schedule, dtype=object)
    multiple = model == "multiple"
    per_thread = np.where(multiple, -(-grids // threads), grids)
    grid_workers = np.array([traits.model_traits()[name]["grid_workers"] for name in settings.model], dtype=object)
    workers = np.where(
        grid_workers == "one", 1, np.where(grid_workers == "all-but-one", np.maximum(threads - 1, 1), threads)
    )
    sizes, counts, previous = batch_runs(
        per_thread, np.array(settings.batch), np.array(settings.slope), settings.slope_kind
    )
    sizes, runs, previous = sizes.astype(float), counts.astype(float), previous.astype(float)
    batches = runs.sum(axis=1)
    syncs = np.where(model == "flat", 0, np.where(multiple, 1, batches))
    exchanges = np.array([EXCHANGES_PER_BATCH[name] for name in settings.schedule], dtype=float)
    hides = np.array([traits.schedule_traits()[name]["hides_exchange_behind"] for name in schedule], dtype=object)
    double_buffered = (hides == "previous-batch")[:, None]
    overlap = hides == "interior"
    overlap_xy = hides == "interior-rows"
    hiders = np.where(double_buffered, previous, np.where((overlap | overlap_xy)[:, None], sizes, 0.0))
    return _Rows(
        threads.astype(float),
        per_thread.astype(float),
        workers.astype(float),
        sizes,
        runs,
        batches,
        syncs.astype(float),
        exchanges,
        hiders,
        (double_buffered[:, 0] | overlap | overlap_xy).astype(float),
        overlap.astype(float),
        overlap_xy.astype(float),
    )


def predict_all(costs: Costs, problem: Problem, settings: Settings) -> np.ndarray:
    """Predicted seconds of one apply of ``problem.grids`` grids on this rank, for every
    row of ``settings`` (an array, row order).

    Compute rate: a thread runs at one core's speed unless the host's ranks x threads
    exceed its cores, then proportionally slower. Per model: ``flat`` runs the schedule
    over all grids; ``multiple`` gives each of T threads t/T whole grids and its own
    schedule (one team synchronisation per apply); ``masteronly`` and
    ``masteronly-threaded-comm`` split every batch among T threads (one synchronisation
    per batch); ``funneled-overlap`` computes on T-1 threads while thread 0
    communicates. A schedule hybridfd adds later without a model here is predicted as
    ``all-dims`` (nothing hidden), an upper bound.

    Per schedule, the waiting: ``double-buffered`` Fig. 5.2's, for the batches the
    schedule really runs (:func:`~hybridfd.perfmodel.formula.schedule_wait_time`: the
    first batch in full, then ``max(0, l + s_k/B - C s_(k-1))``); ``overlap`` each
    batch's exchange less the compute of its own interior,
    ``max(0, l + s/B - C s interior/points)``; ``overlap-xy`` the z faces' share of
    each batch's transfer in full, then the rest less the compute of its interior of
    whole rows; the others every exchange in full,
    ``exchanges x l + s/B`` per batch. In the three overlapping schedules only the share
    ``h`` (``costs.hidden_share``) of a transfer moves while the rank computes: B there
    is B/h, and ``(1 - h) s/B`` of every batch is paid in its wait (h = 1, the paper's
    network that progresses messages by itself, is Fig. 5.2 exactly). Then every grid's compute, one copy per halo byte
    to another rank (packing), the CPU cost of every message (``per_message`` x
    messages per batch x batches) and the team synchronisations. All rows at once, in
    one expression per term (the tuner ranks its whole pool so).
    """
    if problem.grids == 0:
        return np.zeros(len(settings.model))
    rows = _rows(settings, problem.grids)
    oversubscription = np.maximum(1.0, (costs.ranks_per_host / costs.cores) * rows.threads)
    per_grid_compute = (costs.compute_per_point * problem.points) * oversubscription / rows.workers
    # Bandwidth in grids per second, as Fig. 5.2 counts it.
    remote = problem.remote_bytes_per_grid
    grids_per_second = math.inf if remote == 0 else costs.bandwidth / remote
    # A box with no neighbour but itself (one rank) sends no message at all.
    latency = costs.latency if remote else 0.0
    # Seconds of compute that hide an exchange, per hiding grid (overlap: its interior).
    hiding = per_grid_compute * (
        rows.hidden
        - (1.0 - problem.interior_points / problem.points) * rows.overlap
        - (1.0 - problem.interior_points_xy / problem.points) * rows.overlap_xy
    )
    # overlap-xy waits for its z faces' share of the transfer before computing anything.
    z_share = rows.overlap_xy * (problem.z_bytes_per_grid / remote if remote else 0.0)
    # Fig. 5.2 lets computation hide a batch's transfer; only the share that moves while
    # the rank computes (hidden_share) can be hidden, the rest is paid in the wait.
    exposed = (1.0 - costs.hidden_share) * rows.hidden
    transfer = (1.0 - exposed) / grids_per_second
    waits = (
        (latency * rows.exchanges)[:, None]
        + (transfer * (1.0 - z_share))[:, None] * rows.sizes
        - hiding[:, None] * rows.hiders
    )
    waiting = np.einsum("ij,ij->i", np.maximum(waits, 0.0, out=waits), rows.runs)
    waiting += exposed * rows.grids / grids_per_second + transfer * z_share * rows.grids
    copying = costs.pack_per_byte * remote
    messaging = costs.per_message * problem.messages_per_batch
    return waiting + (per_grid_compute + copying) * rows.grids + messaging * rows.batches + costs.sync * rows.syncs


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
    """Predicted seconds of one apply of ``problem.grids`` grids on this rank for one
    setting: the one row of :func:`predict_all` (see there for the model)."""
    for name, value in (("batch size b", batch), ("slope n", slope)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be an int, got {value!r}")
    settings = Settings((model,), (schedule,), (int(batch),), (int(slope),), (threads,), slope_kind)
    return float(predict_all(costs, problem, settings)[0])
