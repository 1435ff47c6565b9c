"""GPAW's own Laplace operator on the comparison jobs (run by compare_peers.py, under
GPAW's Python and mpiexec, with GPAW_MPI_BACKEND=mpi4py). Prints one RESULT JSON line on
rank 0.

Job: G periodic grids, global shape (P*n, n, n) cut into (P, 1, 1) boxes, spacing 0.2,
GPAW's `Laplace(gd, 1.0, 2, dtype)` (13 points, O(h^4)). The input is job.field of the
global point, so per-grid checksums compare with hybridfd's. GPAW's C apply reads its
batch knob GPAW_MPI_OPTIMAL_MSG_SIZE (KiB per message, c/operators.c) from the environment
at every call, so one process times every value of --msg-sizes in turn (0: unset, one
grid per message); in the GPAW_ASYNC build that is the double-buffered batch.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
from mpi4py import MPI

try:
    from gpaw.old.grid_descriptor import GridDescriptor
except ImportError:  # GPAW before the "old" package
    from gpaw.grid_descriptor import GridDescriptor
from gpaw.fd_operators import Laplace
from job import RESULT_PREFIX, field, gather_first_grid, interior_checksums


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shape", type=int, required=True, help="n: each rank's box is n^3")
    parser.add_argument("--grids", type=int, required=True)
    parser.add_argument("--dtype", default="float64")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--msg-sizes", type=int, nargs="+", default=[0])
    parser.add_argument("--save", help="write grid 0 of the result (gathered on rank 0) to this .npy file")
    args = parser.parse_args()
    from gpaw.mpi import world

    comm = MPI.COMM_WORLD
    n, spacing = args.shape, 0.2
    shape = (n * comm.size, n, n)
    dtype = complex if args.dtype == "complex128" else float
    gd = GridDescriptor(
        shape, cell_cv=tuple(s * spacing for s in shape), pbc_c=True, comm=world, parsize_c=(comm.size, 1, 1)
    )
    lap = Laplace(gd, 1.0, 2, dtype)
    a = gd.empty(args.grids, dtype)
    b = gd.empty(args.grids, dtype)
    begin = [int(c) for c in gd.beg_c]
    g, x, y, z = np.meshgrid(
        np.arange(args.grids), *(np.arange(gd.beg_c[c], gd.end_c[c]) for c in range(3)), indexing="ij"
    )
    a[:] = field(g, x, y, z, n) * (1 + 0.5j if dtype is complex else 1)
    # Complex grids need Bloch phases in GPAW's apply (its C code reads them); all ones
    # is the plain periodic boundary hybridfd applies.
    phases = np.ones((3, 2), complex) if dtype is complex else None
    by_msg_size = {}
    for msg_size in args.msg_sizes:
        if msg_size:
            os.environ["GPAW_MPI_OPTIMAL_MSG_SIZE"] = str(msg_size)
        else:
            os.environ.pop("GPAW_MPI_OPTIMAL_MSG_SIZE", None)
        b[:] = 0
        lap.apply(a, b, phases)
        times = []
        for _ in range(args.repeats):
            comm.Barrier()
            start = time.perf_counter()
            lap.apply(a, b, phases)
            times.append(comm.allreduce(time.perf_counter() - start, op=MPI.MAX))
        by_msg_size[str(msg_size)] = {
            "ms_per_grid": 1e3 * float(np.median(times)) / args.grids,
            "checksums": interior_checksums(a, b, begin, shape, comm, radius=0),
        }
    if args.save:
        gather_first_grid(b, begin, shape, comm, args.save)
    if comm.rank == 0:
        print(
            RESULT_PREFIX
            + json.dumps(
                {
                    "by_msg_size": by_msg_size,
                    "process_grid": [int(p) for p in gd.parsize_c],
                    "async_sizes": list(lap.operator.get_async_sizes()),
                    "omp_threads": int(os.environ.get("OMP_NUM_THREADS", "1")),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
