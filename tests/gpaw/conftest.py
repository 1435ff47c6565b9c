"""Set-up for the GPAW agreement suite (`make test-gpaw`).

These modules need GPAW, which is not a dependency of hybridfd: they run in GPAW's own
environment (`make peers`) under mpiexec, with HYBRIDFD_GPAW_SUITE=1. Without it they are
not collected at all (`make test` does not run them), so nothing skips or pretends to
pass. As in tests/mpi, a failure on one rank prints that rank's report and aborts all.
"""

from __future__ import annotations

import os

import pytest

if not os.environ.get("HYBRIDFD_GPAW_SUITE"):
    collect_ignore_glob = ["test_*.py"]
else:
    from mpi4py import MPI

    from hybridfd import launch

    def pytest_runtest_logreport(report: pytest.TestReport) -> None:
        if report.failed:
            rank = MPI.COMM_WORLD.rank
            launch.abort(
                MPI.COMM_WORLD, f"\n[rank {rank}] FAILED {report.nodeid} ({report.when})\n{report.longreprtext}\n"
            )
