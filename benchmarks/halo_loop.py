"""One rank's part of the oversubscription benchmark: repeated flat-original applies on
small periodic grids (communication-heavy), timed per apply as the slowest rank sees it.
Run under the launcher; rank 0 prints one JSON line."""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from mpi4py import MPI

import hybridfd as hf


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", type=int, default=48)
    parser.add_argument("--grids", type=int, default=4)
    parser.add_argument("--applies", type=int, default=30)
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    dec = hf.Decomposition(hf.Domain((args.shape,) * 3), comm)
    op = hf.Operator(dec, hf.Stencil.laplace(2))
    a = np.random.default_rng(comm.rank).standard_normal(dec.local_shape(args.grids))
    out = np.empty_like(a)
    op.apply(a, out=out)
    times = []
    for _ in range(args.applies):
        comm.Barrier()
        start = time.perf_counter()
        op.apply(a, out=out)
        times.append(comm.allreduce(time.perf_counter() - start, op=MPI.MAX))
    if comm.rank == 0:
        print(
            json.dumps(
                {
                    "ranks": comm.size,
                    "grid": dec.grid,
                    "median_ms_per_apply": 1e3 * float(np.median(times)),
                    "grids": args.grids,
                    "shape": args.shape,
                }
            )
        )


if __name__ == "__main__":
    main()
