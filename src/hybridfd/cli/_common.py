"""What the subcommands share: option types that name the bad value, ``-n N``
(relaunch under mpiexec through :mod:`hybridfd.launch`), and writing a result."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import Any

#: Set for the ranks a ``-n N`` relaunch starts, so they run the command instead of relaunching.
LAUNCHED_ENV = "HYBRIDFD_CLI_RANKS"


class UsageError(ValueError):
    """Bad input found after parsing (e.g. a process grid that does not fit the ranks): exit 2."""


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def nonnegative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} must be at least 0")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text} must be greater than 0")
    return value


def fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} must be between 0 and 1")
    return value


def byte_size(text: str) -> int:
    """``4096``, ``4k``/``4KiB``, ``4M``/``4MiB``, ``1G`` (powers of 1024) -> bytes."""
    units = {"": 1, "b": 1, "k": 1024, "kib": 1024, "m": 1024**2, "mib": 1024**2, "g": 1024**3, "gib": 1024**3}
    stripped = text.strip().lower()
    number = stripped.rstrip("kmgib")
    unit = stripped[len(number) :]
    try:
        value = int(number) * units[unit]
    except (ValueError, KeyError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a size in bytes (e.g. 4096, 64k, 4M)") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1 byte")
    return value


def periodic_axes(text: str) -> tuple[bool, bool, bool]:
    """``xyz`` (all periodic, the default), any subset like ``xy``, or ``none``."""
    lowered = text.strip().lower()
    if lowered == "none":
        return (False, False, False)
    if not lowered or set(lowered) - set("xyz") or len(set(lowered)) != len(lowered):
        raise argparse.ArgumentTypeError(f"{text!r}: give the periodic axes as a subset of 'xyz' (e.g. xy) or 'none'")
    return tuple(axis in lowered for axis in "xyz")


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
