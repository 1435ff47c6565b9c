"""The tuner's ranking alone: ``tune.plan`` (trial chunk, the pool ranked by the model,
shortlist, budget) on rank 0's problem of benchmarks/tuning_job.py, one process, no MPI.

    .venv/bin/python benchmarks/tune_ranking.py [--edge 24] [--dtype float64] [--calls 200]

A calibration file is not needed: the costs are session 7's quiet calibration (l, B, C,
pack cost, per-message cost), so the pool and shortlist are the ones the quiet tunings
ranked. Prints the median seconds per call hot (called back to back) and with the caches
evicted (64 MB streamed before each call, as a tuning follows applies that stream the
grids through them), and the shortlist.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

# Session 7's quiet calibration (docs/benchmarks.md, "The quiet re-run"), 2 ranks.
COSTS = {
    "latency": 2.157e-06,
    "bandwidth": 1.983e10,
    "pack_per_byte": {"float64": 1.260e-10, "complex128": 7.624e-11},
    "compute_per_point": {"float64": 1.775e-09, "complex128": 3.245e-09},
    "sync": 7.312e-06,
    "cores": 2,
    "ranks_per_host": 2,
    "per_message": 3.781e-07,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edge", type=int, default=24)
    parser.add_argument("--dtype", default="float64", choices=("float64", "complex128"))
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    import hybridfd as hf
    from hybridfd import tune
    from hybridfd.perfmodel import Costs, Problem

    n, itemsize = args.edge, np.dtype(args.dtype).itemsize
    face = n * n * 2 * itemsize  # one r = 2 face of the box
    # x cut in two: both x faces to the other rank (4 messages), y and z to itself.
    whole = Problem(64, n**3, 6 * face, (n - 4) ** 3, messages_per_batch=4, self_bytes_per_grid=4 * face)
    costs = Costs(
        **{
            **COSTS,
            "pack_per_byte": COSTS["pack_per_byte"][args.dtype],
            "compute_per_point": COSTS["compute_per_point"][args.dtype],
        }
    )
    registries = {
        "model": hf.model_names(),
        "schedule": hf.schedule_names(),
        "transport": hf.transport_names(),
        "approach": hf.approach_names(),
    }
    big = np.ones(8 << 20)

    def call(evict: bool) -> float:
        if evict:
            big.sum()
        start = time.perf_counter()
        tune.plan(costs, whole, 1, registries, trials=4, trial_grids=None, budget=None, job_grids=1000)
        return time.perf_counter() - start

    call(False)  # the process's first: imports, the pool's construction
    for evict in (False, True):
        seconds = statistics.median(call(evict) for _ in range(args.calls))
        print(f"tune.plan, {'caches evicted' if evict else 'hot'}: {seconds * 1e3:.3f} ms (median of {args.calls})")
    plan = tune.plan(costs, whole, 1, registries, trials=4, trial_grids=None, budget=None, job_grids=1000)
    pool = tune.candidate_pool(plan.chunk, 1, tuple(registries["model"]), tuple(registries["schedule"]), "p2p")
    print(f"{len(pool.candidates)} candidates, chunk {plan.chunk}, budget {plan.budget * 1e3:.3f} ms; shortlist:")
    for candidate, seconds in plan.shortlist:
        print(f"  {candidate.label()}: {seconds * 1e3:.4f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
