"""What the hybrid programming models buy on this machine's cores (GPAW journal Sect. 6-7;
Rabenseifner and Wellein 2003, Sect. 2 and 5): every approach as a ratio to flat-original
on 2 ranks x 1 thread, the same cores used as 2 ranks x 1 thread and as 1 rank x 2
threads, batch 1 and 8, flat-optimized also on two rank groups (the partitioning of
hybrid-multiple) and the funneled model with the master's share of the compute at 1;
then 4 and 8 ranks (x 1 or 2 threads) oversubscribed, marked so. The papers' speedup
curve itself (Fig. 7.2, every approach against cores) is `hybridfd bench speedup`.

    .venv/bin/python benchmarks/hybrid_models.py [--repeats 5] [--applies 5] [--grids 32] [--size 96] [--quick]

Each layout runs under the launcher as its own job; the jobs alternate for --repeats
rounds and every number is the median over rounds of a job's median apply time, so that
drift of this noisy machine hits every configuration alike. Each job also reports the
master-only models' phase timers (compute phases, communication phases with the other
threads idle, idle time inside compute phases). Writes results/hybrid_models.json and
(not with --quick) docs/img/hybrid_models.png.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

FLAT = ["flat-original", "flat-optimized", "flat-optimized-grouped"]
HYBRID = ["hybrid-multiple", "hybrid-master-only", "hybrid-master-only-threaded-comm", "hybrid-funneled-overlap"]
# (ranks, threads, oversubscribed)
LAYOUTS = [(2, 1, False), (1, 2, False), (4, 1, True), (2, 2, True), (8, 1, True), (4, 2, True)]


def configurations(ranks: int, threads: int) -> list[tuple[str, str, dict]]:
    """(approach, label, Operator options) measured in a job of ranks x threads."""
    result = []
    approaches = (FLAT if threads == 1 else []) + (HYBRID if threads > 1 else [])
    for approach in approaches:
        for batch in (1, 8):
            if approach == "flat-original" and batch == 8:
                continue  # flat-original is batch 1 by definition
            if approach == "flat-optimized-grouped" and ranks == 1:
                continue
            options: dict = {"batch": batch, "slope": 0 if batch == 1 else 1}
            if approach == "flat-original":
                options = {}
            if threads > 1:
                options["threads"] = threads
            result.append((approach, f"{approach} b={batch}", options))
        if approach == "hybrid-funneled-overlap":
            result.append((approach, f"{approach} b=8 share=1", {"batch": 8, "slope": 1, "threads": threads,
                                                                  "master_share": 1.0}))  # fmt: skip
    return result


def worker(grids: int, size: int, repeats: int) -> None:
    from mpi4py import MPI

    import hybridfd as hf

    comm = MPI.COMM_WORLD
    threads = int(os.environ.get("HYBRID_MODELS_THREADS", "1"))
    stencil = hf.Stencil.laplace(2, 0.2)
    dom = hf.Domain((size, size, size), periodic=True)
    dec = hf.Decomposition(dom, comm)
    rng = np.random.default_rng(comm.rank)
    a = rng.standard_normal(dec.local_shape(grids))
    out = np.empty_like(a)
    reference = hf.Operator(dec, stencil, "flat-original").apply(a)
    # flat-optimized-grouped: the ranks split into 2 groups, each cutting the domain into
    # half as many boxes and owning half the grids: the partitioning level of
    # hybrid-multiple with 2 threads on half the ranks (GPAW journal Sect. 7.2, "four
    # sub-groups", there for 4 threads).
    groups = hf.RankGroups(comm, 2 if comm.size % 2 == 0 else 1)
    group_dec = hf.Decomposition(dom, groups.comm)
    group_grids = len(range(grids)[groups.grids(grids)])
    group_a = np.random.default_rng(comm.rank).standard_normal(group_dec.local_shape(group_grids))
    group_out = np.empty_like(group_a)

    def timed(op: hf.Operator, a: np.ndarray, out: np.ndarray) -> float:
        times = []
        op.apply(a, out=out)  # warm-up
        for _ in range(repeats):
            comm.Barrier()
            start = time.perf_counter()
            op.apply(a, out=out)
            times.append(comm.allreduce(time.perf_counter() - start, op=MPI.MAX))
        return float(np.median(times))

    rows = []
    for approach, label, options in configurations(comm.size, threads):
        if approach == "flat-optimized-grouped":
            op = hf.Operator(group_dec, stencil, "flat-optimized", **options)
            seconds = timed(op, group_a, group_out)
            phases = None
        else:
            op = hf.Operator(dec, stencil, approach, **options)
            op.reset_phase_times()
            seconds = timed(op, a, out)
            assert np.array_equal(out, reference), label
            phases = op.phase_times
        rows.append({"approach": approach, "label": label, "seconds": seconds, "config": op.config, "phases": phases})
        del op
    if comm.rank == 0:
        from hybridfd import launch

        launch.report_result(rows)


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["rows"]
    labels = [
        f"{r['label']}  [{r['ranks']}x{r['threads']}{', oversubscribed' if r['oversubscribed'] else ''}]" for r in rows
    ]
    speedups = np.array([r["speedup"] for r in rows])
    baseline = speedups[0] * rows[0]["seconds"]  # flat-original 2x1's median time
    # Spread over rounds as speed-ups: best and worst round of each configuration.
    low = speedups - np.array([baseline / r["spread"][1] for r in rows])
    high = np.array([baseline / r["spread"][0] for r in rows]) - speedups
    fig, ax = plt.subplots(figsize=(9, 0.28 * len(rows) + 1.2))
    colours = ["tab:blue" if r["threads"] == 1 else "tab:orange" for r in rows]
    hatches = ["//" if r["oversubscribed"] else "" for r in rows]
    positions = np.arange(len(rows))[::-1]
    bars = ax.barh(positions, speedups, xerr=[low, high], color=colours, error_kw={"linewidth": 0.6})
    for bar, hatch in zip(bars, hatches, strict=True):
        bar.set_hatch(hatch)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks(positions, labels, fontsize=7)
    ax.set_xlabel("speed-up over flat-original, 2 ranks x 1 thread\n(bar: median; line: best to worst round)")
    ax.set_title(
        f"{result['grids']} grids of {result['size']}^3 float64 on 2 cores, {result['rounds']} rounds\n"
        "blue: flat, orange: hybrid, hatched: oversubscribed",
        fontsize=9,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="rounds over all layouts")
    parser.add_argument("--grids", type=int, default=32)
    parser.add_argument("--size", type=int, default=96)
    parser.add_argument("--applies", type=int, default=5, help="timed applies per configuration and round")
    parser.add_argument("--quick", action="store_true", help="small problem, two rounds (a smoke run)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.grids, args.size, args.repeats = 8, 32, 2
    if args.worker:
        worker(args.grids, args.size, args.applies)
        return

    from hybridfd import launch

    command = " ".join(["benchmarks/hybrid_models.py", *sys.argv[1:]])
    measured: dict[tuple, list[dict]] = {}
    for round_ in range(args.repeats):
        for ranks, threads, _ in LAYOUTS:
            argv = [sys.executable, __file__, "--worker", "--grids", str(args.grids), "--size", str(args.size)]
            argv += ["--applies", str(args.applies)]
            result = launch.run(ranks, argv, timeout=1800, extra_env={"HYBRID_MODELS_THREADS": str(threads)})
            for row in launch.worker_result(result):
                measured.setdefault((ranks, threads, row["label"]), []).append(row)
            print(f"round {round_ + 1}/{args.repeats}: {ranks} ranks x {threads} threads done", flush=True)

    baseline = float(np.median([r["seconds"] for r in measured[(2, 1, "flat-original b=1")]]))
    rows = []
    for (ranks, threads, label), runs in measured.items():
        seconds = float(np.median([r["seconds"] for r in runs]))
        # Per apply, from the last round (its warm-up apply included).
        last = runs[-1]["phases"]
        phases = {key: value / last["applies"] for key, value in last.items() if key != "applies"} if last else None
        rows.append(
            {
                "ranks": ranks,
                "threads": threads,
                "oversubscribed": ranks * threads > 2,
                "approach": runs[0]["approach"],
                "label": label,
                "seconds": seconds,
                "speedup": baseline / seconds,
                "spread": [min(r["seconds"] for r in runs), max(r["seconds"] for r in runs)],
                "phases": phases,
                "config": runs[0]["config"],
            }
        )
    result = {"command": command, "grids": args.grids, "size": args.size, "rounds": args.repeats, "rows": rows}
    out = ROOT / "results" / "hybrid_models.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    if not args.quick:  # a smoke run leaves the docs' figure alone
        plot(result, ROOT / "docs" / "img" / "hybrid_models.png")
    print(f"$ {command}")
    print(
        "| ranks x threads | configuration | time (s) | speed-up vs flat-original 2x1 "
        "| per apply: compute phases / communication phases / idle in compute (s) |"
    )
    print("| --- | --- | --- | --- | --- |")
    for row in rows:
        mark = " (oversubscribed)" if row["oversubscribed"] else ""
        phases = row["phases"]
        phase_text = (
            f"{phases['compute_phases']:.3f} / {phases['communication_phases']:.3f} / {phases['idle_in_compute']:.3f}"
            if phases
            else "-"
        )
        print(
            f"| {row['ranks']}x{row['threads']}{mark} | {row['label']} | {row['seconds']:.4f} | "
            f"{row['speedup']:.2f} | {phase_text} |"
        )


if __name__ == "__main__":
    main()
