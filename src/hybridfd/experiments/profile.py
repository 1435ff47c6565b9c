"""The communication and computation profile (GPAW journal Sect. 7.1, Fig. 7.1): one line
per rank and thread, pack/post/wait/progress in warm colours, unpack/compute in blue,
for flat-original, flat-optimized and a hybrid approach side by side on one time axis.

Each approach's applies are traced by the core's Tracer (hybridfd.trace) after one
untraced warm-up, each apply started after a barrier. The table gives, per approach,
rank and thread, the fraction of the apply time spent in each kind of event (``other``:
idle, e.g. a master-only team's threads while thread 0 communicates). Flat approaches run
one rank per core, threaded ones ranks of ``--threads`` threads (as in ``speedup``).
Every traced output is checked bit-identical to flat-original's. The Chrome traces
(open them in https://ui.perfetto.dev) are written next to the result as
``profile-<approach>.trace.json``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from hybridfd._argtypes import positive_int
from hybridfd.experiments import ExperimentInputError, Outcome
from hybridfd.experiments._stencil import BASELINE, add_threads_argument, run_all, variant

NAME = "profile"
SUMMARY = "communication/computation timeline per rank and thread, flat vs hybrid (GPAW Fig. 7.1)"

DEFAULT_APPROACHES = ["flat-original", "flat-optimized", "hybrid-multiple"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    import hybridfd as hf

    parser.add_argument("--cores", type=positive_int, default=2, help="cores to use (default 2)")
    parser.add_argument(
        "--approaches",
        nargs="+",
        choices=hf.approach_names(),
        default=DEFAULT_APPROACHES,
        metavar="APPROACH",
        help=f"approaches to profile (default {' '.join(DEFAULT_APPROACHES)})",
    )
    parser.add_argument("--grids", type=positive_int, default=16, help="grids per apply (default 16)")
    parser.add_argument("--shape", type=positive_int, default=64, metavar="N", help="grids of N^3 (default 64)")
    parser.add_argument("--dtype", choices=("float64", "complex128"), default="float64")
    parser.add_argument("--applies", type=positive_int, default=2, help="traced applies per approach (default 2)")
    add_threads_argument(parser)


def run(args: argparse.Namespace) -> Outcome:
    if len(set(args.approaches)) != len(args.approaches):
        raise ExperimentInputError(f"--approaches {' '.join(args.approaches)}: each approach may appear once")
    job = {
        "shape": args.shape,
        "dtype": args.dtype,
        "grids": args.grids,
        "applies": args.applies,
        "chrome_directory": str(Path(args.output).resolve()),
        "variants": [variant(approach) for approach in args.approaches],
    }
    measured = run_all(NAME, args.cores, args.threads, job, args.timeout)
    order = {approach: k for k, approach in enumerate(args.approaches)}
    measured.sort(key=lambda v: order[v["label"]])
    rows = []
    for v in measured:
        for lane in v["lanes"]:
            rows.append(
                {
                    "label": v["label"],
                    "ranks_x_threads": f"{v['ranks']} x {v['threads']}",
                    "bit_identical_to_flat_original": v["bit_identical_to_flat_original"],
                    "clock_uncertainty_us": 1e6 * max(v["clock_uncertainty"]),
                    "config": v["config"],
                    **lane,
                }
            )
    columns = [
        {"key": "label", "title": "approach"},
        {"key": "ranks_x_threads", "title": "ranks x threads"},
        {"key": "rank", "title": "rank"},
        {"key": "thread", "title": "thread"},
        {"key": "traced_ms", "title": "traced ms", "format": ".2f"},
        {"key": "communication", "title": "communication", "format": ".1%"},
        {"key": "computation", "title": "computation", "format": ".1%"},
        *(
            {"key": kind, "title": kind, "format": ".1%"}
            for kind in ("pack", "post", "wait", "progress", "unpack", "compute", "other")
        ),
        {"key": "dropped", "title": "dropped"},
        {"key": "bit_identical_to_flat_original", "title": "== flat-original"},
    ]
    title = (
        f"profile: {args.grids} grids of {args.shape}^3 {args.dtype} on {args.cores} cores, "
        f"{args.applies} traced applies each"
    )
    notes = [
        "fractions of each rank's traced apply time; communication = pack + post + wait + progress, "
        "computation = unpack + compute, other = idle or between traced steps",
        f"flat approaches: one rank per core; threaded ones: ranks of up to {args.threads} threads",
        *(f"Chrome trace: {v['chrome_trace']}" for v in measured),
    ]
    return Outcome(title, columns, rows, notes)


def worker(comm: Any, params: dict[str, Any]) -> dict[str, Any] | None:  # noqa: ANN401 - an mpi4py communicator
    """Trace each of ``params["variants"]`` for ``params["applies"]`` applies."""
    from mpi4py import MPI

    import hybridfd as hf

    n = params["shape"]
    domain = hf.Domain((n, n, n), periodic=True, dtype=params["dtype"])
    decomposition = hf.Decomposition(domain, comm)
    stencil = hf.Stencil.laplace(2, 0.2)
    rng = np.random.default_rng(comm.rank)
    a = rng.standard_normal(decomposition.local_shape(params["grids"]))
    if params["dtype"] == "complex128":
        a = a + 1j * rng.standard_normal(a.shape)
    a = hf.aligned_copy(a)
    out = hf.empty_aligned(a.shape, a.dtype)
    expected = hf.Operator(decomposition, stencil, approach=BASELINE).apply(a)
    found = []
    for entry in params["variants"]:
        op = hf.Operator(decomposition, stencil, **entry["options"])
        op.apply(a, out=out)  # warm-up: buffers and persistent requests set up
        op.start_trace()
        for _ in range(params["applies"]):
            comm.Barrier()
            op.apply(a, out=out)
        op.stop_trace()
        same = comm.allreduce(bool(np.array_equal(out, expected)), op=MPI.LAND)
        trace = op.trace()
        if comm.rank != 0:
            continue
        chrome = Path(params["chrome_directory"]) / f"profile-{entry['label']}.trace.json"
        trace.save_chrome(chrome)
        fractions = trace.fractions()
        lanes = [
            dict(f, **{k: v for k, v in t.items() if k not in ("rank", "thread")})
            for f, t in zip(fractions, trace.timeline(), strict=True)
        ]
        found.append(
            {
                "label": entry["label"],
                "config": op.config,
                "bit_identical_to_flat_original": same,
                "clock_uncertainty": trace.clock_uncertainty,
                "chrome_trace": str(chrome),
                "lanes": lanes,
            }
        )
    if comm.rank != 0:
        return None
    return {"process_grid": list(decomposition.grid), "variants": found}


def plot(result: dict[str, Any], path: Path) -> None:
    from hybridfd.experiments._plot import plt, save
    from hybridfd.trace import plot_timeline

    rows = result["rows"]
    labels = list(dict.fromkeys(row["label"] for row in rows))
    heights = [sum(row["label"] == label for row in rows) for label in labels]
    fig, axes = plt.subplots(
        len(labels), 1, sharex=True, figsize=(10, 1.2 + 0.45 * sum(heights) + 0.5 * len(labels)),
        gridspec_kw={"height_ratios": heights}, squeeze=False,
    )  # fmt: skip
    for k, (ax, label) in enumerate(zip(axes[:, 0], labels, strict=True)):
        mine = [row for row in rows if row["label"] == label]
        plot_timeline(ax, mine, f"{label} ({mine[0]['ranks_x_threads']} ranks x threads)", legend=k == 0)
        if k < len(labels) - 1:
            ax.set_xlabel("")
    fig.suptitle(result["title"], fontsize=9)
    save(fig, path)
