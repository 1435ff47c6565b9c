"""Where a tuning's time goes, by function: cProfile over ``Operator(approach="auto")``
jobs of 1,000 grids on 2 ranks, with the tuner's own account of its parts.

    .venv/bin/python -m hybridfd.launch -n 2 -- .venv/bin/python benchmarks/tune_profile.py [--edge 24]

The problem of benchmarks/tuning_job.py; a calibration file made first; one warm-up job
(the process's first tuning pays imports and the schema check), then ``--jobs`` profiled
jobs, each beside the same job at the setting it chose. Rank 0 prints, per job, the job
times, the tuning's time, overhead and parts, then the profile (cumulative time).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats

from tuning_job import calibration_file, job_case, remove_calibration, run_job

import hybridfd as hf

CHOICE = ("approach", "model", "schedule", "transport", "batch", "slope", "threads")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edge", type=int, default=24)
    parser.add_argument("--dtype", default="float64")
    parser.add_argument("--jobs", type=int, default=5)
    parser.add_argument("--lines", type=int, default=40, help="profile lines to print")
    args = parser.parse_args()
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    stencil = hf.Stencil.laplace(2, 0.2)
    calibration = calibration_file(comm, [args.edge], [args.dtype], "hybridfd-tune-profile-")
    dec, a, out, _ = job_case(comm, stencil, args.dtype, args.edge)
    options = {"cache": False, "calibration": calibration}
    run_job(comm, hf.Operator(dec, stencil, approach="auto", threads=1, tune_options=options), a, out)
    profiler = cProfile.Profile()
    lines = []
    for _ in range(args.jobs):
        auto = hf.Operator(dec, stencil, approach="auto", threads=1, tune_options=options)
        profiler.enable()
        seconds = run_job(comm, auto, a, out)
        profiler.disable()
        config = auto.config
        chosen = hf.Operator(dec, stencil, **{k: config[k] for k in CHOICE})
        chosen.apply(a[:1], out=out[:1])
        tuning = config["tuning"]
        parts = ", ".join(f"{name} {value * 1e3:.2f}" for name, value in tuning["parts"].items())
        lines.append(
            f"job {seconds * 1e3:.1f} ms, at the chosen setting {run_job(comm, chosen, a, out) * 1e3:.1f} ms; "
            f"tuning {tuning['tuning_seconds'] * 1e3:.2f} ms, overhead {tuning['overhead_seconds'] * 1e3:.2f} ms, "
            f"budget {(tuning.get('budget_seconds') or 0) * 1e3:.2f} ms, grids {tuning['grids_applied']}, "
            f"{config['schedule']} b={config['batch']} n={config['slope']}\n    parts (ms): {parts}"
        )
    remove_calibration(comm, calibration)
    if comm.rank == 0:
        print("\n".join(lines))
        stream = io.StringIO()
        pstats.Stats(profiler, stream=stream).sort_stats("cumulative").print_stats(args.lines)
        print(stream.getvalue())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
