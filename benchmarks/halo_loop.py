"""One rank's part of the oversubscription benchmark. Run under the launcher; rank 0
prints one JSON line.

--mode apply: repeated flat-original applies on small periodic grids (its transport
waits in MPI_Waitall), timed per apply as the slowest rank sees it.
--mode poll: a ring exchange whose ranks spin on MPI_Testall, as a polling transport
(one-sided notification, progress between compute blocks) does.
"""

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
    parser.add_argument("--mode", choices=("apply", "poll"), default="apply")
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    if args.mode == "poll":
        poll(comm, args.applies)
        return
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


def poll(comm: MPI.Comm, blocks: int, per_block: int = 20) -> None:
    left, right = (comm.rank - 1) % comm.size, (comm.rank + 1) % comm.size
    send, receive = np.zeros(1024), np.empty(1024)
    times = []
    for _ in range(blocks):
        comm.Barrier()
        start = time.perf_counter()
        for _ in range(per_block):
            requests = [comm.Irecv(receive, source=left), comm.Isend(send, dest=right)]
            while not MPI.Request.Testall(requests):
                pass
        times.append(comm.allreduce((time.perf_counter() - start) / per_block, op=MPI.MAX))
    if comm.rank == 0:
        print(json.dumps({"ranks": comm.size, "median_ms_per_apply": 1e3 * float(np.median(times))}))


if __name__ == "__main__":
    main()
