"""Latency hiding (GPAW journal Sect. 5, 5.1): schedules, batch sizes, slopes and
progress as ratios to flat-original measured in the same run, plus compute-only time of
the same grids (no messages at all), so the hidden share of communication shows:
efficiency = compute-only / total.

    .venv/bin/python benchmarks/latency_hiding.py [--ranks 2 4] [--repeats 5] [--quick]

Runs itself under the launcher once per rank count. Cases per rank: 64 grids of 96^3 and
512 grids of 24^3 (the latency-bound regime of small sub-grids), float64, periodic,
13-point Laplacian, x cut into one box per rank. Writes results/latency_hiding.json and
docs/img/latency_hiding.png.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

CONFIGS = [
    ("flat-original", {"approach": "flat-original"}),
    ("serial-dims b=1 persistent", {"schedule": "serial-dims", "transport": "persistent", "batch": 1}),
    ("all-dims b=1", {"schedule": "all-dims", "batch": 1}),
    ("double-buffered b=1", {"schedule": "double-buffered", "batch": 1}),
    ("overlap b=1", {"schedule": "overlap", "batch": 1}),
    *[(f"all-dims b={b}", {"schedule": "all-dims", "batch": b}) for b in (2, 4, 8, 16, 32, 64)],
    *[(f"double-buffered b={b}", {"schedule": "double-buffered", "batch": b}) for b in (4, 8, 16, 32, 64)],
    *[(f"double-buffered b=16 slope={n}", {"schedule": "double-buffered", "batch": 16, "slope": n}) for n in (1, 2, 3)],
    ("double-buffered b=16 progress=1", {"schedule": "double-buffered", "batch": 16, "progress": 1}),
    ("overlap b=16", {"schedule": "overlap", "batch": 16}),
    ("overlap b=16 progress=1", {"schedule": "overlap", "batch": 16, "progress": 1}),
    ("flat-optimized", {"approach": "flat-optimized"}),
]


def worker(quick: bool, repeats: int) -> None:
    from mpi4py import MPI

    import hybridfd as hf

    comm = MPI.COMM_WORLD
    stencil = hf.Stencil.laplace(2, 0.2)
    cases = [(24, 64), (12, 64)] if quick else [(96, 64), (24, 512)]
    rows = []
    for n, grids in cases:
        dom = hf.Domain((n * comm.size, n, n))
        dec = hf.Decomposition(dom, comm, grid=(comm.size, 1, 1))
        a = np.random.default_rng(comm.rank).standard_normal(dec.local_shape(grids))
        out = np.empty_like(a)
        # Compute only: the same grids on a one-box, non-periodic domain: copy-in and kernel,
        # no message at all.
        alone = hf.Decomposition(hf.Domain((n, n, n), periodic=False), MPI.COMM_SELF)
        compute_only = hf.Operator(alone, stencil, schedule="all-dims", batch=1)
        times: dict[str, list[float]] = {label: [] for label, _ in CONFIGS}
        times["compute only"] = []
        reference = hf.Operator(dec, stencil, approach="flat-original").apply(a)

        def timed(op: hf.Operator, a: np.ndarray = a, out: np.ndarray = out) -> float:
            op.apply(a, out=out)  # warm-up (and persistent requests set up)
            comm.Barrier()
            start = time.perf_counter()
            op.apply(a, out=out)
            return comm.allreduce(time.perf_counter() - start, op=MPI.MAX)

        for _ in range(repeats):  # interleaved: each round runs every configuration once
            times["compute only"].append(timed(compute_only))
            for label, options in CONFIGS:
                # One operator at a time: a batch of 64 grids of 96^3 double-buffered holds 1 GB.
                op = hf.Operator(dec, stencil, **options)
                times[label].append(timed(op))
                assert np.array_equal(out, reference), label
                del op
        if comm.rank == 0:
            median = {label: float(np.median(t)) for label, t in times.items()}
            for label, t in median.items():
                rows.append(
                    {
                        "ranks": comm.size,
                        "case": f"{grids} x {n}^3 per rank",
                        "config": label,
                        "ms_per_apply": 1e3 * t,
                        "speedup_over_flat_original": median["flat-original"] / t,
                        "efficiency": median["compute only"] / t,
                    }
                )
    if comm.rank == 0:
        from hybridfd import launch

        launch.report_result(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.quick, args.repeats)
        return 0
    from hybridfd import launch

    rows = []
    for ranks in args.ranks:
        argv = [
            sys.executable,
            __file__,
            "--worker",
            "--repeats",
            str(args.repeats),
            *(["--quick"] if args.quick else []),
        ]
        result = launch.run(ranks, argv, timeout=3000)
        rows += launch.worker_result(result)
    print(f"command: {' '.join(['python', *sys.argv])}\n")
    print("| ranks | case | configuration | ms per apply | vs flat-original | efficiency |")
    print("|---:|---|---|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['ranks']} | {row['case']} | {row['config']} | {row['ms_per_apply']:.2f} | "
            f"{row['speedup_over_flat_original']:.2f}x | {row['efficiency']:.2f} |"
        )
    (ROOT / "results").mkdir(exist_ok=True)
    (ROOT / "results" / "latency_hiding.json").write_text(json.dumps(rows, indent=2))
    if not args.quick:
        plot(rows, ROOT / "docs" / "img" / "latency_hiding.png")
    return 0


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = sorted({(row["ranks"], row["case"]) for row in rows})
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 6), sharey=False)
    for ax, (ranks, case) in zip(np.atleast_1d(axes), panels, strict=True):
        selected = [row for row in rows if row["ranks"] == ranks and row["case"] == case]
        ax.barh([row["config"] for row in selected], [row["speedup_over_flat_original"] for row in selected])
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_title(f"{ranks} ranks, {case}", fontsize=9)
        ax.set_xlabel("speed-up over flat-original (same run)")
        ax.tick_params(axis="y", labelsize=7)
        ax.invert_yaxis()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    raise SystemExit(main())
