"""Scalability of a fixed many-grid job over increasing cores (GPAW journal Sect. 7.2, Fig. 7.4).

The paper: 2816 grids of 192^3 from 1024 to 16384 cores, every approach with its best
batch size, left the running times, right each approach relative to the fastest approach
on the fewest cores. Here by default 128 grids of 48^3 on 1 and 2 cores; ``--batches``
searches batch sizes per approach and keeps the fastest (the paper's "best batch-size"),
otherwise each approach runs its preset. Approaches come from the operator's registry.
"""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path
from typing import Any

from hybridfd._argtypes import positive_int
from hybridfd.experiments import Outcome
from hybridfd.experiments._stencil import (
    BASELINE,
    add_problem_arguments,
    add_threads_argument,
    core_counts,
    run_all,
    variant,
)
from hybridfd.experiments._stencil import worker as worker
from hybridfd.simulate.experiments import job_settings
from hybridfd.simulate.experiments import notes as simulation_notes
from hybridfd.simulate.experiments import timing as simulation_timing

NAME = "scalability"
#: Core counts simulated by default (--simulate): they finish within minutes here
#: (docs/simulation.md); larger ones with --cores, above 4,096 ranks with --large.
SIMULATED_CORES = [1024, 2048]
SUMMARY = "fixed many-grid job over increasing cores, every approach (GPAW Fig. 7.4)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cores",
        type=positive_int,
        nargs="+",
        help="core counts (default 1 2; simulated: 1024 2048)",
    )
    parser.add_argument("--grids", type=positive_int, default=128, help="grids in the job (default 128)")
    parser.add_argument(
        "--batches", type=positive_int, nargs="+", default=[], metavar="B", help="batch sizes to search per approach"
    )
    add_threads_argument(parser)
    add_problem_arguments(parser, shape=48)


def variants(batches: list[int]) -> list[dict[str, Any]]:
    import hybridfd as hf

    found = [variant(BASELINE)]
    for approach in hf.approach_names():
        if approach == BASELINE:
            continue
        found += [variant(approach, b) for b in batches] if batches else [variant(approach)]
    return found


def best_per_approach(variants_measured: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The fastest variant of each approach, in registry order."""
    best: dict[str, dict[str, Any]] = {}
    for v in variants_measured:
        approach = v["config"]["approach"]
        if approach not in best or v["median_seconds"] < best[approach]["median_seconds"]:
            best[approach] = v
    return list(best.values())


def run(args: argparse.Namespace) -> Outcome:
    cores = core_counts(args, [1, 2], SIMULATED_CORES)
    job = {"shape": args.shape, "dtype": args.dtype, "grids": args.grids, "repeats": args.repeats}
    job.update(job_settings(args))
    job["variants"] = variants(sorted(set(args.batches)))
    measured = {c: best_per_approach(run_all(NAME, c, args.threads, job, args.timeout)) for c in cores}
    fastest_first = min(measured[cores[0]], key=lambda v: v["median_seconds"])
    rows = []
    for c, best in measured.items():
        for v in best:
            rows.append(
                {
                    "cores": c,
                    "ranks": v["ranks"],
                    "threads": v["threads"],
                    "ranks_x_threads": f"{v['ranks']} x {v['threads']}",
                    "process_grid": v["process_grid"],
                    "approach": v["config"]["approach"],
                    "batch": v["config"]["batch"],
                    "ms": 1e3 * v["median_seconds"],
                    "relative_to_fastest_on_fewest": fastest_first["median_seconds"] / v["median_seconds"],
                    "ideal": c / cores[0],
                    "bit_identical_to_flat_original": v["bit_identical_to_flat_original"],
                    "config": v["config"],
                }
            )
    columns = [
        {"key": "cores", "title": "cores"},
        {"key": "ranks_x_threads", "title": "ranks x threads"},
        {"key": "process_grid", "title": "process grid"},
        {"key": "approach", "title": "approach"},
        {"key": "batch", "title": "b"},
        {"key": "ms", "title": "ms per apply", "format": ".2f"},
        {"key": "relative_to_fastest_on_fewest", "title": "vs fastest on fewest", "format": ".2f"},
        {"key": "ideal", "title": "linear", "format": ".2f"},
        {"key": "bit_identical_to_flat_original", "title": "== flat-original"},
    ]
    title = (
        f"scalability: {args.grids} grids of {args.shape}^3 {args.dtype}; relative to "
        f"{fastest_first['config']['approach']} on {cores[0]} cores; {simulation_timing(args)}"
    )
    notes = [f"flat approaches: one rank per core; threaded ones: ranks of up to {args.threads} threads"]
    if args.batches:
        notes.append(f"each approach's best batch of {sorted(set(args.batches))} (flat-original has none)")
    notes += simulation_notes(args)
    return Outcome(title, columns, rows, notes)


def plot(result: dict[str, Any], path: Path) -> None:
    from hybridfd.experiments._plot import figure, save

    rows = result["rows"]
    fig, (left, right) = figure(panels=2, width=4.5)
    cores = sorted({r["cores"] for r in rows})
    for approach in dict.fromkeys(r["approach"] for r in rows):
        mine = [r for r in rows if r["approach"] == approach]
        left.plot([r["cores"] for r in mine], [r["ms"] for r in mine], marker="o", label=approach)
        right.plot([r["cores"] for r in mine], [r["relative_to_fastest_on_fewest"] for r in mine], marker="o")
    right.plot(cores, [c / cores[0] for c in cores], color="grey", linestyle=":", label="linear")
    left.set_xticks(cores)
    right.set_xticks(cores)
    left.set_xlabel("cores")
    left.set_ylabel("ms per apply")
    left.legend(fontsize=8)
    right.set_xlabel("cores")
    right.set_ylabel("speed vs fastest on fewest cores")
    fig.suptitle(textwrap.fill(result["title"], 110), fontsize=9)  # a simulated title runs long
    save(fig, path)
