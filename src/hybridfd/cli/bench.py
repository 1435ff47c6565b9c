"""Run one of the papers' experiments (hybridfd.experiments): it launches its own MPI
runs through hybridfd.launch, prints a table, and writes a JSON result and a PNG plot.

    hybridfd bench --list
    hybridfd bench speedup --cores 1 2 --grids 32 --shape 64
    hybridfd bench message-size --help

Experiments are found through a registry: a new module in hybridfd/experiments/ appears
here with no change to the CLI. Defaults are sized for a 2-core machine; the options
scale them up on a cluster.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hybridfd._argtypes import positive_float
from hybridfd.cli._common import UsageError, save_and_show

HELP = "run an experiment from the papers (speedup, message-size, ring, cannon, ...)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from hybridfd import experiments

    parser.add_argument("--list", action="store_true", help="list the experiments and exit")
    names = parser.add_subparsers(dest="experiment", metavar="EXPERIMENT")
    for name, module in experiments.registry().items():
        sub = names.add_parser(
            name, help=module.SUMMARY, description=module.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        module.add_arguments(sub)
        sub.add_argument(
            "-o",
            "--output",
            type=Path,
            default=Path("results"),
            metavar="DIR",
            help=f"directory for {name}.json and {name}.png (default: results)",
        )
        sub.add_argument(
            "--timeout",
            type=positive_float,
            default=600.0,
            metavar="S",
            help="kill an MPI run of the experiment after S seconds (default 600)",
        )
        sub.set_defaults(subparser=sub)


def main(args: argparse.Namespace) -> int:
    from hybridfd import display, experiments, results

    registry = experiments.registry()
    if args.list:
        out = display.console()
        for name, module in registry.items():
            out.print(f"[bold]{name}[/bold]  {module.SUMMARY}")
        return 0
    if args.experiment is None:
        raise UsageError(f"no experiment given; choose one of: {', '.join(registry)} (or --list)")
    module = registry[args.experiment]
    try:
        outcome = module.run(args)
    except experiments.ExperimentInputError as error:
        raise UsageError(str(error)) from None
    except experiments.ExperimentRunError as error:
        display.console(stderr=True).print(f"hybridfd bench {args.experiment}: {error}", highlight=False, markup=False)
        return 1
    parameters = {k: v for k, v in vars(args).items() if k not in ("handler", "subparser", "argv", "list")}
    result = results.new_result(
        "bench",
        args.experiment,
        outcome.title,
        parameters,
        outcome.columns,
        outcome.rows,
        notes=outcome.notes,
        argv=args.argv,
    )
    json_path = args.output / f"{args.experiment}.json"
    png_path = args.output / f"{args.experiment}.png"
    results.validate(results.plain(result), str(json_path))
    module.plot(result, png_path)
    result["plot"] = str(png_path)
    save_and_show(result, json_path)
    return 0
