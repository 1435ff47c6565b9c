"""``hybridfd``: the command line.

One module per subcommand in this package, each with ``HELP``, ``add_arguments(parser)``
and ``main(args) -> exit code``; :data:`COMMANDS` lists them. Commands owned by other
parts of hybridfd (:data:`EXTERNAL_COMMANDS`, e.g. ``map``) are modules with
``main(argv) -> exit code`` that parse their own options; each appears only when its
module is installed, and is imported only when it is run.

Exit codes: 0 success, 1 a failed check (e.g. a result that disagrees with the
reference), 2 a malformed option or bad input (the message names the value).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Sequence

from hybridfd._argtypes import positive_int
from hybridfd.cli._common import UsageError

#: Subcommand -> module (imported when the parser is built: they are small).
COMMANDS = {
    "run": "hybridfd.cli.run",
    "trace": "hybridfd.cli.trace",
    "bench": "hybridfd.cli.bench",
    "report": "hybridfd.cli.report",
    "info": "hybridfd.cli.info",
}

#: Subcommand -> (module with ``main(argv)``, one-line help), listed only when installed.
EXTERNAL_COMMANDS = {
    "map": ("hybridfd.mapping.cli", "process mapping: topologies, strategies, hop-bytes (hybridfd.mapping)"),
    "calibrate": (
        "hybridfd.perfmodel.calibrate",
        "measure latency, bandwidth, compute and pack costs for the performance model (run under mpiexec)",
    ),
    "tune": (
        "hybridfd.tune.command",
        "pick approach, batch, slope, threads for a problem and cache it (run under mpiexec)",
    ),
}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


def external_commands() -> dict[str, tuple[str, str]]:
    return {name: entry for name, entry in EXTERNAL_COMMANDS.items() if _installed(entry[0])}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hybridfd",
        description="Finite-difference stencils on batches of domain-decomposed 3D grids over MPI: "
        "run one configuration, run the papers' experiments, re-render saved results.",
        epilog="Each command has its own --help, e.g. `hybridfd run --help`, `hybridfd bench speedup --help`.",
    )
    parser.add_argument(
        "-n",
        "--ranks",
        dest="launch_ranks",
        type=positive_int,
        metavar="N",
        help="run the command (run, trace, info) on N MPI ranks; the same as the command's own -n",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(module_name)
        sub = commands.add_parser(
            name,
            help=module.HELP,
            description=module.__doc__,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(sub)
        sub.set_defaults(handler=module.main, subparser=sub)
    for name, (_, help_text) in external_commands().items():
        commands.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    external = external_commands()
    if argv and argv[0] in external:
        # The external command parses its own options, --help included.
        return int(importlib.import_module(external[argv[0]][0]).main(argv[1:]) or 0)
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = ["hybridfd", *argv]
    if args.launch_ranks is not None:
        if not getattr(args, "launchable", False):
            parser.error(
                f"-n {args.launch_ranks}: only run, trace and info take -n; `hybridfd {args.command}` "
                "launches its own MPI runs (experiments have --ranks or --cores)"
            )
        if args.ranks is not None and args.ranks != args.launch_ranks:
            parser.error(f"-n given twice with different values: {args.launch_ranks} and {args.ranks}")
        args.ranks = args.launch_ranks
    try:
        return int(args.handler(args) or 0)
    except UsageError as error:
        # Bad input is found alike on every rank; one message is enough.
        if _rank() == 0:
            args.subparser.error(str(error))  # prints usage and the message, exits 2
        return 2


def _rank() -> int:
    mpi = sys.modules.get("mpi4py.MPI")
    return mpi.COMM_WORLD.rank if mpi is not None and mpi.Is_initialized() else 0
