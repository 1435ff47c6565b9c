"""Run one apply configuration: median time of several applies, throughput, and the
largest error against the numpy reference (hybridfd.reference) on the whole grid.

    hybridfd run -n 2 --approach flat-optimized --grids 16 --shape 64 --dtype complex128

Every option of the Operator is here (approach, model, threads, master share, schedule,
transport, batch, slope, slope kind, progress); unset ones keep the approach's preset. The input is random
(seeded), scattered from rank 0; the result is gathered back to rank 0 and compared with
the reference, which for every approach is bit-identical (docs/design.md).
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from hybridfd._argtypes import fraction, nonnegative_int, periodic_axes, positive_float, positive_int
from hybridfd.arrays import empty_aligned
from hybridfd.cli._common import UsageError, add_output_option, add_ranks_option, relaunch, save_and_show

HELP = "time one apply configuration and check it against the numpy reference"

#: A result that differs from the reference by more than this (relative) fails the run.
TOLERANCE = 1e-12


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_ranks_option(parser)
    add_problem_arguments(parser)
    add_operator_arguments(parser)
    timing = parser.add_argument_group("timing")
    timing.add_argument("--repeats", type=positive_int, default=5, help="timed applies; the median is reported")
    timing.add_argument("--seed", type=nonnegative_int, default=2009, help="seed of the random input")
    add_output_option(parser, "results/run.json")


def add_problem_arguments(parser: argparse.ArgumentParser) -> None:
    """The problem's options (grids, shape, dtype, periodic axes, stencil, process grid);
    ``hybridfd trace`` shares them."""
    problem = parser.add_argument_group("problem")
    problem.add_argument("--grids", type=positive_int, default=8, metavar="G", help="number of grids (default 8)")
    problem.add_argument(
        "--shape",
        type=positive_int,
        nargs="+",
        default=[64],
        metavar="N",
        help="global grid shape: N (a cube) or NX NY NZ (default 64)",
    )
    problem.add_argument("--dtype", choices=("float64", "complex128"), default="float64")
    problem.add_argument(
        "--periodic",
        type=periodic_axes,
        default=(True, True, True),
        metavar="AXES",
        help="periodic axes: a subset of xyz, or none (default xyz)",
    )
    problem.add_argument("--radius", type=positive_int, default=2, help="stencil radius (default 2: 13 points)")
    problem.add_argument("--spacing", type=positive_float, default=0.2, help="grid spacing (default 0.2)")
    problem.add_argument(
        "--grid",
        type=positive_int,
        nargs=3,
        metavar=("PX", "PY", "PZ"),
        help="process grid (default: the one with the smallest total surface)",
    )


def add_operator_arguments(parser: argparse.ArgumentParser) -> None:
    """Every option of the Operator; unset ones keep the approach's preset."""
    import hybridfd as hf

    operator = parser.add_argument_group("operator (unset options keep the approach's preset)")
    operator.add_argument("--approach", choices=hf.approach_names(), default="flat-original")
    operator.add_argument("--model", choices=hf.model_names(), help="who does what inside a rank")
    operator.add_argument(
        "--threads", type=positive_int, help="threads of a threaded model (default OMP_NUM_THREADS or 1)"
    )
    operator.add_argument(
        "--master-share", type=fraction, metavar="F", help="thread 0's share of the compute (funneled-overlap)"
    )
    operator.add_argument("--schedule", choices=hf.schedule_names())
    operator.add_argument("--transport", choices=hf.transport_names())
    operator.add_argument("--batch", type=positive_int, help="grids per message (b)")
    operator.add_argument("--slope", type=nonnegative_int, help="number of smaller batches first (n)")
    operator.add_argument("--slope-kind", choices=("geometric", "linear"))
    operator.add_argument("--progress", type=nonnegative_int, help="test messages in flight every k grids computed")


def _shape(values: list[int]) -> tuple[int, int, int]:
    if len(values) == 1:
        return (values[0],) * 3
    if len(values) == 3:
        return tuple(values)
    raise UsageError(f"--shape takes 1 or 3 values, got {len(values)}: {' '.join(map(str, values))}")


def build(args: argparse.Namespace, shape: tuple[int, int, int], comm: object) -> tuple:
    """(domain, decomposition, stencil, operator) from the problem and operator options;
    bad values raise UsageError, alike on every rank, before any message."""
    from hybridfd.build import build as from_options

    try:
        return from_options(args, shape, comm)
    except (ValueError, TypeError) as error:  # raised alike on every rank, before any message
        raise UsageError(str(error)) from None


def random_input(args: argparse.Namespace, shape: tuple[int, int, int], decomposition: object) -> tuple:
    """The seeded random batch (whole, on rank 0; None elsewhere) and this rank's part of it.

    Raises UsageError, alike on every rank, for a batch rank 0 could not hold."""
    # Rank 0 holds the whole batch three times (input, gathered result, reference).
    held = 3 * args.grids * int(np.prod(shape)) * np.dtype(args.dtype).itemsize
    memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    if held > memory:
        raise UsageError(
            f"--grids {args.grids} of {'x'.join(map(str, shape))} {args.dtype} need {held / 1e9:.3g} GB on rank 0 "
            f"(the whole batch, the gathered result and the reference), more than this machine's "
            f"{memory / 1e9:.3g} GB"
        )
    batch = None
    if decomposition.comm.rank == 0:
        rng = np.random.default_rng(args.seed)
        batch = rng.standard_normal((args.grids, *shape))
        if args.dtype == "complex128":
            batch = batch + 1j * rng.standard_normal(batch.shape)
    return batch, decomposition.scatter(batch)


def main(args: argparse.Namespace) -> int:
    shape = _shape(args.shape)
    launched = relaunch(args)
    if launched is not None:
        return launched

    from mpi4py import MPI

    import hybridfd as hf
    from hybridfd import display, results
    from hybridfd.timing import apply_samples

    comm = MPI.COMM_WORLD
    domain, decomposition, stencil, op = build(args, shape, comm)
    batch, a = random_input(args, shape, decomposition)
    out = empty_aligned(a.shape, a.dtype)
    op.apply(a, out=out)  # warm-up, and the result checked below
    gathered = decomposition.gather(out)

    samples = []
    with display.DelayedProgress("applies", args.repeats, enabled=comm.rank == 0) as progress:
        for _ in range(args.repeats):
            samples += apply_samples(op, a, out, 1)
            progress.advance()
    if comm.rank != 0:
        return 0

    expected = hf.reference.apply(stencil, batch, periodic=domain.periodic)
    scale = float(np.abs(expected).max()) or 1.0
    error = float(np.abs(gathered - expected).max()) / scale
    seconds = float(np.median(samples))
    points = args.grids * int(np.prod(shape))
    itemsize = np.dtype(args.dtype).itemsize
    row = {
        "approach": op.config["approach"],
        "model": op.config["model"],
        "threads": op.config["threads"],
        "schedule": op.config["schedule"],
        "transport": op.config["transport"],
        "batch": op.config["batch"],
        "slope": op.config["slope"],
        "ranks": comm.size,
        "process_grid": list(decomposition.grid),
        "grids": args.grids,
        "shape": list(shape),
        "dtype": args.dtype,
        "median_ms": 1e3 * seconds,
        "min_ms": 1e3 * min(samples),
        "max_ms": 1e3 * max(samples),
        "ms_per_grid": 1e3 * seconds / args.grids,
        "mpoints_per_s": points / seconds / 1e6,
        # One read of the input and one write of the output per point.
        "gb_per_s": 2 * points * itemsize / seconds / 1e9,
        "max_relative_error": error,
        "bit_identical_to_reference": bool(np.array_equal(gathered, expected)),
        "samples_ms": [1e3 * s for s in samples],
        "config": op.config,
    }
    columns = [
        {"key": "approach", "title": "approach"},
        {"key": "model", "title": "model"},
        {"key": "threads", "title": "threads per rank"},
        {"key": "schedule", "title": "schedule"},
        {"key": "transport", "title": "transport"},
        {"key": "batch", "title": "b"},
        {"key": "slope", "title": "slope"},
        {"key": "process_grid", "title": "process grid"},
        {"key": "median_ms", "title": "median ms", "format": ".3f"},
        {"key": "ms_per_grid", "title": "ms/grid", "format": ".3f"},
        {"key": "mpoints_per_s", "title": "Mpoints/s", "format": ".1f"},
        {"key": "gb_per_s", "title": "GB/s", "format": ".2f"},
        {"key": "max_relative_error", "title": "max rel. error", "format": ".1e"},
        {"key": "bit_identical_to_reference", "title": "== reference"},
    ]
    parameters = {k: v for k, v in vars(args).items() if k not in ("handler", "subparser", "argv")}
    parameters["shape"] = list(shape)
    title = (
        f"hybridfd run: {args.grids} grids of {'x'.join(map(str, shape))} {args.dtype}, "
        f"{comm.size} ranks, median of {args.repeats}"
    )
    result = results.new_result(
        "run", "run", title, parameters, columns, [row], config=op.config, argv=args.argv, notes=[]
    )
    save_and_show(result, args.output)
    if error > TOLERANCE:
        display.console(stderr=True).print(f"ERROR: max relative error {error:.2e} exceeds {TOLERANCE:.0e}")
        return 1
    return 0
