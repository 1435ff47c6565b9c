"""The CP2K synthetic Cannon benchmark (Tabosa et al., process mapping on Cray XE6,
Fig. 1 code), reporting bandwidth per message size.

P ranks form a 2D periodic process grid (MPI_Dims_create). Each iteration, as in the
paper's code: MPI_Irecv from the left and from below, MPI_Isend to the right and upward
(n doubles each), then ``--work`` matrix-matrix multiplications (dgemm through numpy's
BLAS) while the messages fly, then MPI_Waitall. Bandwidth per rank = bytes a rank sends
per iteration / time per iteration (slowest rank); the aggregate multiplies by P.

Process mapping (the paper's subject): ``--mapping STRATEGY`` reorders the ranks with
hybridfd.mapping for ``--topology`` (default ``host``: this machine's shared-memory
nodes) before the grid is made, and the result records the mapping's hop-bytes and link
loads. :func:`cannon` takes the communicator to run on, so any reordered communicator
plugs in (MPICH and Open MPI ignore MPI_Cart_create's reorder flag, so hybridfd reorders
itself).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

from hybridfd._argtypes import byte_size, nonnegative_int, positive_int
from hybridfd.experiments import ExperimentInputError, Outcome, sub_run
from hybridfd.experiments.message_size import sizes

NAME = "cannon"
SUMMARY = "CP2K's synthetic Cannon benchmark: 2D periodic grid, 4 neighbours, dgemm, bandwidth"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ranks", type=positive_int, default=4, help="MPI ranks (default 4: a 2x2 grid)")
    parser.add_argument("--min-size", type=byte_size, default=8 * 1024, metavar="BYTES", help="smallest message (8k)")
    parser.add_argument("--max-size", type=byte_size, default=2 * 1024**2, metavar="BYTES", help="largest (2M)")
    parser.add_argument("--work", type=nonnegative_int, default=1, help="dgemm calls per iteration (default 1)")
    parser.add_argument("--matrix", type=positive_int, default=128, help="dgemm matrices are MxM (default 128)")
    parser.add_argument("--iterations", type=positive_int, default=10, help="Cannon iterations per sample")
    parser.add_argument("--repeats", type=positive_int, default=5, help="samples; medians reported (default 5)")
    from hybridfd.mapping import strategy_names

    parser.add_argument(
        "--mapping", choices=strategy_names(), help="reorder the ranks with this strategy (default: MPI's order)"
    )
    parser.add_argument(
        "--topology",
        default="host",
        help="topology of --mapping: a preset (host, bluegene-p, cray-xe6) or a .toml/.json file (default host)",
    )


def cannon(
    comm: Any,  # noqa: ANN401 - an mpi4py communicator, possibly reordered by a mapping
    message_sizes: list[int],
    work: int,
    matrix: int,
    iterations: int,
    repeats: int,
) -> dict[str, Any] | None:
    """The benchmark on ``comm``; rank 0 returns per size the median seconds per iteration."""
    from mpi4py import MPI

    from hybridfd.display import DelayedProgress

    dims = MPI.Compute_dims(comm.size, 2)
    cart = comm.Create_cart(dims, periods=[True, True], reorder=False)
    left, right = cart.Shift(1, 1)
    down, up = cart.Shift(0, 1)
    rng = np.random.default_rng(cart.rank)
    a, b = rng.standard_normal((matrix, matrix)), rng.standard_normal((matrix, matrix))
    c = np.empty_like(a)
    largest = max(message_sizes) // 8
    send_right, send_up = np.ones(largest), np.ones(largest)
    recv_left, recv_down = np.empty(largest), np.empty(largest)

    def iteration_seconds(n: int) -> float:
        cart.Barrier()
        start = time.perf_counter()
        for _ in range(iterations):
            requests = [
                cart.Irecv(recv_left[:n], source=left, tag=0),
                cart.Irecv(recv_down[:n], source=down, tag=1),
                cart.Isend(send_right[:n], dest=right, tag=0),
                cart.Isend(send_up[:n], dest=up, tag=1),
            ]
            for _ in range(work):  # the matrix-matrix multiplications the messages hide behind
                np.matmul(a, b, out=c)
            MPI.Request.Waitall(requests)
        return cart.allreduce((time.perf_counter() - start) / iterations, op=MPI.MAX)

    def dgemm_seconds() -> float:
        start = time.perf_counter()
        for _ in range(iterations * work):
            np.matmul(a, b, out=c)
        return cart.allreduce((time.perf_counter() - start) / iterations, op=MPI.MAX)

    samples: dict[int, list[float]] = {size: [] for size in message_sizes}
    compute: list[float] = []
    with DelayedProgress("cannon", repeats * (len(message_sizes) + 1), enabled=cart.rank == 0) as progress:
        for _ in range(repeats):  # interleaved rounds
            compute.append(dgemm_seconds())
            progress.advance()
            for size in message_sizes:
                samples[size].append(iteration_seconds(size // 8))
                progress.advance()
    rank = cart.rank
    cart.Free()
    if rank != 0:
        return None
    return {
        "dims": list(dims),
        "dgemm_seconds_per_iteration": float(np.median(compute)),
        "seconds_per_iteration": {str(size): float(np.median(t)) for size, t in samples.items()},
    }


def worker(comm: Any, params: dict[str, Any]) -> dict[str, Any] | None:  # noqa: ANN401 - mpi4py
    from mpi4py import MPI

    mapping = None
    if params.get("mapping"):
        from hybridfd.mapping import reorder_communicator

        dims = MPI.Compute_dims(comm.size, 2)
        comm, info = reorder_communicator(comm, dims, params["mapping"], params["topology"])
        mapping = info.as_dict()
    numbers = cannon(comm, params["sizes"], params["work"], params["matrix"], params["iterations"], params["repeats"])
    if mapping is not None:
        comm.Free()
        if numbers is not None:
            numbers["mapping"] = mapping
    return numbers


def run(args: argparse.Namespace) -> Outcome:
    if args.min_size > args.max_size:
        raise ExperimentInputError(f"--min-size {args.min_size} is larger than --max-size {args.max_size}")
    for option, value in (("--min-size", args.min_size), ("--max-size", args.max_size)):
        if value % 8:
            raise ExperimentInputError(f"{option} {value}: messages are doubles, so a multiple of 8 bytes")
    message_sizes = sizes(args.min_size, args.max_size)
    params = {
        "sizes": message_sizes,
        "work": args.work,
        "matrix": args.matrix,
        "iterations": args.iterations,
        "repeats": args.repeats,
        "mapping": args.mapping,
        "topology": args.topology,
    }
    numbers = sub_run(NAME, args.ranks, params, args.timeout)
    dgemm = numbers["dgemm_seconds_per_iteration"]
    rows = []
    for size in message_sizes:
        seconds = numbers["seconds_per_iteration"][str(size)]
        per_rank = 2 * size / seconds  # two messages sent per rank and iteration
        rows.append(
            {
                "message_bytes": size,
                "iteration_ms": 1e3 * seconds,
                "dgemm_ms": 1e3 * dgemm,
                "bandwidth_mb_per_s_per_rank": per_rank / 1e6,
                "aggregate_mb_per_s": args.ranks * per_rank / 1e6,
            }
        )
    columns = [
        {"key": "message_bytes", "title": "message bytes", "format": ","},
        {"key": "iteration_ms", "title": "ms/iteration", "format": ".3f"},
        {"key": "dgemm_ms", "title": "dgemm ms", "format": ".3f"},
        {"key": "bandwidth_mb_per_s_per_rank", "title": "MB/s per rank", "format": ",.0f"},
        {"key": "aggregate_mb_per_s", "title": "MB/s all ranks", "format": ",.0f"},
    ]
    dims = "x".join(map(str, numbers["dims"]))
    title = f"cannon: {args.ranks} ranks as a periodic {dims} grid, {args.work} dgemm of {args.matrix}^2 per iteration"
    notes = [
        f"medians of {args.repeats} samples of {args.iterations} iterations; dgemm ms = the same dgemm calls alone",
    ]
    if args.mapping is None:
        notes.append("ranks in MPI_COMM_WORLD order (no mapping)")
    else:
        described = ", ".join(f"{k} {v}" for k, v in numbers["mapping"].items())
        notes.append(f"mapping: {described}")
    return Outcome(title, columns, rows, notes)


def plot(result: dict[str, Any], path: Path) -> None:
    from hybridfd.experiments._plot import figure, save

    rows = result["rows"]
    fig, ax = figure()
    ax.plot([r["message_bytes"] for r in rows], [r["bandwidth_mb_per_s_per_rank"] for r in rows], marker="o")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("MB/s per rank")
    ax.set_title(result["title"], fontsize=9)
    save(fig, path)
