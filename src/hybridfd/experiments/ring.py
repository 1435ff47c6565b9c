"""Rabenseifner's inter-node bandwidth benchmark (Hybrid Parallel Programming on HPC
Platforms, EWOMP 2003, Sect. 3.1, Figs. 1-4, Table 1).

The nodes form a logical ring. In the pure-MPI pattern, each of the c communicating CPUs
(ranks) of a node sends a message to the corresponding CPU of the next node and receives
one from the previous node; the node's other ranks wait in a barrier. The aggregated
bandwidth per node is all bytes of all inter-node messages (each counted once) / time /
number of nodes, plotted against c (his Figs. 2-3). c = 1 is the hybrid masteronly
pattern: one master per node communicates for the whole node (emulated, as in the paper,
by one MPI process while the others wait in a barrier).

His Fig. 4 compares the communication time of the two styles for the same data: with
pure MPI every rank of a node sends m bytes to the next node and m bytes to the next
rank inside its node (the intra-node messages of a domain decomposition); with
masteronly the master sends the node's accumulated k*m bytes to the next node's master.
The ratio masteronly time / pure-MPI time is plotted against m.

Nodes: on a cluster, ranks sharing memory (MPI_Comm_split_type shared) are a node. One
machine is one node, so ``--ranks-per-node K`` groups consecutive ranks into "nodes"
instead (default here: 2 nodes of 2 ranks); the "inter-node" messages then also move
through shared memory, so this machine shows the method, not a network.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

from hybridfd._argtypes import byte_size, positive_int
from hybridfd.experiments import ExperimentInputError, Outcome, sub_run
from hybridfd.experiments.message_size import sizes

NAME = "ring"
SUMMARY = "Rabenseifner's ring: bandwidth per node vs communicating CPUs, masteronly vs pure MPI"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ranks", type=positive_int, default=4, help="MPI ranks (default 4)")
    parser.add_argument(
        "--ranks-per-node",
        type=positive_int,
        default=2,
        metavar="K",
        help="group K consecutive ranks as a node (default 2)",
    )
    parser.add_argument(
        "--detect-nodes",
        action="store_true",
        help="nodes are the ranks sharing memory (MPI_Comm_split_type), for a cluster; ignores --ranks-per-node",
    )
    parser.add_argument(
        "--message", type=byte_size, default=1024**2, metavar="BYTES", help="message of the bandwidth part (1M)"
    )
    parser.add_argument("--min-size", type=byte_size, default=1024, metavar="BYTES", help="smallest m of Fig. 4 (1k)")
    parser.add_argument("--max-size", type=byte_size, default=1024**2, metavar="BYTES", help="largest m of Fig. 4 (1M)")
    parser.add_argument("--iterations", type=positive_int, default=20, help="exchanges per sample (default 20)")
    parser.add_argument("--repeats", type=positive_int, default=7, help="samples; medians reported (default 7)")


def node_layout(comm: Any, ranks_per_node: int | None) -> tuple[int, int, int]:  # noqa: ANN401 - mpi4py
    """(node, local rank, ranks per node) of this rank; every node must have the same size."""
    from mpi4py import MPI

    if ranks_per_node is None:
        shared = comm.Split_type(MPI.COMM_TYPE_SHARED)
        local, size = shared.rank, shared.size
        leaders = comm.allgather(comm.rank if local == 0 else -1)
        first = shared.bcast(comm.rank if local == 0 else None, root=0)
        node = sorted(r for r in leaders if r >= 0).index(first)
        shared.Free()
        sizes_seen = set(comm.allgather(size))
        if len(sizes_seen) != 1:
            raise ValueError(f"nodes have different numbers of ranks {sorted(sizes_seen)}; the ring needs equal nodes")
        return node, local, size
    return comm.rank // ranks_per_node, comm.rank % ranks_per_node, ranks_per_node


def worker(comm: Any, params: dict[str, Any]) -> dict[str, Any] | None:  # noqa: ANN401 - mpi4py
    from mpi4py import MPI

    from hybridfd.display import DelayedProgress

    node, local, k = node_layout(comm, params["ranks_per_node"])
    nodes = comm.size // k
    by_node = comm.allgather((node, local))
    rank_of = {place: r for r, place in enumerate(by_node)}
    iterations, repeats = params["iterations"], params["repeats"]

    def exchange_time(parts: list[tuple[int, int, int, int]]) -> float:
        """Slowest rank's seconds per exchange of ``parts``: (dest, source, bytes, tag), bytes
        sent to dest (next node or rank) while as many arrive from source (the previous one)."""
        sends = [np.zeros(nbytes, dtype=np.uint8) for _, _, nbytes, _ in parts]
        recvs = [np.empty(nbytes, dtype=np.uint8) for _, _, nbytes, _ in parts]
        comm.Barrier()
        start = time.perf_counter()
        for _ in range(iterations):
            requests = []
            for (dest, source, _nbytes, tag), send, recv in zip(parts, sends, recvs, strict=True):
                requests.append(comm.Irecv(recv, source=source, tag=tag))
                requests.append(comm.Isend(send, dest=dest, tag=tag))
            MPI.Request.Waitall(requests)
        elapsed = (time.perf_counter() - start) / iterations
        comm.Barrier()  # the ranks that did not communicate waited here (sleeping threads)
        return comm.allreduce(elapsed, op=MPI.MAX)

    def inter(nbytes: int) -> tuple[int, int, int, int]:
        return (rank_of[((node + 1) % nodes, local)], rank_of[((node - 1) % nodes, local)], nbytes, 0)

    def intra(nbytes: int) -> tuple[int, int, int, int]:
        return (rank_of[(node, (local + 1) % k)], rank_of[(node, (local - 1) % k)], nbytes, 1)

    figure4 = params["sizes"]
    steps = repeats * (k + 2 * len(figure4))
    bandwidth: dict[int, list[float]] = {c: [] for c in range(1, k + 1)}
    masteronly: dict[int, list[float]] = {m: [] for m in figure4}
    pure: dict[int, list[float]] = {m: [] for m in figure4}
    with DelayedProgress("ring", steps, enabled=comm.rank == 0) as progress:
        for _ in range(repeats):  # interleaved rounds
            for c in range(1, k + 1):
                seconds = exchange_time([inter(params["message"])] if local < c else [])
                bandwidth[c].append(nodes * c * params["message"] / seconds / nodes)
                progress.advance()
            for m in figure4:
                masteronly[m].append(exchange_time([inter(k * m)] if local == 0 else []))
                progress.advance()
                pure[m].append(exchange_time([inter(m), intra(m)] if k > 1 else [inter(m)]))
                progress.advance()
    if comm.rank != 0:
        return None
    return {
        "nodes": nodes,
        "ranks_per_node": k,
        "bandwidth_per_node": {str(c): float(np.median(v)) for c, v in bandwidth.items()},
        "masteronly_seconds": {str(m): float(np.median(v)) for m, v in masteronly.items()},
        "pure_seconds": {str(m): float(np.median(v)) for m, v in pure.items()},
    }


def run(args: argparse.Namespace) -> Outcome:
    if not args.detect_nodes:
        if args.ranks % args.ranks_per_node:
            raise ExperimentInputError(
                f"--ranks {args.ranks} is not a multiple of --ranks-per-node {args.ranks_per_node}"
            )
        if args.ranks // args.ranks_per_node < 2:
            raise ExperimentInputError(
                f"--ranks {args.ranks} with --ranks-per-node {args.ranks_per_node} makes one node; a ring needs two"
            )
    if args.min_size > args.max_size:
        raise ExperimentInputError(f"--min-size {args.min_size} is larger than --max-size {args.max_size}")
    figure4 = sizes(args.min_size, args.max_size)
    params = {
        "ranks_per_node": None if args.detect_nodes else args.ranks_per_node,
        "message": args.message,
        "sizes": figure4,
        "iterations": args.iterations,
        "repeats": args.repeats,
    }
    numbers = sub_run(NAME, args.ranks, params, args.timeout)
    k, nodes = numbers["ranks_per_node"], numbers["nodes"]
    peak = max(numbers["bandwidth_per_node"].values())
    rows = []
    for c in range(1, k + 1):
        bw = numbers["bandwidth_per_node"][str(c)]
        rows.append(
            {
                "part": "bandwidth",
                "communicating_cpus": c,
                "style": "masteronly" if c == 1 else "pure MPI",
                "message_bytes": args.message,
                "bandwidth_mb_per_s_per_node": bw / 1e6,
                "fraction_of_best": bw / peak,
                "masteronly_ms": None,
                "pure_mpi_ms": None,
                "ratio_masteronly_to_pure": None,
            }
        )
    for m in figure4:
        hybrid = numbers["masteronly_seconds"][str(m)]
        flat = numbers["pure_seconds"][str(m)]
        rows.append(
            {
                "part": "Fig. 4",
                "communicating_cpus": None,
                "style": None,
                "message_bytes": m,
                "bandwidth_mb_per_s_per_node": None,
                "fraction_of_best": None,
                "masteronly_ms": 1e3 * hybrid,
                "pure_mpi_ms": 1e3 * flat,
                "ratio_masteronly_to_pure": hybrid / flat,
            }
        )
    columns = [
        {"key": "part", "title": "part"},
        {"key": "communicating_cpus", "title": "CPUs/node"},
        {"key": "style", "title": "style"},
        {"key": "message_bytes", "title": "bytes (pure MPI)", "format": ","},
        {"key": "bandwidth_mb_per_s_per_node", "title": "MB/s per node", "format": ",.0f"},
        {"key": "fraction_of_best", "title": "of best", "format": ".0%"},
        {"key": "masteronly_ms", "title": "masteronly ms", "format": ".3f"},
        {"key": "pure_mpi_ms", "title": "pure MPI ms", "format": ".3f"},
        {"key": "ratio_masteronly_to_pure", "title": "masteronly / pure", "format": ".2f"},
    ]
    master = numbers["bandwidth_per_node"]["1"]
    how = "shared-memory nodes" if args.detect_nodes else f"groups of {k} ranks as nodes"
    notes = [
        f"{nodes} nodes x {k} ranks ({how}); medians of {args.repeats} samples of {args.iterations} exchanges",
        f"masteronly reaches {master / peak:.0%} of the best aggregated bandwidth per node (his Table 1, col. 3)",
        "Fig. 4 part: masteronly sends k*m bytes per node; pure MPI sends m inter-node plus m intra-node per rank",
    ]
    title = f"ring: {nodes} nodes x {k} ranks, bandwidth message {args.message:,} B"
    return Outcome(title, columns, rows, notes)


def plot(result: dict[str, Any], path: Path) -> None:
    from hybridfd.experiments._plot import figure, save

    rows = result["rows"]
    bandwidth = [r for r in rows if r["part"] == "bandwidth"]
    ratio = [r for r in rows if r["part"] == "Fig. 4"]
    fig, (left, right) = figure(panels=2, width=4.5)
    left.plot(
        [r["communicating_cpus"] for r in bandwidth], [r["bandwidth_mb_per_s_per_node"] for r in bandwidth], marker="o"
    )
    left.set_xticks([r["communicating_cpus"] for r in bandwidth])
    left.set_xlabel("communicating CPUs per node (1 = masteronly)")
    left.set_ylabel("aggregated MB/s per node")
    left.set_ylim(bottom=0)
    right.plot([r["message_bytes"] for r in ratio], [r["ratio_masteronly_to_pure"] for r in ratio], marker="o")
    right.axhline(1.0, color="grey", linestyle=":")
    right.set_xscale("log", base=2)
    right.set_xlabel("bytes per message (pure MPI)")
    right.set_ylabel("masteronly time / pure MPI time")
    fig.suptitle(result["title"], fontsize=9)
    save(fig, path)
