"""What tracing costs: apply time with the Tracer on vs off, side by side in one run.

    .venv/bin/python benchmarks/tracer_overhead.py [--rounds 21] [--quick]

For each case one Operator is timed with tracing on and off in alternating order every
round (each apply after a barrier, the slowest rank's time): the same buffers, threads
and requests, so the difference is the tracing alone (two Operators of one configuration
differ by more than that here, in where their threads and buffers landed);
the overhead is the median over rounds of traced / untraced - 1, next to the two medians,
and (less sensitive to other processes on a shared machine) the ratio of the fastest
traced to the fastest untraced apply.
Tracing restarts before each traced apply and stops before each untraced one (outside the
timed apply), so the buffers never fill and every event is recorded. Cases: flat-original on many small
grids (the most events per second: 11 per grid), flat-optimized on larger ones, both on
2 ranks; hybrid-master-only and hybrid-multiple on 1 rank x 2 threads (this machine has 2
cores); and the worst case, flat-original on one rank over many 8^3 grids without
neighbours (no messages: nothing but pack, post, wait, unpack and compute events around a
few microseconds of work each). Writes results/tracer_overhead.json and prints a
markdown table.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

# (ranks, label, operator options, grids, n: each rank's box is n^3)
CASES = [
    (1, "flat-original, no neighbours", {"approach": "flat-original", "periodic": False}, 512, 8),
    (2, "flat-original", {"approach": "flat-original"}, 64, 24),
    (2, "flat-original", {"approach": "flat-original"}, 16, 64),
    (2, "flat-optimized", {"approach": "flat-optimized"}, 64, 24),
    (2, "flat-optimized", {"approach": "flat-optimized"}, 16, 64),
    (1, "hybrid-master-only", {"approach": "hybrid-master-only", "threads": 2}, 16, 64),
    (1, "hybrid-multiple", {"approach": "hybrid-multiple", "threads": 2}, 16, 64),
]


def worker(rounds: int, quick: bool) -> None:
    from mpi4py import MPI

    import hybridfd as hf

    comm = MPI.COMM_WORLD
    stencil = hf.Stencil.laplace(2, 0.2)
    rows = []
    for ranks, label, options, grids, n in CASES:
        if ranks != comm.size:
            continue
        if quick:
            grids, n = max(2, grids // 8), max(8, n // 2)
        options = dict(options)
        periodic = options.pop("periodic", True)
        dec = hf.Decomposition(hf.Domain((n * comm.size, n, n), periodic=periodic), comm, grid=(comm.size, 1, 1))
        a = np.random.default_rng(comm.rank).standard_normal(dec.local_shape(grids))
        out = np.empty_like(a)
        op = hf.Operator(dec, stencil, **options)

        def timed(tracing: bool, op: hf.Operator = op, a: np.ndarray = a, out: np.ndarray = out) -> float:
            if tracing:
                op.start_trace()  # empty buffers: nothing is ever dropped
            else:
                op.stop_trace()
            comm.Barrier()
            start = time.perf_counter()
            op.apply(a, out=out)
            return comm.allreduce(time.perf_counter() - start, op=MPI.MAX)

        op.apply(a, out=out)  # warm-up: buffers and requests set up
        off, on = [], []
        for round_ in range(rounds):
            if round_ % 2:  # alternate the order, so neither always runs first
                on.append(timed(True))
                off.append(timed(False))
            else:
                off.append(timed(False))
                on.append(timed(True))
        timed(True)  # the trace of one apply, for its events
        trace = op.trace()
        if comm.rank == 0:
            ratios = np.array(on) / np.array(off)
            rows.append(
                {
                    "ranks": comm.size,
                    "threads": op.config["threads"],
                    "approach": label,
                    "case": f"{grids} x {n}^3 per rank",
                    "off_ms": 1e3 * float(np.median(off)),
                    "on_ms": 1e3 * float(np.median(on)),
                    "overhead": float(np.median(ratios)) - 1.0,
                    "overhead_of_fastest": min(on) / min(off) - 1.0,
                    "events_per_apply": sum(lane.kind.size for lane in trace.lanes) // comm.size,
                    "dropped": trace.dropped,
                }
            )
    if comm.rank == 0:
        from hybridfd import launch

        launch.report_result(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=41)
    parser.add_argument("--quick", action="store_true", help="tiny grids, for a smoke test")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.rounds, args.quick)
        return 0
    from hybridfd import launch

    rows = []
    for ranks in sorted({case[0] for case in CASES}, reverse=True):
        argv = [
            sys.executable,
            __file__,
            "--worker",
            "--rounds",
            str(args.rounds),
            *(["--quick"] if args.quick else []),
        ]
        result = launch.run(ranks, argv, timeout=3000)
        rows += launch.worker_result(result)
    print(f"command: {' '.join(['python', *sys.argv])}\n")
    print(
        "| ranks x threads | approach | case | off ms (median) | on ms (median) | overhead (median of ratios) "
        "| overhead (fastest) | events per apply per rank | dropped |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['ranks']} x {row['threads']} | {row['approach']} | {row['case']} | {row['off_ms']:.2f} | "
            f"{row['on_ms']:.2f} | {100 * row['overhead']:+.1f} % | {100 * row['overhead_of_fastest']:+.1f} % | "
            f"{row['events_per_apply']} | {row['dropped']} |"
        )
    (ROOT / "results").mkdir(exist_ok=True)
    (ROOT / "results" / "tracer_overhead.json").write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
