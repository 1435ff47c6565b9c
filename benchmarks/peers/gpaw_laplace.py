"""GPAW's own Laplace operator on the comparison job (run by compare_gpaw.py, under
GPAW's Python and mpiexec, with GPAW_MPI_BACKEND=mpi4py). Prints one JSON line on rank 0.

The input is the deterministic function of the global point in job.py, so the
checksum of the result can be compared with hybridfd's.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from mpi4py import MPI

try:
    from gpaw.old.grid_descriptor import GridDescriptor
except ImportError:  # GPAW before the "old" package
    from gpaw.grid_descriptor import GridDescriptor
from gpaw.fd_operators import Laplace
from job import field


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shape", type=int, required=True)
    parser.add_argument("--grids", type=int, required=True)
    parser.add_argument("--dtype", default="float64")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    from gpaw.mpi import world

    comm = MPI.COMM_WORLD
    n, spacing = args.shape, 0.2
    dtype = complex if args.dtype == "complex128" else float
    gd = GridDescriptor((n, n, n), cell_cv=(n * spacing,) * 3, pbc_c=True, comm=world)
    lap = Laplace(gd, 1.0, 2, dtype)
    a = gd.empty(args.grids, dtype)
    b = gd.empty(args.grids, dtype)
    g, x, y, z = np.meshgrid(
        np.arange(args.grids), *(np.arange(gd.beg_c[c], gd.end_c[c]) for c in range(3)), indexing="ij"
    )
    a[:] = field(g, x, y, z, n) * (1 + 0.5j if dtype is complex else 1)
    # Complex grids need Bloch phases in GPAW's apply (its C code reads them); all ones
    # is the plain periodic boundary hybridfd applies.
    phases = np.ones((3, 2), complex) if dtype is complex else None
    lap.apply(a, b, phases)
    times = []
    for _ in range(args.repeats):
        comm.Barrier()
        start = time.perf_counter()
        lap.apply(a, b, phases)
        times.append(comm.allreduce(time.perf_counter() - start, op=MPI.MAX))
    checksum = comm.allreduce(complex(np.sum(b * np.conj(a))), op=MPI.SUM)
    if comm.rank == 0:
        print(
            "RESULT "
            + json.dumps(
                {
                    "ms_per_grid": 1e3 * float(np.median(times)) / args.grids,
                    "process_grid": [int(p) for p in gd.parsize_c],
                    "checksum": [checksum.real, checksum.imag],
                }
            )
        )


if __name__ == "__main__":
    main()
