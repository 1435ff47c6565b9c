"""GPAW's Laplacian of a non-orthogonal cell, `GUCLaplace`, on the general-stencil jobs
(run by compare_peers.py, under GPAW's Python, one rank). Prints one RESULT JSON line.

Job: G periodic n^3 grids of an fcc cell (GPAW's primitive cell, vectors a/2 (0, 1, 1),
a/2 (1, 0, 1), a/2 (1, 1, 0), spacing about 0.2 Bohr), `GUCLaplace(gd, 1.0, order,
dtype)` for each order and dtype asked: its offsets and weights (the stencil hybridfd
applies, so both codes apply the same operator), its apply's milliseconds per grid
(median of --repeats applies of the whole batch, after one untimed) and per-grid
checksums of the result, compared with hybridfd's by the driver.
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
from gpaw.fd_operators import GUCLaplace
from job import RESULT_PREFIX, field, interior_checksums

#: Spacing of the grid along each cell vector (Bohr).
SPACING = 0.2


def fcc_cell(n: int) -> np.ndarray:
    """GPAW's primitive fcc cell whose n points per vector are SPACING apart."""
    a = 2 * SPACING * n / np.sqrt(2)
    return a / 2 * np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 1.0], [1.0, 1.0, 0.0]])


def one_job(n: int, grids: int, order: int, dtype: str, repeats: int) -> dict:
    from gpaw.mpi import world

    kind = complex if dtype == "complex128" else float
    gd = GridDescriptor((n, n, n), fcc_cell(n), pbc_c=True, comm=world)
    operator = GUCLaplace(gd, 1.0, order, kind)
    a = gd.empty(grids, kind)
    b = gd.empty(grids, kind)
    g, x, y, z = np.meshgrid(np.arange(grids), *(np.arange(n),) * 3, indexing="ij")
    a[:] = field(g, x, y, z, n) * (1 + 0.5j if kind is complex else 1)
    del g, x, y, z
    # Complex grids need Bloch phases in GPAW's apply; all ones is the plain periodic
    # boundary hybridfd applies.
    phases = np.ones((3, 2), complex) if kind is complex else None
    operator.apply(a, b, phases)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        operator.apply(a, b, phases)
        times.append(time.perf_counter() - start)
    return {
        "order": order,
        "dtype": dtype,
        "offsets": [[int(c) for c in offset] for offset in operator.offset_pc],
        "weights": [float(w) for w in operator.coef_p],
        "description": operator.description,
        "ms_per_grid": 1e3 * float(np.median(times)) / grids,
        "checksums": interior_checksums(a, b, [0, 0, 0], (n, n, n), MPI.COMM_WORLD, radius=0),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shape", type=int, required=True, help="n: each grid is n^3")
    parser.add_argument("--grids", type=int, required=True)
    parser.add_argument("--orders", type=int, nargs="+", default=[2, 3])
    parser.add_argument("--dtypes", nargs="+", default=["float64", "complex128"])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    jobs = [
        one_job(args.shape, args.grids, order, dtype, args.repeats) for dtype in args.dtypes for order in args.orders
    ]
    print(RESULT_PREFIX + json.dumps({"jobs": jobs}), flush=True)


if __name__ == "__main__":
    main()
