"""What the subcommands share: ``-n N`` (relaunch under mpiexec through
:mod:`hybridfd.launch`) and writing a result. The option types that name the bad value
are the library's (:mod:`hybridfd._argtypes`), as its own commands use them too."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from hybridfd._argtypes import positive_int

#: Set for the ranks a ``-n N`` relaunch starts, so they run the command instead of relaunching.
LAUNCHED_ENV = "HYBRIDFD_CLI_RANKS"


class UsageError(ValueError):
    """Bad input found after parsing (e.g. a process grid that does not fit the ranks): exit 2."""


def add_ranks_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-n",
        "--ranks",
        type=positive_int,
        metavar="N",
        help="run on N MPI ranks: relaunches this command under mpiexec through hybridfd.launch "
        "(idle ranks yield their core) and prints the mpiexec line",
    )
    parser.set_defaults(launchable=True)


def relaunch(args: argparse.Namespace) -> int | None:
    """With ``-n N`` and not yet relaunched: run this same command on N ranks, return its exit code.

    Returns None when the command should run here (no ``-n``, or this is a relaunched rank).
    """
    if args.ranks is None:
        return None
    from mpi4py import MPI

    if os.environ.get(LAUNCHED_ENV):
        if MPI.COMM_WORLD.size != int(os.environ[LAUNCHED_ENV]):
            raise UsageError(f"-n {args.ranks}: running on {MPI.COMM_WORLD.size} ranks, expected {args.ranks}")
        return None
    if MPI.COMM_WORLD.size > 1:
        raise UsageError(
            f"-n {args.ranks}: already running on {MPI.COMM_WORLD.size} ranks under mpiexec; "
            "give either -n or mpiexec, not both"
        )
    from hybridfd import launch

    program = [sys.executable, "-m", "hybridfd", *args.argv[1:]]
    extra = {LAUNCHED_ENV: str(args.ranks)}
    if sys.stdout.isatty():
        # The ranks write to pipes: tell rich it is a terminal, and how wide.
        extra["HYBRIDFD_TERMINAL"] = "1"
        extra["COLUMNS"] = str(shutil.get_terminal_size().columns)
    print("launch:", " ".join(launch.command(args.ranks, program)), flush=True)
    return launch.run(args.ranks, program, extra_env=extra, capture=False).returncode


def add_output_option(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        default=Path(default),
        metavar="PATH",
        help=f"where the JSON result goes (default: {default})",
    )


def save_and_show(result: dict[str, Any], path: Path) -> None:
    """Print ``result`` as a table, validate it against the schema and save it."""
    from hybridfd import display, results

    out = display.console()
    display.show(result, out)
    results.save(result, path)
    out.print(f"result: {path}", highlight=False)
    if result.get("plot"):
        out.print(f"plot: {result['plot']}", highlight=False)
