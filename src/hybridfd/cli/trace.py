"""Trace one apply configuration: every thread's pack, post, wait, progress, unpack and
compute events (hybridfd.trace), the profile of the GPAW journal's Fig. 7.1.

    hybridfd trace -n 2 --approach flat-optimized --grids 16 --shape 64
    hybridfd trace -n 2 --approach hybrid-master-only --threads 2 -o traces --name master-only

After one untraced warm-up apply, ``--applies`` applies are traced (each started after a
barrier). Writes NAME.trace.json (Chrome trace: open it in https://ui.perfetto.dev),
NAME.png (the timeline, one line per rank and thread) and NAME.json (the result: the
fraction of the apply time each rank and thread spent in each kind of event), all in
the output directory. The problem and operator options are those of ``hybridfd run``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from hybridfd._argtypes import nonnegative_int, positive_int
from hybridfd.arrays import empty_aligned
from hybridfd.cli._common import UsageError, add_ranks_option, relaunch, save_and_show
from hybridfd.cli.run import _shape, add_operator_arguments, add_problem_arguments, build, random_input

HELP = "trace one apply configuration: Chrome trace JSON and a timeline PNG per rank and thread"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from hybridfd.trace import DEFAULT_EVENTS_PER_THREAD

    add_ranks_option(parser)
    add_problem_arguments(parser)
    add_operator_arguments(parser)
    tracing = parser.add_argument_group("tracing")
    tracing.add_argument("--applies", type=positive_int, default=3, help="traced applies (default 3)")
    tracing.add_argument(
        "--events",
        type=positive_int,
        default=DEFAULT_EVENTS_PER_THREAD,
        metavar="N",
        help=f"events each thread's buffer holds; more are counted as dropped (default {DEFAULT_EVENTS_PER_THREAD})",
    )
    tracing.add_argument("--seed", type=nonnegative_int, default=2009, help="seed of the random input")
    parser.add_argument(
        "-o", "--output", type=Path, default=Path("results"), metavar="DIR", help="output directory (default: results)"
    )
    parser.add_argument(
        "--name", default="trace", help="file names: NAME.json, NAME.trace.json, NAME.png (default: trace)"
    )


def fraction_columns() -> list[dict[str, str]]:
    """Table columns of :meth:`hybridfd.trace.Trace.fractions` rows (shared with ``bench profile``)."""
    from hybridfd.trace import COMMUNICATION, COMPUTATION

    return [
        {"key": "rank", "title": "rank"},
        {"key": "thread", "title": "thread"},
        {"key": "traced_ms", "title": "traced ms", "format": ".2f"},
        *({"key": kind, "title": kind, "format": ".1%"} for kind in (*COMMUNICATION, *COMPUTATION)),
        {"key": "other", "title": "other", "format": ".1%"},
        {"key": "events", "title": "events"},
        {"key": "dropped", "title": "dropped"},
    ]


def main(args: argparse.Namespace) -> int:
    shape = _shape(args.shape)
    if not args.name or "/" in args.name:
        raise UsageError(f"--name {args.name!r} must be a file name without '/'")
    launched = relaunch(args)
    if launched is not None:
        return launched

    from mpi4py import MPI

    import hybridfd as hf
    from hybridfd import display, results

    comm = MPI.COMM_WORLD
    domain, decomposition, stencil, op = build(args, shape, comm)
    batch, a = random_input(args, shape, decomposition)
    out = empty_aligned(a.shape, a.dtype)
    op.apply(a, out=out)  # warm-up: buffers and persistent requests set up
    try:
        op.start_trace(args.events)
    except ValueError as error:  # raised alike on every rank (e.g. buffers beyond memory)
        raise UsageError(str(error)) from None
    for _ in range(args.applies):
        comm.Barrier()
        op.apply(a, out=out)
    op.stop_trace()
    trace = op.trace()
    gathered = decomposition.gather(out)
    if comm.rank != 0:
        return 0

    identical = bool(np.array_equal(gathered, hf.reference.apply(stencil, batch, periodic=domain.periodic)))
    chrome_path = trace.save_chrome(args.output / f"{args.name}.trace.json")
    png_path = args.output / f"{args.name}.png"
    title = (
        f"hybridfd trace: {op.config['approach']}, {args.grids} grids of {'x'.join(map(str, shape))} "
        f"{args.dtype}, {comm.size} ranks x {op.config['threads']} threads, {args.applies} applies"
    )
    trace.save_timeline(png_path, title)
    rows = trace.fractions()
    uncertainty = max(trace.clock_uncertainty)
    notes = [
        f"Chrome trace: {chrome_path} (open in https://ui.perfetto.dev)",
        "fractions of each rank's apply time; other = idle or between traced steps",
        f"clocks aligned to rank 0 within {1e6 * uncertainty:.1f} us",
        f"bit-identical to the reference: {'yes' if identical else 'NO'}",
    ]
    if trace.dropped:
        notes.append(f"{trace.dropped} events dropped: full buffers (raise --events)")
    parameters = {k: v for k, v in vars(args).items() if k not in ("handler", "subparser", "argv")}
    parameters["shape"] = list(shape)
    result = results.new_result(
        "trace", args.name, title, parameters, fraction_columns(), rows, config=op.config, argv=args.argv, notes=notes
    )
    result["plot"] = str(png_path)
    save_and_show(result, args.output / f"{args.name}.json")
    if not identical:
        display.console(stderr=True).print("ERROR: the traced applies disagree with the reference")
        return 1
    return 0
