"""Runs every module in tests/mpi/ under `mpiexec -n N` for each N the module declares.

A module declares its rank counts with a top-level ``RANKS = (...)``. Each (module, N)
is one test here: it launches pytest on N ranks through hybridfd's launcher, with a
timeout that kills a hung run and fails the test with every rank's output attached.
One rank's failure aborts all ranks (see tests/mpi/conftest.py) and fails the test. A
module may also declare ``ENVIRONMENT = {...}``: variables set for its ranks.

By hand: .venv/bin/python -m hybridfd.launch -n 4 -- .venv/bin/python -m pytest tests/mpi/test_apply.py -k periodic
"""

from __future__ import annotations

import ast
import os
import sys
from pathlib import Path

import pytest

from hybridfd import launch

MPI_TESTS = Path(__file__).parent / "mpi"
TIMEOUT_SECONDS = float(os.environ.get("HYBRIDFD_MPI_TEST_TIMEOUT", "600"))


def declared(module: Path, name: str) -> object:
    """The value of a top-level ``name = <literal>`` in ``module``, or None."""
    for node in ast.parse(module.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return ast.literal_eval(node.value)
    return None


def declared_ranks(module: Path) -> tuple[int, ...]:
    ranks = declared(module, "RANKS")
    if ranks is None:
        raise ValueError(f"{module} has no top-level RANKS = (...) declaration")
    return tuple(ranks)


SUITES = [(module, n) for module in sorted(MPI_TESTS.glob("test_*.py")) for n in declared_ranks(module)]


def run_suite(module: Path, ranks: int, timeout: float = TIMEOUT_SECONDS) -> launch.Result:
    """A module may declare ``ENVIRONMENT = {...}`` for its ranks, e.g. to start MPI at a
    lower thread level (mpi4py reads MPI4PY_RC_THREAD_LEVEL)."""
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--no-header", str(module)]
    environment = {"HYBRIDFD_MPI_SUITE": "1", **(declared(module, "ENVIRONMENT") or {})}
    return launch.run(ranks, argv, timeout=timeout, extra_env=environment)


@pytest.mark.parametrize(("module", "ranks"), SUITES, ids=[f"{m.stem}-np{n}" for m, n in SUITES])
def test_mpi_suite(module: Path, ranks: int) -> None:
    result = run_suite(module, ranks)
    report = f"$ {' '.join(result.command)}\n{result.output}"
    if result.timed_out:
        pytest.fail(f"killed after {TIMEOUT_SECONDS:.0f} s (hung?)\n{report}", pytrace=False)
    if result.returncode != 0:
        pytest.fail(f"exit code {result.returncode}\n{report}", pytrace=False)
    assert " passed" in result.output, report
