"""A pytest plugin that runs GPAW's own tests with hybridfd's operators in place of GPAW's.

Loaded with ``-p gpaw_swap`` (tests/gpaw on PYTHONPATH) in GPAW's environment, before any
test module is imported, it replaces ``Laplace``, ``GUCLaplace`` and ``Gradient`` in
``gpaw.fd_operators`` (and in any GPAW module already holding them) by builders that make
GPAW's operator and return :func:`hybridfd.gpaw.from_gpaw` of it, so each test applies
hybridfd's stencil with GPAW's coefficients and offsets. ``FDOperator`` is replaced in the
collected test modules only: GPAW's own modules subclass it (gpaw/helmholtz.py), which a
builder cannot stand in for. `make test-gpaw` runs GPAW's gpaw/test/fd_ops this way on
1, 2 and 4 ranks.

So that a swap that missed cannot pass unnoticed, the plugin counts the applies of both:
the run fails if any GPAW finite-difference operator was applied, or if no hybridfd
one was. A failure on one rank aborts every rank, as in tests/gpaw/conftest.py.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

import gpaw.fd_operators as fd_operators
import gpaw.utilities
import numpy as np
import pytest
from mpi4py import MPI

import hybridfd.gpaw as hfg
from hybridfd import launch

#: Replaced in GPAW's modules; FDOperator in the test modules too.
SWAPPED = ("Laplace", "GUCLaplace", "Gradient")
ORIGINAL = {name: getattr(fd_operators, name) for name in (*SWAPPED, "FDOperator")}
#: Applies per operator: "hybridfd <name>" for the swapped ones, "GPAW <class>" for GPAW's own.
APPLIES: Counter[str] = Counter()


def _counted(name: str, operator: hfg.FDOperator) -> hfg.FDOperator:
    apply = operator.apply

    def counted_apply(in_xg: np.ndarray, out_xg: np.ndarray, phase_cd: np.ndarray | None = None) -> None:
        APPLIES[f"hybridfd {name}"] += 1
        apply(in_xg, out_xg, phase_cd)

    operator.apply = counted_apply
    return operator


def _swapped(name: str) -> Callable[..., hfg.FDOperator]:
    original = ORIGINAL[name]

    def build(*args: Any, **kwargs: Any) -> hfg.FDOperator:
        xp = kwargs.get("xp", np)
        if xp is not np:
            raise TypeError(f"hybridfd applies GPAW's operators to numpy arrays only, not xp={xp!r}")
        return _counted(name, hfg.from_gpaw(original(*args, **kwargs)))

    build.__name__ = build.__qualname__ = name
    build.__doc__ = f"GPAW's {name}, applied by hybridfd.gpaw (tests/gpaw/gpaw_swap.py)."
    return build


def _count_gpaw_applies() -> None:
    for method in ("apply", "__call__"):
        original = getattr(ORIGINAL["FDOperator"], method)

        def counted(self: Any, *args: Any, _original: Callable[..., Any] = original, **kwargs: Any) -> Any:
            APPLIES[f"GPAW {type(self).__name__}"] += 1
            return _original(self, *args, **kwargs)

        setattr(ORIGINAL["FDOperator"], method, counted)


REPLACEMENTS = {name: _swapped(name) for name in ORIGINAL}


def _swap(module: Any, names: tuple[str, ...]) -> None:
    for name in names:
        if getattr(module, name, None) is ORIGINAL[name]:
            setattr(module, name, REPLACEMENTS[name])


# GPAW's conftest sends the terminal output of ranks other than 0 to gpaw.utilities.devnull,
# a text wrapper around a stream without write(); pytest 9 flushes the terminal before each
# test, which then raises io.UnsupportedOperation on those ranks. A null sink that accepts
# writes is what GPAW means by it.
gpaw.utilities._NullIO.write = lambda self, data: len(data)

for _module in list(sys.modules.values()):
    if getattr(_module, "__name__", "").startswith("gpaw"):
        _swap(_module, SWAPPED)
_count_gpaw_applies()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for module in {id(item.module): item.module for item in items if hasattr(item, "module")}.values():
        _swap(module, tuple(ORIGINAL))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.failed:
        rank = MPI.COMM_WORLD.rank
        launch.abort(MPI.COMM_WORLD, f"\n[rank {rank}] FAILED {report.nodeid} ({report.when})\n{report.longreprtext}\n")


def pytest_sessionfinish(exitstatus: int) -> None:
    gpaw_applies = {name: count for name, count in APPLIES.items() if name.startswith("GPAW")}
    ours = sum(count for name, count in APPLIES.items() if name.startswith("hybridfd"))
    if gpaw_applies or not ours:
        rank = MPI.COMM_WORLD.rank
        launch.abort(
            MPI.COMM_WORLD,
            f"\n[rank {rank}] the swap did not hold: applies {dict(APPLIES)} (GPAW's operators must apply none, "
            f"hybridfd's some); pytest's exit status {exitstatus}\n",
        )


def pytest_terminal_summary(terminalreporter: Any) -> None:
    terminalreporter.write_line(f"hybridfd.gpaw in GPAW's tests, applies on rank 0: {dict(sorted(APPLIES.items()))}")


def pytest_configure(config: pytest.Config) -> None:
    # GPAW registers its markers in its source tree's pytest.ini, which is not installed.
    for marker in ("ci: test included in GPAW's CI", "serial: run in serial only", "parallel: run only in parallel"):
        config.addinivalue_line("markers", marker)
