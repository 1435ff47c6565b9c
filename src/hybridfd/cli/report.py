"""Re-render a saved result: validate it against the schema, print its table, and redraw
an experiment's plot from the saved numbers (no MPI run).

    hybridfd report results/speedup.json                  # table, and results/speedup.png
    hybridfd report results/speedup.json --plot fig.png   # the plot somewhere else
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hybridfd.cli._common import UsageError

HELP = "print a saved JSON result as a table and redraw its plot"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("result", type=Path, help="a JSON result written by hybridfd run/bench/info")
    parser.add_argument(
        "--plot", type=Path, metavar="PNG", help="where to draw an experiment's plot (default: beside the JSON)"
    )
    parser.add_argument("--no-plot", action="store_true", help="print the table only")
    parser.add_argument("--environment", action="store_true", help="also print where and with what it was run")


def main(args: argparse.Namespace) -> int:
    from hybridfd import display, experiments, results

    try:
        result = results.load(args.result)
    except results.ResultError as error:
        raise UsageError(str(error)) from None
    out = display.console()
    display.show(result, out)
    if args.environment:
        env = result["environment"]
        out.print(
            f"host {env['host']}, {env['cores']} cores, {env['mpi_library'].splitlines()[0]}, "
            f"{env['thread_level']}, git {env['git_revision']}, created {result['created']}",
            highlight=False,
        )
        out.print("command: " + " ".join(result["argv"]), highlight=False)
    if args.no_plot:
        return 0
    if result["command"] != "bench":
        if args.plot is not None:
            raise UsageError(f"{args.result} is a {result['command']} result; only experiment results have a plot")
        return 0
    registry = experiments.registry()
    if result["name"] not in registry:
        raise UsageError(
            f"{args.result} is from experiment {result['name']!r}, which this hybridfd does not have "
            f"(known: {', '.join(registry)})"
        )
    path = args.plot or args.result.with_suffix(".png")
    registry[result["name"]].plot(result, path)
    out.print(f"plot: {path}", highlight=False)
    return 0
