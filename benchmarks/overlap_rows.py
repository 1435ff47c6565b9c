"""Overlap and the row axis: the schedules on the same boxes cut along x and along z,
so that only which axis is cut differs, measured side by side in one run.

    .venv/bin/python benchmarks/overlap_rows.py [--repeats 7] [--quick]

Two ranks, float64, periodic, 13-point Laplacian, batch 8. Per rank a box of n^3 with
the domain (2n, n, n) cut along x or (n, n, 2n) cut along z; cases: 32 grids of 96^3
(from memory) and 256 grids of 24^3 (in cache). `overlap` cuts its interior along every
axis that exchanges with another rank; cut along z, that is every row cut short and a
z shell of r points at each end of every row. `overlap-xy` waits for the z faces first
and keeps whole rows. Each round runs every configuration once (interleaved); medians,
as ratios to all-dims on the same cut; every output is checked bit for bit against
flat-original's. Writes results/overlap_rows.json and docs/img/overlap_rows.png.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SCHEDULES = ("all-dims", "double-buffered", "overlap", "overlap-xy")
CUTS = {"x": (2, 1, 1), "z": (1, 1, 2)}


def worker(quick: bool, repeats: int) -> None:
    from mpi4py import MPI

    import hybridfd as hf

    comm = MPI.COMM_WORLD
    stencil = hf.Stencil.laplace(2, 0.2)
    cases = [(48, 16), (16, 64)] if quick else [(96, 32), (24, 256)]
    rows = []
    for n, grids in cases:
        for cut, grid in CUTS.items():
            shape = tuple(n * p for p in grid)
            dec = hf.Decomposition(hf.Domain(shape), comm, grid=grid)
            a = np.random.default_rng(comm.rank).standard_normal(dec.local_shape(grids))
            out = np.empty_like(a)
            reference = hf.Operator(dec, stencil, approach="flat-original").apply(a)
            operators = {s: hf.Operator(dec, stencil, schedule=s, batch=8, slope=0) for s in SCHEDULES}
            times: dict[str, list[float]] = {s: [] for s in SCHEDULES}
            for _ in range(repeats):
                for schedule, op in operators.items():
                    op.apply(a, out=out)  # warm-up
                    comm.Barrier()
                    start = time.perf_counter()
                    op.apply(a, out=out)
                    times[schedule].append(comm.allreduce(time.perf_counter() - start, op=MPI.MAX))
                    assert np.array_equal(out, reference), (schedule, cut)
            median = {s: float(np.median(t)) for s, t in times.items()}
            for schedule, t in median.items():
                rows.append(
                    {
                        "case": f"{grids} x {n}^3 per rank",
                        "cut": cut,
                        "schedule": schedule,
                        "ms_per_apply": 1e3 * t,
                        "vs_all_dims": median["all-dims"] / t,
                        "runs_ms": [1e3 * x for x in times[schedule]],
                    }
                )
            del operators
    if comm.rank == 0:
        from hybridfd import launch

        launch.report_result(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.quick, args.repeats)
        return 0
    from hybridfd import launch

    argv = [sys.executable, __file__, "--worker", "--repeats", str(args.repeats), *(["--quick"] if args.quick else [])]
    rows = launch.worker_result(launch.run(2, argv, timeout=3000))
    print(f"command: {' '.join(['python', *sys.argv])}\n")
    print("| case | cut | schedule | ms per apply (median) | vs all-dims, same cut |")
    print("|---|---|---|---:|---:|")
    for row in rows:
        print(
            f"| {row['case']} | {row['cut']} | {row['schedule']} | {row['ms_per_apply']:.2f} | "
            f"{row['vs_all_dims']:.2f}x |"
        )
    (ROOT / "results").mkdir(exist_ok=True)
    (ROOT / "results" / "overlap_rows.json").write_text(json.dumps(rows, indent=2))
    if not args.quick:
        plot(rows, ROOT / "docs" / "img" / "overlap_rows.png")
    return 0


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = list(dict.fromkeys(row["case"] for row in rows))
    fig, axes = plt.subplots(1, len(cases), figsize=(5.5 * len(cases), 3.6))
    for ax, case in zip(np.atleast_1d(axes), cases, strict=True):
        width = 0.38
        for offset, cut in ((-width / 2, "x"), (width / 2, "z")):
            selected = [row for row in rows if row["case"] == case and row["cut"] == cut]
            positions = np.arange(len(selected)) + offset
            ax.bar(positions, [row["ms_per_apply"] for row in selected], width, label=f"cut along {cut}")
        ax.set_xticks(np.arange(len(SCHEDULES)), SCHEDULES, fontsize=8)
        ax.set_ylabel("ms per apply (median, 2 ranks)")
        ax.set_title(case, fontsize=9)
        ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    raise SystemExit(main())
