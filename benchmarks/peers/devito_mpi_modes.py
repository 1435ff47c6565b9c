"""Which of Devito's MPI modes (DEVITO_MPI=basic|diag2|overlap|full) change anything for
the comparison's operator: the generated C of a one-pass `Eq(v, u.laplace)` and of a time
loop `Eq(u.forward, u + dt * u.laplace)`, per mode, on 2 ranks (a hash and the MPI calls
in each). Run under Devito's mpiexec:

    DEVITO_LANGUAGE=C DEVITO_LOGGING=WARNING .peers/devito/bin/mpiexec -n 2 \\
        .peers/devito/bin/python benchmarks/peers/devito_mpi_modes.py

It shows why compare_peers.py times Devito in one mode: a one-pass operator's code is the
same in every mode and calls no MPI (its halos are exchanged from Python before the C
runs); only the time loop's code differs between modes.
"""

from __future__ import annotations

import hashlib

from mpi4py import MPI

# Devito sets mpi4py.rc.initialize = False.
if not MPI.Is_initialized():
    MPI.Init()

import numpy as np  # noqa: E402
from devito import Eq, Function, Grid, Operator, TimeFunction, configuration  # noqa: E402


def describe(code: str) -> str:
    calls = sorted({word.split("(")[0] for word in code.split() if word.startswith("MPI_") and "(" in word})
    return f"{hashlib.sha1(code.encode()).hexdigest()[:10]} MPI calls: {', '.join(calls) or 'none'}"


def main() -> None:
    for mode in ("basic", "diag2", "overlap", "full"):
        configuration["mpi"] = mode
        grid = Grid(shape=(16 * MPI.COMM_WORLD.size, 16, 16), topology=(MPI.COMM_WORLD.size, 1, 1), dtype=np.float64)
        u, v = (Function(name=name, grid=grid, space_order=4, dtype=np.float64) for name in "uv")
        one_pass = str(Operator(Eq(v, u.laplace)).ccode)
        w = TimeFunction(name="w", grid=grid, space_order=4, dtype=np.float64)
        time_loop = str(Operator(Eq(w.forward, w + 0.01 * w.laplace)).ccode)
        if MPI.COMM_WORLD.rank == 0:
            print(f"{mode:8s} one pass: {describe(one_pass)} | time loop: {describe(time_loop)}", flush=True)


if __name__ == "__main__":
    main()
