"""Set-up for the modules run under mpiexec (see tests/test_mpi_suites.py).

Outside mpiexec these modules are not collected: test_mpi_suites.py launches them. Under
mpiexec, a failure on one rank prints that rank's report and aborts every rank, so the
other ranks never wait in a collective the failed rank will not reach.
"""

from __future__ import annotations

import os

import pytest

if not os.environ.get("HYBRIDFD_MPI_SUITE"):
    collect_ignore_glob = ["test_*.py"]
else:
    from mpi4py import MPI

    from hybridfd import launch

    @pytest.fixture
    def comm() -> MPI.Comm:
        return MPI.COMM_WORLD

    def pytest_runtest_logreport(report: pytest.TestReport) -> None:
        if report.failed:
            rank = MPI.COMM_WORLD.rank
            launch.abort(
                MPI.COMM_WORLD, f"\n[rank {rank}] FAILED {report.nodeid} ({report.when})\n{report.longreprtext}\n"
            )
