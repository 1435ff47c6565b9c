"""Point-to-point bandwidth vs message size (GPAW journal Sect. 3.1, Fig. 3.1).

Rank 0 and rank 1 ping-pong one message of each size (8 B .. 4 MiB by default,
doubling); the one-way time is half a round trip, averaged over many round trips, and
the reported value is the median of several such samples, the sizes interleaved. The
half-bandwidth size n1/2 (where the bandwidth first reaches half of the largest measured
bandwidth, interpolated on log-log axes) is marked: the paper found about 10^3 B on Blue
Gene/P's torus, and about 10^5 B needed for full bandwidth, which is why it batches grids.

Messages go through mpi4py's buffer interface (Send/Recv of numpy arrays), so the
small-message times include mpi4py's per-call cost.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

from hybridfd._argtypes import byte_size, positive_int
from hybridfd.experiments import ExperimentInputError, Outcome, sub_run

NAME = "message-size"
SUMMARY = "ping-pong bandwidth vs message size, half-bandwidth size marked (GPAW Fig. 3.1)"

#: Round trips per sample aim at about this many bytes moved (at least MIN_ROUND_TRIPS).
BYTES_PER_SAMPLE = 64 * 1024**2
MIN_ROUND_TRIPS = 8
MAX_ROUND_TRIPS = 2000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--min-size", type=byte_size, default=8, metavar="BYTES", help="smallest message (default 8)")
    parser.add_argument("--max-size", type=byte_size, default=4 * 1024**2, metavar="BYTES", help="largest (4M)")
    parser.add_argument("--repeats", type=positive_int, default=7, help="samples per size; the median is reported")
    parser.add_argument("--ranks", type=positive_int, default=2, help="MPI ranks (ranks 0 and 1 ping-pong; default 2)")


def sizes(smallest: int, largest: int) -> list[int]:
    """Doubling sizes from ``smallest`` up to and including ``largest``."""
    values = [smallest]
    while values[-1] * 2 <= largest:
        values.append(values[-1] * 2)
    if values[-1] != largest:
        values.append(largest)
    return values


def round_trips(size: int) -> int:
    return int(min(MAX_ROUND_TRIPS, max(MIN_ROUND_TRIPS, BYTES_PER_SAMPLE // (2 * size))))


def worker(comm: Any, params: dict[str, Any]) -> dict[str, Any] | None:  # noqa: ANN401 - an mpi4py communicator
    from hybridfd.display import DelayedProgress

    message_sizes = params["sizes"]
    buffer = np.zeros(max(message_sizes), dtype=np.uint8)
    samples: dict[int, list[float]] = {size: [] for size in message_sizes}
    rank = comm.rank
    with DelayedProgress("message sizes", params["repeats"] * len(message_sizes), enabled=rank == 0) as progress:
        for _ in range(params["repeats"]):  # interleaved: every size once per round
            for size in message_sizes:
                message = buffer[:size]
                trips = round_trips(size)
                comm.Barrier()
                if rank == 0:
                    comm.Send(message, dest=1)  # warm-up round trip
                    comm.Recv(message, source=1)
                    start = time.perf_counter()
                    for _ in range(trips):
                        comm.Send(message, dest=1)
                        comm.Recv(message, source=1)
                    samples[size].append((time.perf_counter() - start) / (2 * trips))
                elif rank == 1:
                    for _ in range(trips + 1):
                        comm.Recv(message, source=0)
                        comm.Send(message, dest=0)
                progress.advance()
    if rank != 0:
        return None
    return {"one_way_seconds": {str(size): float(np.median(t)) for size, t in samples.items()}}


def half_bandwidth_size(message_sizes: list[int], bandwidths: list[float]) -> float | None:
    """The size where the bandwidth first reaches half its largest value, interpolated
    linearly in log(size) and log(bandwidth); None if the first size already does."""
    half = max(bandwidths) / 2
    for k in range(1, len(message_sizes)):
        if bandwidths[k] >= half and bandwidths[k - 1] < half:
            x0, x1 = np.log(message_sizes[k - 1]), np.log(message_sizes[k])
            y0, y1 = np.log(bandwidths[k - 1]), np.log(bandwidths[k])
            return float(np.exp(x0 + (np.log(half) - y0) * (x1 - x0) / (y1 - y0)))
    return None


def run(args: argparse.Namespace) -> Outcome:
    if args.ranks < 2:
        raise ExperimentInputError(f"--ranks {args.ranks}: a ping-pong needs at least 2 ranks")
    if args.min_size > args.max_size:
        raise ExperimentInputError(f"--min-size {args.min_size} is larger than --max-size {args.max_size}")
    message_sizes = sizes(args.min_size, args.max_size)
    numbers = sub_run(NAME, args.ranks, {"sizes": message_sizes, "repeats": args.repeats}, args.timeout)
    one_way = [numbers["one_way_seconds"][str(size)] for size in message_sizes]
    bandwidths = [size / t for size, t in zip(message_sizes, one_way, strict=True)]
    peak = max(bandwidths)
    half = half_bandwidth_size(message_sizes, bandwidths)
    rows = [
        {
            "size_bytes": size,
            "one_way_us": 1e6 * t,
            "bandwidth_mb_per_s": bw / 1e6,
            "fraction_of_peak": bw / peak,
        }
        for size, t, bw in zip(message_sizes, one_way, bandwidths, strict=True)
    ]
    half_text = f"{half:,.0f} B" if half is not None else f"below {message_sizes[0]} B"
    notes = [
        f"largest bandwidth {peak / 1e6:,.0f} MB/s; half of it is first reached at n1/2 = {half_text}",
        f"latency (one-way time of {message_sizes[0]} B) {rows[0]['one_way_us']:.2f} us, mpi4py call cost included",
    ]
    rows[0]["half_bandwidth_size_bytes"] = half
    for row in rows[1:]:
        row["half_bandwidth_size_bytes"] = half
    columns = [
        {"key": "size_bytes", "title": "message bytes", "format": ","},
        {"key": "one_way_us", "title": "one-way us", "format": ".2f"},
        {"key": "bandwidth_mb_per_s", "title": "MB/s", "format": ",.1f"},
        {"key": "fraction_of_peak", "title": "of largest", "format": ".0%"},
    ]
    title = f"message-size: ping-pong between 2 of {args.ranks} ranks, median of {args.repeats}"
    return Outcome(title, columns, rows, notes)


def plot(result: dict[str, Any], path: Path) -> None:
    from hybridfd.experiments._plot import figure, save

    rows = result["rows"]
    message_sizes = [row["size_bytes"] for row in rows]
    bandwidths = [row["bandwidth_mb_per_s"] for row in rows]
    fig, ax = figure()
    ax.plot(message_sizes, bandwidths, marker="o")
    half = rows[0]["half_bandwidth_size_bytes"]
    if half is not None:
        ax.axvline(half, color="grey", linestyle="--")
        ax.axhline(max(bandwidths) / 2, color="grey", linestyle=":")
        ax.annotate(f"n1/2 = {half:,.0f} B", (half, max(bandwidths) / 2), xytext=(8, -14), textcoords="offset points")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("bandwidth (MB/s)")
    ax.set_title(result["title"], fontsize=9)
    save(fig, path)
