"""Speedup of every approach vs a sequential run (GPAW journal Sect. 7, Fig. 7.2).

A small job (32 grids by default, as in the paper; 64^3 here instead of 144^3) applied
on an increasing number of cores by every approach in the operator's registry
(hybridfd.approach_names(): approaches added later appear with no change here), each
without batching (batch 1) and with batching (batch 8, the paper's). Flat approaches run
one rank per core, threaded ones (hybrid-multiple, hybrid-master-only, ...) ranks of
``--threads`` threads, as on Blue Gene/P one rank per node. Flat-original, the
papers' baseline, has no batching and appears in both. Speedup = time of flat-original
on one core / time of the configuration. One MPI run per core count (hybridfd.launch);
inside a run the configurations are interleaved, medians of the rounds, and every
output is checked bit-identical to flat-original's.
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

NAME = "speedup"
#: Core counts simulated by default (--simulate): they finish within minutes here
#: (docs/simulation.md); larger ones with --cores, above 4,096 ranks with --large.
SIMULATED_CORES = [1, 4, 16, 64, 256, 1024]
SUMMARY = "speedup of every approach vs one core, with and without batching (GPAW Fig. 7.2)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cores",
        type=positive_int,
        nargs="+",
        help="core counts (default 1 2; simulated: 1 4 16 64 256 1024)",
    )
    parser.add_argument("--grids", type=positive_int, default=32, help="grids in the job (default 32)")
    parser.add_argument("--batch", type=positive_int, default=8, help="batch of the batched variants (default 8)")
    add_threads_argument(parser)
    add_problem_arguments(parser, shape=64)


def variants(batch: int) -> list[dict[str, Any]]:
    import hybridfd as hf

    found = [variant(BASELINE)]
    for approach in hf.approach_names():
        if approach != BASELINE:
            found += [variant(approach, 1), variant(approach, batch)]
    return found


def run(args: argparse.Namespace) -> Outcome:
    cores = core_counts(args, [1, 2], SIMULATED_CORES)
    if 1 not in cores:
        cores = [1, *cores]  # the sequential time every speedup is relative to
    job = {"shape": args.shape, "dtype": args.dtype, "grids": args.grids, "repeats": args.repeats}
    job.update(job_settings(args))
    job["variants"] = variants(args.batch)
    runs = {c: run_all(NAME, c, args.threads, job, args.timeout) for c in cores}
    sequential = next(v for v in runs[1] if v["label"] == BASELINE)["median_seconds"]
    rows = []
    for c, measured in runs.items():
        for v in measured:
            batched = v["config"]["batch"] > 1
            rows.append(
                {
                    "cores": c,
                    "ranks": v["ranks"],
                    "threads": v["threads"],
                    "ranks_x_threads": f"{v['ranks']} x {v['threads']}",
                    "process_grid": v["process_grid"],
                    "approach": v["config"]["approach"],
                    "label": v["label"],
                    "batching": f"b={v['config']['batch']}" if batched else "none",
                    "ms": 1e3 * v["median_seconds"],
                    "speedup": sequential / v["median_seconds"],
                    "bit_identical_to_flat_original": v["bit_identical_to_flat_original"],
                    "config": v["config"],
                }
            )
    columns = [
        {"key": "cores", "title": "cores"},
        {"key": "ranks_x_threads", "title": "ranks x threads"},
        {"key": "process_grid", "title": "process grid"},
        {"key": "label", "title": "configuration"},
        {"key": "ms", "title": "ms per apply", "format": ".2f"},
        {"key": "speedup", "title": "speedup", "format": ".2f"},
        {"key": "bit_identical_to_flat_original", "title": "== flat-original"},
    ]
    title = (
        f"speedup: {args.grids} grids of {args.shape}^3 {args.dtype}, vs flat-original on 1 core "
        f"({1e3 * sequential:.2f} ms), {simulation_timing(args)}"
    )
    notes = [
        f"flat approaches: one rank per core; threaded ones: ranks of up to {args.threads} threads",
        "speedup = sequential time / time",
    ]
    notes += simulation_notes(args)
    return Outcome(title, columns, rows, notes)


def plot(result: dict[str, Any], path: Path) -> None:
    from hybridfd.experiments._plot import figure, save

    rows = result["rows"]
    fig, axes = figure(panels=2, width=4.5)
    cores = sorted({row["cores"] for row in rows})
    for ax, batched, name in ((axes[0], False, "no batching"), (axes[1], True, "with batching")):
        for label in dict.fromkeys(r["label"] for r in rows):
            mine = [r for r in rows if r["label"] == label]
            is_baseline = mine[0]["approach"] == BASELINE
            if not is_baseline and (mine[0]["batching"] != "none") != batched:
                continue
            ax.plot([r["cores"] for r in mine], [r["speedup"] for r in mine], marker="o", label=label)
        ax.plot(cores, cores, color="grey", linestyle=":", label="linear")
        ax.set_xticks(cores)
        ax.set_xlabel("cores")
        ax.set_ylabel("speedup vs 1 core")
        ax.set_title(name)
        ax.legend(fontsize=8)
    fig.suptitle(textwrap.fill(result["title"], 110), fontsize=9)  # a simulated title runs long
    save(fig, path)
