"""``hybridfd tune`` and ``python -m hybridfd.tune``: tune one problem on the ranks it runs
on and print the trials, the choice and where the tuning's time went.

Run on the ranks to tune for::

    python -m hybridfd.launch -n 2 -- python -m hybridfd.tune --shape 48 48 48 --grids 64
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hybridfd._argtypes import positive_float, positive_int
from hybridfd.tune.budget import JOB_GRIDS
from hybridfd.tune.driver import DEFAULT_TRIALS, tune


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hybridfd tune",
        description="Choose approach, model, schedule, transport, threads, batch and slope for one problem: "
        "the performance model ranks the candidates, short trial applies measure the best few, the "
        "winner is cached per machine and problem.",
    )
    parser.add_argument("--shape", type=positive_int, nargs=3, required=True, metavar=("NX", "NY", "NZ"))
    parser.add_argument("--grids", type=positive_int, required=True, help="G, grids per apply")
    parser.add_argument("--dtype", choices=("float64", "complex128"), default="float64")
    parser.add_argument("--radius", type=positive_int, default=2, help="stencil radius (Laplacian)")
    parser.add_argument("--non-periodic", action="store_true", help="zero boundaries instead of periodic")
    parser.add_argument("--threads", type=positive_int, default=None, help="most threads a threaded model may use")
    parser.add_argument("--trials", type=positive_int, default=DEFAULT_TRIALS, help="most candidates to measure")
    parser.add_argument(
        "--budget",
        type=positive_float,
        default=None,
        help="seconds of tuning overhead allowed (default: 5 %% of the model's time for --job-grids grids)",
    )
    parser.add_argument(
        "--job-grids", type=positive_int, default=JOB_GRIDS, help="grids the job applies in all (for the budget)"
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="cache file (default $HYBRIDFD_TUNE_CACHE or ~/.cache/hybridfd/tune.json)",
    )
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    parser.add_argument("--calibration", type=Path, default=None, help="calibration file to read")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from mpi4py import MPI
    from rich.console import Console
    from rich.table import Table

    from hybridfd.decomposition import Decomposition
    from hybridfd.domain import Domain
    from hybridfd.stencil import Stencil

    periodic = (not args.non_periodic,) * 3
    try:
        domain = Domain(shape=tuple(args.shape), periodic=periodic, dtype=args.dtype)
        dec = Decomposition(domain, MPI.COMM_WORLD)
        stencil = Stencil.laplace(args.radius, 0.2)
        decision = tune(
            dec,
            stencil,
            args.grids,
            threads=args.threads,
            cache=False if args.no_cache else args.cache,
            calibration=args.calibration,
            trials=args.trials,
            budget=args.budget,
            job_grids=args.job_grids,
        )
    except (ValueError, TypeError) as error:
        if MPI.COMM_WORLD.rank == 0:
            print(f"hybridfd tune: {error}", file=sys.stderr)
        return 2
    if MPI.COMM_WORLD.rank == 0:
        console = Console()
        if decision.trials:
            table = Table(title=f"trials (slowest rank, {decision.trial_grids} grids per chunk)")
            table.add_column("setting")
            table.add_column("predicted ms", justify="right")
            table.add_column("measured ms", justify="right")
            table.add_column("error", justify="right")
            table.add_column("samples")
            for trial in decision.trials:
                measured = "refused" if trial.measured is None else f"{trial.measured * 1e3:.3f}"
                error = "" if trial.measured is None else f"{(trial.predicted / trial.measured - 1) * 100:+.0f} %"
                table.add_row(trial.candidate.label(), f"{trial.predicted * 1e3:.3f}", measured, error, trial.note)
            console.print(table)
        console.print(f"chosen: {decision.candidate.label()} (from the {decision.source}; {decision.cache_status})")
        console.print(f"tuning time: {decision.tuning_seconds:.3f} s")
        if decision.budget_seconds is not None:
            console.print(f"overhead budget: {decision.budget_seconds * 1e3:.1f} ms")
        if decision.race:
            console.print(f"race: {decision.race}")
        if decision.parts:
            parts = ", ".join(f"{name} {seconds * 1e3:.1f}" for name, seconds in decision.parts.items())
            console.print(f"where it went (rank 0, ms): {parts}")
    return 0
