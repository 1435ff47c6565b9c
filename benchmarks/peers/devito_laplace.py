"""Devito's batched one-pass Laplacian on the comparison jobs (run by compare_peers.py
under Devito's own Python and mpiexec, in .peers/devito). Prints one RESULT JSON line on
rank 0.

The operator is Devito's `Operator(Eq(v, u.laplace))` on two `Function`s with a batch
dimension in front of x, y, z (not split over ranks) and `space_order=(4, 2, 2)`: the
13-point radius-2 Laplacian with 2-deep halos. Devito has no periodic boundary (its global
halo stays zero), so the job is the non-periodic one and results are compared on interior
points. The input is job.field of the global point, as for the other codes.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import time

import numpy as np
from mpi4py import MPI

# Devito sets mpi4py.rc.initialize = False; the rank count is needed before its Grid exists.
if not MPI.Is_initialized():
    MPI.Init()

from devito import Dimension, Eq, Function, Grid, Operator, configuration  # noqa: E402
from job import RESULT_PREFIX, field, gather_first_grid, interior_checksums  # noqa: E402

MPI_MODES = ("basic", "diag2", "overlap", "full")


def build(shape: tuple[int, int, int], grids: int, dtype: str, spacing: float, ranks: int) -> tuple:
    """Devito's Grid, input and output Functions (batch dimension first) and Operator."""
    # Grid dtype float64 so the 1/h^2 factors are double (its default float32 would make
    # them float and cost 1e-7 relative); the Functions carry the data type.
    grid = Grid(
        shape=shape,
        extent=tuple((n - 1) * spacing for n in shape),
        topology=(ranks, 1, 1),
        dtype=np.float64,
    )
    batch = Dimension(name="b")
    kwargs = {
        "grid": grid,
        "dimensions": (batch, *grid.dimensions),
        "shape": (grids, *shape),
        "space_order": (4, 2, 2),
        "dtype": np.dtype(dtype).type,
    }
    u = Function(name="u", **kwargs)
    v = Function(name="v", **kwargs)
    return grid, u, v, Operator(Eq(v, u.laplace), name="laplace")


def generated_code_by_mode(
    shape: tuple[int, int, int], grids: int, dtype: str, spacing: float, ranks: int
) -> dict[str, dict]:
    """Devito's generated C for each MPI mode: whether it calls MPI and a hash, so a report
    can say whether the modes differ at all for a one-pass operator."""
    modes = {}
    for mode in MPI_MODES:
        configuration["mpi"] = mode
        *_, op = build(shape, grids, dtype, spacing, ranks)
        code = str(op.ccode)
        modes[mode] = {"mpi_calls": "MPI_" in code, "code_sha1": hashlib.sha1(code.encode()).hexdigest()[:12]}
    return modes


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shape", type=int, required=True, help="n: each rank's box is n^3")
    parser.add_argument("--grids", type=int, required=True)
    parser.add_argument("--dtype", default="float64", choices=("float64", "complex128"))
    parser.add_argument("--spacing", type=float, default=0.2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--mpi-modes", action="store_true", help="also report the generated code of each MPI mode")
    parser.add_argument("--save", help="write grid 0 of the result (gathered on rank 0) to this .npy file")
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    shape = (args.shape * comm.size, args.shape, args.shape)  # cut into (P, 1, 1) boxes
    modes = generated_code_by_mode(shape, 1, args.dtype, args.spacing, comm.size) if args.mpi_modes else None
    if modes is not None:
        configuration["mpi"] = os.environ.get("DEVITO_MPI", "basic") if comm.size > 1 else 0
    grid, u, v, op = build(shape, args.grids, args.dtype, args.spacing, comm.size)
    owned = grid.distributor.glb_slices
    begin = [int(owned[d].start) for d in grid.dimensions]
    local = u.data_local  # this rank's part, local indexing (Devito's global-index view is slow)
    g, x, y, z = np.meshgrid(
        np.arange(args.grids),
        *(np.arange(b, b + e) for b, e in zip(begin, local.shape[1:], strict=True)),
        indexing="ij",
    )
    local[:] = field(g, x, y, z, args.shape) * (1 + 0.5j if args.dtype == "complex128" else 1)
    op.apply()  # compile and warm up
    times = []
    for _ in range(args.repeats):
        comm.Barrier()
        start = time.perf_counter()
        op.apply()  # exchanges u's (and v's) halos from Python, then runs the C loop
        times.append(comm.allreduce(time.perf_counter() - start, op=MPI.MAX))
    a, b = u.data_ro_domain._local, v.data_ro_domain._local
    checksums = interior_checksums(np.asarray(a), np.asarray(b), begin, shape, comm)
    if args.save:
        gather_first_grid(np.asarray(b), begin, shape, comm, args.save)
    if comm.rank == 0:
        import json

        print(
            RESULT_PREFIX
            + json.dumps(
                {
                    "ms_per_grid": 1e3 * float(np.median(times)) / args.grids,
                    "ms_per_apply_samples": [1e3 * t for t in times],
                    "process_grid": [int(p) for p in grid.distributor.topology],
                    "mpi": str(configuration["mpi"]),
                    "language": str(configuration["language"]),
                    "generated_code_by_mpi_mode": modes,
                    "interior_checksums": checksums,
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
