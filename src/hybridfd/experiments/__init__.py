"""The papers' experiments, one module each, found through :func:`registry`.

An experiment module (any module here whose name does not start with ``_``) defines:

- ``NAME`` (the CLI name, e.g. ``"message-size"``) and ``SUMMARY`` (one line);
- ``add_arguments(parser)``: its options, defaults sized for a 2-core machine;
- ``run(args) -> Outcome``: the driver, in one process; it launches MPI runs of its
  ``worker`` with :func:`sub_run` and turns their numbers into table rows;
- ``worker(comm, params) -> dict | None``: runs under mpiexec; rank 0 returns the numbers;
- ``plot(result, path)``: draws the PNG from a saved result (also used by ``hybridfd report``).

So a new experiment is one new module; the CLI (``hybridfd bench``) lists it unchanged.
"""

from __future__ import annotations

import functools
import importlib
import json
import pkgutil
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

#: Environment for every MPI run of an experiment: one rank per core already, so BLAS
#: (numpy's dgemm in ``cannon``) must not start threads of its own.
SUB_RUN_ENVIRONMENT = {"OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


class ExperimentInputError(ValueError):
    """Options that cannot make a valid experiment (the CLI exits 2 with this message)."""


class ExperimentRunError(RuntimeError):
    """An MPI run of an experiment failed or timed out; the message holds its output."""


@dataclass
class Outcome:
    """What an experiment's driver hands the CLI: a table of rows, with notes."""

    title: str
    columns: list[dict[str, str]]
    rows: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)


@functools.cache
def registry() -> dict[str, ModuleType]:
    """Experiment name -> module, sorted by name."""
    found = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        found[module.NAME] = module
    return dict(sorted(found.items()))


def sub_run(name: str, ranks: int, params: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Run experiment ``name``'s worker on ``ranks`` ranks through hybridfd.launch; returns
    what its rank 0 returned. Raises :class:`ExperimentRunError` with the run's output.

    In a terminal the ranks' output streams through (rank 0 draws its progress bar);
    otherwise it is captured and shown only if the run fails.
    """
    from hybridfd import launch

    terminal = sys.stdout.isatty()
    env = dict(SUB_RUN_ENVIRONMENT)
    if terminal:  # the ranks write to pipes: tell rich it is a terminal, and how wide
        env.update(HYBRIDFD_TERMINAL="1", COLUMNS=str(shutil.get_terminal_size().columns))

    with tempfile.TemporaryDirectory(prefix="hybridfd-") as tmp:
        params_path = Path(tmp) / "params.json"
        out_path = Path(tmp) / "out.json"
        params_path.write_text(json.dumps(params))
        argv = [sys.executable, "-m", "hybridfd.experiments", name, str(params_path), str(out_path)]
        result = launch.run(ranks, argv, timeout=timeout, extra_env=env, capture=not terminal)
        command = " ".join(result.command)
        if result.timed_out:
            raise ExperimentRunError(
                f"{name} on {ranks} ranks killed after {timeout:.0f} s\n$ {command}\n{result.output}"
            )
        if result.returncode != 0 or not out_path.exists():
            raise ExperimentRunError(
                f"{name} on {ranks} ranks failed (exit code {result.returncode})\n$ {command}\n{result.output}"
            )
        return json.loads(out_path.read_text())


def check_ranks(option: str, values: list[int]) -> list[int]:
    """Sorted distinct rank (or core) counts; a repeated value is an input error."""
    if len(set(values)) != len(values):
        raise ExperimentInputError(f"{option} {' '.join(map(str, values))}: each count may appear once")
    return sorted(values)
