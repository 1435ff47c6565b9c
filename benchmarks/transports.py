"""Transports side by side (MiniMD slides' Hybrid-Barrier and Hybrid-Advanced in MPI RMA,
neighbourhood collectives, MPI-4 partitioned): time per grid as a ratio to p2p measured in
the same run, medians over repeats.

    .venv/bin/python benchmarks/transports.py [--ranks 2 4] [--repeats 5]

Runs itself under the launcher once per rank count. Per rank a 32^3 or 96^3 sub-grid
(x cut into one box per rank, periodic), float64, 13-point Laplacian, flat model,
double-buffered schedule, batch 1 and 8. Writes results/transports.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CASES = [(32, 64), (96, 16)]  # (sub-grid edge, grids per apply)
BATCHES = (1, 8)


def worker(repeats: int) -> None:
    from mpi4py import MPI

    import hybridfd as hf

    comm = MPI.COMM_WORLD
    stencil = hf.Stencil.laplace(2, 0.2)
    rows = []
    for n, grids in CASES:
        dec = hf.Decomposition(hf.Domain((n * comm.size, n, n)), comm, grid=(comm.size, 1, 1))
        a = np.random.default_rng(comm.rank).standard_normal(dec.local_shape(grids))
        out = np.empty_like(a)
        for batch in BATCHES:
            ops = {
                t: hf.Operator(
                    dec, stencil, "flat-optimized", schedule="double-buffered", transport=t, batch=batch, slope=0
                )
                for t in hf.transport_names()
            }
            times: dict[str, list[float]] = {t: [] for t in ops}
            for op in ops.values():
                op.apply(a, out=out)  # warm-up: persistent requests, windows touched
            for _ in range(repeats):
                for transport, op in ops.items():  # interleaved, so load hits all alike
                    comm.Barrier()
                    start = time.perf_counter()
                    op.apply(a, out=out)
                    times[transport].append(comm.allreduce(time.perf_counter() - start, op=MPI.MAX) / grids)
            p2p = statistics.median(times["p2p"])
            for transport, values in times.items():
                rows.append(
                    {"ranks": comm.size, "n": n, "batch": batch, "transport": transport,
                     "ms_per_grid": statistics.median(values) * 1e3, "ratio_to_p2p": statistics.median(values) / p2p}
                )  # fmt: skip
    if comm.rank == 0:
        print(json.dumps(rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.repeats)
        return
    from hybridfd import launch

    rows = []
    for ranks in args.ranks:
        argv = [sys.executable, __file__, "--worker", "--repeats", str(args.repeats)]
        result = launch.run(ranks, argv, timeout=1200)
        if result.returncode != 0 or result.timed_out:
            sys.exit(f"{ranks} ranks failed:\n{result.output}")
        rows += json.loads([line for line in result.output.splitlines() if line.startswith("[")][-1])
    print(f"{'ranks':>5} {'n':>3} {'b':>2} {'transport':<12} {'ms/grid':>8} {'vs p2p':>7}")
    for row in rows:
        print(
            f"{row['ranks']:>5} {row['n']:>3} {row['batch']:>2} {row['transport']:<12} "
            f"{row['ms_per_grid']:>8.3f} {row['ratio_to_p2p']:>7.2f}"
        )
    (ROOT / "results").mkdir(exist_ok=True)
    (ROOT / "results" / "transports.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
