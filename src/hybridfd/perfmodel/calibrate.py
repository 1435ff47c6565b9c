"""Calibration: the machine costs the performance model needs, measured on this machine.

- Latency l and bandwidth B: a ping-pong message-size sweep (8 B .. 4 MiB) between two
  neighbouring ranks, the experiment of the GPAW journal's Fig. 3.1, fitted with
  Hockney's T(s) = l + s/B (:func:`fit_hockney`); B is the asymptotic bandwidth, and the
  half-bandwidth size is where the measured s/T(s) first reaches B/2 (Fig. 3.1 reads it
  near 10^3 bytes on Blue Gene/P; for the fitted line it is l*B).
- Compute time per point C, per dtype and sub-grid size, measured on every rank at once
  (up to the host's cores, which share the memory bandwidth as in a job) and kept as
  the slowest rank's (the pace of a collective apply), from an apply
  with nothing to exchange (an Operator on ``MPI.COMM_SELF`` over a non-periodic box:
  the kernel reading the grids in place, as every apply does) over distinct grids
  spanning 96 MiB, so that they come from memory as in an apply of many grids.
- Copy cost per halo byte: the six faces of a batch of grids copied into contiguous
  buffers, as packing does (strided rows, the z faces' only r points long), per halo
  byte. A face to another rank costs one such copy (its pack: the stencil reads the
  received message in place); a face to the rank itself costs none (its ghosts are the
  grid's other end, read in place).
- Thread-team synchronisation: a master-only Operator with 2 threads on tiny grids, one
  batch per grid, minus the flat one, per batch.
- CPU cost per message: ranks 0 and 1 exchange tiny faces, one batch per grid against
  one batch for all grids, less the latency, per extra message
  (:func:`message_seconds`).
- The share of a transfer that moves while the ranks compute without calling MPI
  (:func:`hidden_share`): 1 where the network progresses messages by itself, as Fig.
  5.2 assumes; near 0 where the MPI library moves them only inside its calls.
- The tuner's own costs per trial (:func:`tuner_costs`): one race round's collectives
  and one entrant's Operator built and freed, which the tuner's budget charges to every
  trial it considers.

Results go to a JSON file keyed by host, MPI library and rank count, validated on load.
Run on the ranks to calibrate for::

    python -m hybridfd.launch -n 2 -- python -m hybridfd.perfmodel.calibrate --plot pingpong.png
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from hybridfd import _core
from hybridfd._argtypes import positive_int
from hybridfd.arrays import aligned_copy, empty_aligned
from hybridfd.perfmodel.predict import Costs
from hybridfd.perfmodel.store import StoreProblem, cache_dir, check_entry, host_name, read_entries, write_entries

# The file's format: a file of another is refused, never read. tuner_round and
# tuner_operator are optional: without them the tuner counts only what it measures itself.
FORMAT = "hybridfd-calibration/4"
DTYPES = ("float64", "complex128")
SUBGRIDS = (24, 48, 96)
# 8 B .. 4 MiB in powers of two, the range of Fig. 3.1.
SIZES = tuple(2**k for k in range(3, 23))

_NUMBER = {"type": "number", "minimum": 0}
_POSITIVE = {"type": "number", "exclusiveMinimum": 0}
ENTRY_SCHEMA = {
    "type": "object",
    "required": [
        "host",
        "mpi_library",
        "ranks",
        "created",
        "pingpong",
        "latency",
        "bandwidth",
        "half_bandwidth_bytes",
        "compute_per_point",
        "pack_per_byte",
        "sync",
        "per_message",
        "cores",
        "ranks_per_host",
    ],
    "properties": {
        "host": {"type": "string", "minLength": 1},
        "mpi_library": {"type": "string", "minLength": 1},
        "ranks": {"type": "integer", "minimum": 1},
        "created": {"type": "string"},
        "pingpong": {
            "type": "object",
            "required": ["bytes", "seconds"],
            "properties": {
                "bytes": {"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 2},
                "seconds": {"type": "array", "items": _POSITIVE, "minItems": 2},
            },
        },
        "latency": _NUMBER,
        "bandwidth": _POSITIVE,
        "half_bandwidth_bytes": _NUMBER,
        "compute_per_point": {
            "type": "object",
            "minProperties": 1,
            "propertyNames": {"enum": list(DTYPES)},
            "additionalProperties": {
                "type": "object",
                "minProperties": 1,
                "propertyNames": {"pattern": "^[1-9][0-9]*$"},
                "additionalProperties": _POSITIVE,
            },
        },
        "pack_per_byte": {"type": "object", "propertyNames": {"enum": list(DTYPES)}, "additionalProperties": _NUMBER},
        "sync": _NUMBER,
        "per_message": _NUMBER,
        "hidden_share": {"type": "number", "minimum": 0, "maximum": 1},
        "tuner_round": _NUMBER,
        "tuner_operator": _NUMBER,
        "cores": {"type": "integer", "minimum": 1},
        "ranks_per_host": {"type": "integer", "minimum": 1},
    },
}


def default_path() -> Path:
    """``$HYBRIDFD_CALIBRATION``, else ``~/.cache/hybridfd/calibration.json``."""
    return Path(os.environ.get("HYBRIDFD_CALIBRATION") or cache_dir() / "calibration.json")


def mpi_library() -> str:
    """First line of MPI_Get_library_version: the library and its version."""
    from mpi4py import MPI

    # Runs of spaces (MPICH pads its version line) collapsed, so keys read cleanly.
    return " ".join(MPI.Get_library_version().strip().splitlines()[0].split())


def entry_key(host: str, library: str, ranks: int) -> str:
    return f"{host} | {library} | {ranks} ranks"


def _median_time(run: Callable[[], None], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def pingpong(comm: object, sizes: Sequence[int] = SIZES, repeats: int = 5, budget: float = 0.02) -> list[float]:
    """Collective: one-way seconds per message size between ranks 0 and 1 of ``comm``.

    Each size runs ``repeats`` timings of as many round trips as fit ``budget`` seconds
    (decided by rank 0 and broadcast), halved; the fastest is kept. On one rank the
    message goes to itself (Sendrecv), the only partner a lone rank has. Ranks beyond
    1 wait. Every rank returns rank 0's numbers.
    """
    rank, size = comm.Get_rank(), comm.Get_size()
    seconds: list[float] = []
    for nbytes in sizes:
        send = np.zeros(nbytes, dtype=np.uint8)
        receive = np.empty_like(send)

        def round_trip(count: int, send: np.ndarray = send, receive: np.ndarray = receive) -> None:
            for _ in range(count):
                if size == 1:
                    comm.Sendrecv(send, 0, 0, receive, 0, 0)
                    comm.Sendrecv(send, 0, 0, receive, 0, 0)
                elif rank == 0:
                    comm.Send(send, 1, 0)
                    comm.Recv(receive, 1, 0)
                elif rank == 1:
                    comm.Recv(receive, 0, 0)
                    comm.Send(send, 0, 0)

        comm.Barrier()
        round_trip(1)  # warm-up: connection set-up and first touch
        trial = time.perf_counter()
        round_trip(1)
        trial = time.perf_counter() - trial
        count = comm.bcast(max(1, min(1000, int(budget / max(trial, 1e-9)))), root=0)
        times = []
        for _ in range(repeats):
            comm.Barrier()
            start = time.perf_counter()
            round_trip(count)
            times.append((time.perf_counter() - start) / (2 * count))
        # The fastest repeat: other processes on the cores only ever add time, and the
        # machine's latency and bandwidth are what an undisturbed message gets.
        seconds.append(min(times))
    return comm.bcast(seconds, root=0)


def fit_hockney(sizes: Sequence[int], seconds: Sequence[float]) -> tuple[float, float, float]:
    """(latency l in s, asymptotic bandwidth B in bytes/s, measured half-bandwidth bytes).

    Hockney's T(s) = l + s/B, fitted so that a busy machine's noise, which only ever
    adds time, does not bend it: 1/B is the least-squares slope over the large messages
    (s >= the largest / 64, where transfer time dominates), and l the smallest
    T(s) - s/B over the three smallest messages (where latency dominates). The
    half-bandwidth size is where the measured bandwidth s/T(s) first reaches B/2,
    interpolated on log scales; if it never does, the fitted line's l*B.
    """
    s = np.asarray(sizes, dtype=float)
    t = np.asarray(seconds, dtype=float)
    if s.size < 2 or s.size != t.size:
        raise ValueError(f"a fit needs at least 2 (size, time) pairs of equal length, got {s.size} and {t.size}")
    order = np.argsort(s)
    s, t = s[order], t[order]
    large = s >= s[-1] / 64
    if large.sum() < 2:
        large[-2:] = True
    slope = float(np.polyfit(s[large], t[large], 1)[0])
    if slope <= 0:
        raise ValueError(
            f"times do not grow with message size over {s[large].min():.0f}..{s[-1]:.0f} bytes "
            f"(fitted {slope:g} s/byte): cannot fit a bandwidth; measure again on a quieter machine"
        )
    bandwidth = 1.0 / slope
    latency = max(float(np.min(t[:3] - s[:3] / bandwidth)), 0.0)
    measured = s / t
    above = np.nonzero(measured >= bandwidth / 2)[0]
    if above.size == 0:
        return latency, bandwidth, latency * bandwidth
    k = int(above[0])
    if k == 0:
        return latency, bandwidth, float(s[0])
    # Log-log interpolation between the last size below B/2 and the first above.
    x0, x1 = math.log(s[k - 1]), math.log(s[k])
    y0, y1 = math.log(measured[k - 1]), math.log(measured[k])
    x = x0 + (math.log(bandwidth / 2) - y0) * (x1 - x0) / (y1 - y0)
    return latency, bandwidth, math.exp(x)


# Bytes the grids of one compute timing span: beyond this machine's 32 MiB L3 (and most
# servers'), so that C is the rate of grids that come from memory, as in an apply of
# many grids, not of one grid applied again and again from cache (1.6x faster at 96^3).
WORKING_SET_BYTES = 96 << 20


def compute_per_point(dtype: str, n: int, radius: int = 2, repeats: int = 5) -> float:
    """Seconds per point of an apply's compute on n^3 grids: an Operator on
    ``MPI.COMM_SELF`` over a non-periodic box (no message, no copy: the kernel reading the
    grids in place, as in every apply), over distinct grids spanning
    :data:`WORKING_SET_BYTES`, so they come from memory."""
    itemsize = np.dtype(dtype).itemsize
    # At most 4,096 grids: below 10^3 points a grid's call costs more than its bytes.
    grids = max(1, min(4096, math.ceil(WORKING_SET_BYTES / (2 * n**3 * itemsize))))
    op = _self_operator(n, dtype, radius, periodic=False, approach="flat-optimized", schedule="all-dims", batch=grids)
    rng = np.random.default_rng(n)
    a = rng.standard_normal((grids, n, n, n))
    if dtype == "complex128":
        a = a + 1j * rng.standard_normal(a.shape)
    a = aligned_copy(a.astype(dtype, copy=False))
    out = empty_aligned(a.shape, a.dtype)
    op.apply(a, out, True)  # first touch of every page
    return _median_time(lambda: op.apply(a, out, True), repeats) / (grids * n**3)


def _self_operator(n: int, dtype: str, radius: int, periodic: bool = True, **options: object) -> object:
    from mpi4py import MPI

    from hybridfd.decomposition import Decomposition
    from hybridfd.domain import Domain
    from hybridfd.stencil import Stencil

    domain = Domain(shape=(n, n, n), periodic=(periodic,) * 3, dtype=dtype)
    return core_operator(Decomposition(domain, MPI.COMM_SELF), Stencil.laplace(radius, 0.2), **options)


def core_operator(decomposition: object, stencil: object, **options: object) -> object:
    """The core's Operator of one setting (``options``: approach and its overrides, as
    :class:`hybridfd.Operator` takes them), whose ``apply(input, output, True)`` is the
    apply every Operator runs: the measurements time it without the Python checks around
    it, and the calibration, which the tuner behind ``Operator(approach="auto")`` runs,
    needs nothing above :mod:`hybridfd._core`."""
    return _core.Operator(decomposition._core, stencil._core, **options)


def pack_per_byte(dtype: str, n: int = 24, radius: int = 2, grids: int = 16, repeats: int = 5) -> float:
    """Seconds per halo byte copied once: the six r-thick faces of ``grids`` grids of n^3
    copied into contiguous buffers, as packing does (see module doc)."""
    a = np.ones((grids, n, n, n), dtype=dtype)
    faces = [a[:, :radius], a[:, -radius:], a[:, :, :radius], a[:, :, -radius:], a[..., :radius], a[..., -radius:]]
    buffers = [np.empty(face.shape, dtype=dtype) for face in faces]

    def pack() -> None:
        for face, buffer in zip(faces, buffers, strict=True):
            np.copyto(buffer, face)

    pack()
    halo_bytes = sum(buffer.nbytes for buffer in buffers)
    return _median_time(pack, repeats) / halo_bytes


def sync_seconds(grids: int = 64, repeats: int = 5) -> float:
    """Seconds one thread-team synchronisation adds per batch (master-only, 2 threads)."""
    flat = _self_operator(4, "float64", 1, approach="flat-optimized", batch=1, slope=0)
    master = _self_operator(4, "float64", 1, approach="hybrid-master-only", threads=2, batch=1, slope=0)
    a, out = empty_aligned((grids, 4, 4, 4)), empty_aligned((grids, 4, 4, 4))
    a.fill(1.0)
    times = []
    for op in (flat, master):
        op.apply(a, out, True)
        times.append(_median_time(lambda op=op: op.apply(a, out, True), repeats))
    return max(times[1] - times[0], 0.0) / grids


def message_seconds(comm: object, latency: float, grids: int = 64, repeats: int = 5) -> float:
    """Collective: CPU seconds per message posted and completed, through the core's own
    exchange; every rank returns rank 0's number (0 on one rank, which sends none).

    Ranks 0 and 1 share a periodic 8 x 4 x 4 box cut in two along x, so each batch sends
    both x-faces to the other rank and receives both: 4 messages per rank per batch, of
    a few hundred bytes (y and z faces go to the rank itself, a copy). One batch per
    grid costs ``grids - 1`` more batches than one batch for all grids; their extra time
    less one latency each (which the model charges as waiting), per message, is what a
    message costs that neither its bytes nor the network explain.
    """
    from mpi4py import MPI

    from hybridfd.decomposition import Decomposition
    from hybridfd.domain import Domain
    from hybridfd.stencil import Stencil

    seconds = 0.0
    if comm.Get_size() >= 2:
        pair = comm.Split(0 if comm.Get_rank() < 2 else MPI.UNDEFINED, comm.Get_rank())
        if pair != MPI.COMM_NULL:
            try:
                domain = Domain(shape=(8, 4, 4), periodic=(True, True, True), dtype="float64")
                decomposition = Decomposition(domain, pair, grid=(2, 1, 1))
                stencil = Stencil.laplace(1, 0.2)
                a, out = empty_aligned((grids, 4, 4, 4)), empty_aligned((grids, 4, 4, 4))
                a.fill(1.0)
                times = []
                for batch in (1, grids):
                    op = core_operator(
                        decomposition, stencil, approach="flat-optimized", schedule="all-dims", batch=batch, slope=0
                    )
                    op.apply(a, out, True)
                    pair.Barrier()
                    times.append(_median_time(lambda op=op: op.apply(a, out, True), repeats))
                extra_per_batch = (times[0] - times[1]) / (grids - 1) - latency
                seconds = max(extra_per_batch, 0.0) / 4
            finally:
                pair.Free()
    return comm.bcast(seconds, root=0)


def hidden_share(comm: object, nbytes: int = 1 << 20, repeats: int = 5) -> float:
    """Collective: the share of a halo exchange's transfer that moves while the ranks
    compute, making no MPI call (every rank returns rank 0's number; 1 on one rank).

    Fig. 5.2 assumes the network moves a posted message by itself (Blue Gene/P's DMA
    engine does); an MPI library without asynchronous progress moves a large message
    only inside an MPI call, so a schedule that posts, computes and then waits still
    pays the transfer in its wait. Ranks 0 and 1 exchange ``nbytes`` each way, as a
    halo exchange does (both post a receive and a send): once waiting at once, the
    exchange's whole time T, and once computing for 3 T first (a loop with no MPI call),
    then waiting, the part W still left. The share is 1 - W/T, clipped to [0, 1]; each
    the fastest of ``repeats`` (other processes only add time).
    """
    from mpi4py import MPI

    share = 1.0
    if comm.Get_size() >= 2:
        pair = comm.Split(0 if comm.Get_rank() < 2 else MPI.UNDEFINED, comm.Get_rank())
        if pair != MPI.COMM_NULL:
            try:
                other = 1 - pair.Get_rank()
                send = np.ones(nbytes, dtype=np.uint8)
                receive = np.empty_like(send)

                def exchange(busy: float) -> float:
                    pair.Barrier()
                    requests = [pair.Irecv(receive, other, 7), pair.Isend(send, other, 7)]
                    start = time.perf_counter()
                    while time.perf_counter() - start < busy:
                        pass  # computing: no MPI call
                    waited = time.perf_counter()
                    requests[0].Waitall(requests)
                    return time.perf_counter() - waited

                exchange(0.0)  # first touch, connection set-up
                whole = min(exchange(0.0) for _ in range(repeats))
                left = min(exchange(3 * whole) for _ in range(repeats))
                # Both ranks must agree: the slower one's view.
                whole, left = pair.allreduce(whole, op=MPI.MAX), pair.allreduce(left, op=MPI.MAX)
                share = min(max(1.0 - left / whole, 0.0), 1.0) if whole > 0 else 1.0
            finally:
                pair.Free()
    return comm.bcast(share, root=0)


# The tuner's round and Operator are measured on this sub-grid per rank: a small problem,
# where a 1,000-grid job is short and the budget tight enough for them to matter (a
# round's wait for the slower rank grows with the chunk: on this machine 20-90 us after
# chunks of 8^3-16^3 grids, 130-260 us after 24^3 ones).
TUNER_SUBGRID = 24


def tuner_costs(comm: object, repeats: int = 5, rounds: int = 20) -> tuple[float, float]:
    """Collective: (round, operator), rank 0's seconds, which every rank returns.

    What a trial costs the tuner beyond computing its chunk, measured as
    :func:`hybridfd.tune.race` spends it, over a periodic box of TUNER_SUBGRID^3 points
    per rank cut along x among all ranks of ``comm``, float64, with the tuner's first
    setting (flat double-buffered, batch 64): ``round`` the median of ``rounds`` x
    ``repeats`` race rounds, each a barrier, a timed chunk of 64 grids, the reduction of
    the chunk's seconds to rank 0 and the broadcast of rank 0's decision, less the
    chunk's own apply (so a round holds rank 0's wait for the slower rank after a chunk,
    as each round of a race does); then ``operator`` the median of ``repeats``
    Operators built and freed, once the rounds' grids are freed. That order matters:
    a process that has freed arrays of a few MB has glibc serve an Operator's message
    buffers from memory it kept (60-80 us here at 24^3), one that has not maps fresh
    pages for each (2.0-2.6 ms); a tuning runs in a process that holds its grids. A
    larger problem's Operator costs more and its rounds wait longer: the tuner raises
    both to the dearest it measures as it races.
    """
    from mpi4py import MPI

    from hybridfd.decomposition import Decomposition
    from hybridfd.domain import Domain
    from hybridfd.stencil import Stencil

    size, n = comm.Get_size(), TUNER_SUBGRID
    domain = Domain(shape=(n * size, n, n), periodic=(True, True, True), dtype="float64")
    decomposition = Decomposition(domain, comm, grid=(size, 1, 1))
    stencil = Stencil.laplace(2, 0.2)
    options = {"approach": "flat-optimized", "schedule": "double-buffered", "batch": 64, "slope": 0}
    op = core_operator(decomposition, stencil, **options)
    shape = decomposition.local_shape(64)
    a, out = empty_aligned(shape), empty_aligned(shape)
    a.fill(1.0)
    op.apply(a, out, True)
    spent = []
    for _ in range(rounds * repeats):
        start = time.perf_counter()
        comm.Barrier()
        applied = time.perf_counter()
        op.apply(a, out, True)
        chunk = time.perf_counter() - applied
        worst = np.empty(1) if comm.Get_rank() == 0 else None
        comm.Reduce(np.array([chunk]), worst, op=MPI.MAX, root=0)
        comm.bcast(([0], 0) if comm.Get_rank() == 0 else None, root=0)
        spent.append(time.perf_counter() - start - chunk)
    del op, a, out
    builds = []
    for _ in range(repeats):
        comm.Barrier()
        start = time.perf_counter()
        core_operator(decomposition, stencil, **options)  # built and freed at once
        builds.append(time.perf_counter() - start)
    return comm.bcast((statistics.median(spent), statistics.median(builds)), root=0)


def ranks_per_host(comm: object) -> int:
    from mpi4py import MPI

    local = comm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        return local.Get_size()
    finally:
        local.Free()


def calibrate(
    comm: object | None = None,
    *,
    sizes: Sequence[int] = SIZES,
    subgrids: Sequence[int] = SUBGRIDS,
    dtypes: Sequence[str] = DTYPES,
    repeats: int = 5,
) -> dict:
    """Collective: measure everything; every rank returns rank 0's entry (see :data:`ENTRY_SCHEMA`)."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD if comm is None else comm
    # Another process holding a core through one size's timings can leave the large
    # messages' times falling with size; measured again, they rise. Every rank fits rank
    # 0's times, so all measure again or all go on.
    for attempt in range(3):
        seconds = pingpong(comm, sizes, repeats)
        try:
            latency, bandwidth, half = fit_hockney(sizes, seconds)
            break
        except ValueError:
            if attempt == 2:
                raise
    # The compute rate with every core of the host at work, as in a job: ranks on one
    # host share its memory bandwidth (measured: one rank alone ran a third faster than
    # each of two at once). Ranks beyond the host's cores wait, so that none is slowed by
    # another on the same core.
    local = comm.Split_type(MPI.COMM_TYPE_SHARED)
    busy = local.Get_rank() < (os.cpu_count() or 1)
    local.Free()
    mine: dict[str, dict[str, float]] = {dtype: {} for dtype in dtypes}
    for dtype in dtypes:
        for n in subgrids:
            comm.Barrier()
            if busy:
                mine[dtype][str(n)] = compute_per_point(dtype, n, repeats=repeats)
    # C is the slowest rank's: a collective apply goes at the pace of its slowest rank,
    # whose time the model predicts (perfmodel.slowest_problem). Rank 0's alone would
    # leave every prediction low wherever rank 0 computes faster than another: by 9-27 %
    # in each pair of ranks traced on this machine (``hybridfd trace -n 2`` shows each
    # rank's compute).
    everyone = comm.gather(mine if busy else None, root=0)
    entry = None
    if comm.Get_rank() == 0:
        busy_ranks = [c for c in everyone if c is not None]
        compute = {dtype: {n: max(c[dtype][n] for c in busy_ranks) for n in mine[dtype]} for dtype in dtypes}
        # Rank 0 measures the other on-node costs alone, while the others wait, so they
        # are not slowed by ranks competing for the same cores.
        entry = {
            "host": host_name(),
            "mpi_library": mpi_library(),
            "ranks": comm.Get_size(),
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "pingpong": {"bytes": [int(s) for s in sizes], "seconds": seconds},
            "latency": latency,
            "bandwidth": bandwidth,
            "half_bandwidth_bytes": half,
            "compute_per_point": compute,
            "pack_per_byte": {dtype: pack_per_byte(dtype, repeats=repeats) for dtype in dtypes},
            "sync": sync_seconds(repeats=repeats),
            "cores": os.cpu_count() or 1,
        }
    ranks_here = ranks_per_host(comm)
    per_message = message_seconds(comm, latency, repeats=repeats)
    hidden = hidden_share(comm, repeats=repeats)
    tuner_round, tuner_operator = tuner_costs(comm, repeats=repeats)
    entry = comm.bcast(entry, root=0)
    entry["per_message"] = per_message
    entry["hidden_share"] = hidden
    entry["tuner_round"] = tuner_round
    entry["tuner_operator"] = tuner_operator
    entry["ranks_per_host"] = comm.bcast(ranks_here, root=0)
    return entry


def load(path: Path | None = None, *, host: str | None = None, library: str | None = None, ranks: int) -> dict | None:
    """The validated entry for (host, MPI library, ranks) in ``path``, or None if absent.

    Raises :class:`~hybridfd.perfmodel.store.StoreProblem` if the file or the entry is
    corrupt, or the entry's own fields name another machine than its key (foreign).
    """
    path = default_path() if path is None else Path(path)
    host = host_name() if host is None else host
    library = mpi_library() if library is None else library
    key = entry_key(host, library, ranks)
    entry = read_entries(path, FORMAT).get(key)
    if entry is None:
        return None
    check_entry(entry, ENTRY_SCHEMA, f"calibration {key!r} in {path}")
    if entry_key(entry["host"], entry["mpi_library"], entry["ranks"]) != key:
        raise StoreProblem(f"calibration stored under {key!r} in {path} describes another machine or rank count")
    return entry


def save(entry: dict, path: Path | None = None) -> Path:
    """Add ``entry`` to ``path`` (replacing the same key; a corrupt file is started afresh)."""
    path = default_path() if path is None else Path(path)
    check_entry(entry, ENTRY_SCHEMA, "new calibration")
    try:
        entries = read_entries(path, FORMAT)
    except StoreProblem:
        entries = {}
    entries[entry_key(entry["host"], entry["mpi_library"], entry["ranks"])] = entry
    write_entries(path, FORMAT, entries)
    return path


def costs(entry: dict, dtype: str, points: int) -> Costs:
    """:class:`Costs` for grids of ``points`` points: C from the calibrated sub-grid size
    nearest on a log scale (cache behaviour changes with size), for ``dtype``."""
    table = entry["compute_per_point"].get(dtype)
    if table is None:
        raise ValueError(
            f"calibration has no compute time for dtype {dtype!r}; it has {sorted(entry['compute_per_point'])}"
        )
    edge = points ** (1 / 3)
    nearest = min(table, key=lambda n: abs(math.log(int(n)) - math.log(max(edge, 1.0))))
    return Costs(
        latency=entry["latency"],
        bandwidth=entry["bandwidth"],
        compute_per_point=table[nearest],
        pack_per_byte=entry["pack_per_byte"].get(dtype, 0.0),
        sync=entry["sync"],
        cores=entry["cores"],
        ranks_per_host=entry["ranks_per_host"],
        per_message=entry["per_message"],
        # A file without it: Fig. 5.2's assumption, every transfer hideable.
        hidden_share=entry.get("hidden_share", 1.0),
        tuner_round=entry.get("tuner_round", 0.0),
        tuner_operator=entry.get("tuner_operator", 0.0),
    )


def plot(entry: dict, path: Path) -> None:
    """Bandwidth against message size, as the GPAW journal's Fig. 3.1, with B and B/2."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = np.asarray(entry["pingpong"]["bytes"], dtype=float)
    seconds = np.asarray(entry["pingpong"]["seconds"], dtype=float)
    bandwidth = entry["bandwidth"]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.loglog(sizes, sizes / seconds / 1e6, "o-", label="measured (one-way)")
    ax.loglog(sizes, sizes / (entry["latency"] + sizes / bandwidth) / 1e6, "--", label="fit l + s/B")
    ax.axhline(bandwidth / 1e6, color="grey", lw=0.8, label=f"B = {bandwidth / 1e6:.0f} MB/s")
    ax.axvline(
        entry["half_bandwidth_bytes"], color="grey", ls=":", label=f"B/2 at {entry['half_bandwidth_bytes']:.0f} B"
    )
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("bandwidth (MB/s)")
    ax.set_title(f"ping-pong, {entry['ranks']} ranks, {entry['mpi_library'][:40]}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _size_list(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"sub-grid sizes must be positive, got {text!r}")
    return values


def _unwritable(path: Path | None) -> str | None:
    """Why ``path`` cannot be written (its directory made if missing), or None."""
    if path is None:
        return None
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        return f"cannot make directory {str(path.parent)!r}: {error.strerror}"
    if path.is_dir():
        return "is a directory"
    if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return "is not writable"
    return None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hybridfd calibrate",
        description="Measure latency, bandwidth (ping-pong 8 B .. 4 MiB), stencil compute time per point, "
        "pack cost and thread synchronisation; store them keyed by host, MPI library and rank count.",
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=None,
        help="calibration file (default: $HYBRIDFD_CALIBRATION, else ~/.cache/hybridfd/calibration.json)",
    )
    parser.add_argument("--plot", type=Path, default=None, help="write the bandwidth plot (Fig. 3.1) here")
    parser.add_argument("--repeats", type=positive_int, default=5, help="timings per measurement (median)")
    parser.add_argument("--max-bytes", type=positive_int, default=SIZES[-1], help="largest ping-pong message")
    parser.add_argument("--subgrids", type=_size_list, default=SUBGRIDS, help="edge lengths n of n^3 sub-grids")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from mpi4py import MPI
    from rich.console import Console
    from rich.table import Table

    comm = MPI.COMM_WORLD
    sizes = tuple(s for s in SIZES if s <= args.max_bytes)
    if len(sizes) < 2:
        if comm.rank == 0:
            print(f"--max-bytes {args.max_bytes} leaves fewer than 2 message sizes (from 8 B)", file=sys.stderr)
        return 2
    # The files are written at the end: a place they cannot go is named before the
    # measurements, not after them (rank 0 writes; every rank exits alike).
    unwritable = None
    if comm.rank == 0:
        places = (("--output", args.output or default_path()), ("--plot", args.plot))
        unwritable = next((f"{name} {path}: {why}" for name, path in places if (why := _unwritable(path))), None)
    unwritable = comm.bcast(unwritable, root=0)
    if unwritable is not None:
        if comm.rank == 0:
            print(f"hybridfd calibrate: error: {unwritable}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    entry = calibrate(comm, sizes=sizes, subgrids=args.subgrids, repeats=args.repeats)
    if comm.rank == 0:
        path = save(entry, args.output)
        table = Table(title=f"calibration: {entry_key(entry['host'], entry['mpi_library'], entry['ranks'])}")
        table.add_column("quantity")
        table.add_column("value", justify="right")
        table.add_row("latency l", f"{entry['latency'] * 1e6:.2f} us")
        table.add_row("asymptotic bandwidth B", f"{entry['bandwidth'] / 1e6:.0f} MB/s")
        table.add_row("half-bandwidth size", f"{entry['half_bandwidth_bytes']:.0f} B")
        for dtype, by_size in entry["compute_per_point"].items():
            for n, value in by_size.items():
                table.add_row(f"C per point, {dtype}, {n}^3", f"{value * 1e9:.3f} ns")
        for dtype, value in entry["pack_per_byte"].items():
            table.add_row(f"halo copy per byte, {dtype}", f"{value * 1e9:.4f} ns")
        table.add_row("team synchronisation", f"{entry['sync'] * 1e6:.2f} us")
        table.add_row("CPU per message", f"{entry['per_message'] * 1e6:.3f} us")
        table.add_row("transfer hidden by computing", f"{entry['hidden_share'] * 100:.0f} %")
        table.add_row("tuner: one race round", f"{entry['tuner_round'] * 1e6:.1f} us")
        table.add_row("tuner: one Operator built and freed", f"{entry['tuner_operator'] * 1e6:.1f} us")
        console = Console()
        console.print(table)
        console.print(f"written to {path} in {time.perf_counter() - start:.1f} s")
        if args.plot is not None:
            plot(entry, args.plot)
            console.print(f"plot: {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
