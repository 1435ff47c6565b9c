"""Where the tuner's time goes on a 1,000-grid job (the budget: under 5 % of the job).

    .venv/bin/python dev/tune_overhead.py [--repeats 5] [--edges 24 96] [--dtypes float64 complex128]

Runs itself under the launcher on 2 ranks, on the problem of
benchmarks/perfmodel_validation.py: per rank 64 grids of n^3 (x cut in two, periodic,
13-point Laplacian), a job of 1,000 grids applied 64 at a time. Per case: a calibration
file (a quick one, made first, as `hybridfd calibrate` would), then ``repeats``
interleaved pairs of the job with ``approach="auto"`` (no cache: tuned on the job's own
grids) and the job with the setting that tuning chose, its Operator built just before
the job and not warmed, as the auto job's is (both pay their first apply); the tuner's
own account of its time by part (``config["tuning"]["parts"]``, rank 0's clock; the
calibration part of the process's first tuning apart, as the schema check is remembered
after it); and the fixed costs alone: per transport, an overlap Operator of batch 64
built, its first and second 64-grid applies (the first one is a trial's chunk, timed
with no warm-up) and freed; and :func:`hybridfd.tune.presets`. Every auto job's output
is checked bit-identical to flat-original. Medians throughout; a job's time is the
slowest rank's.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from tuning_job import GRIDS, JOB_GRIDS, calibration_file, job_case, remove_calibration, run_job

CHOICE = ("approach", "model", "schedule", "transport", "batch", "slope", "threads")


def slowest(comm: object, seconds: float) -> float:
    from mpi4py import MPI

    return comm.allreduce(seconds, op=MPI.MAX)


def worker(edges: list[int], dtypes: list[str], repeats: int) -> None:
    from mpi4py import MPI

    import hybridfd as hf
    from hybridfd import tune

    comm = MPI.COMM_WORLD
    stencil = hf.Stencil.laplace(2, 0.2)
    calibration = calibration_file(comm, edges, dtypes, "hybridfd-tune-overhead-")
    cases = []
    for dtype in dtypes:
        for n in edges:
            dec, a, out, reference = job_case(comm, stencil, dtype, n)
            options = {"cache": False, "calibration": calibration}
            auto_jobs, chosen_jobs, decisions, unfinished = [], [], [], 0
            for _ in range(repeats):
                auto = hf.Operator(dec, stencil, approach="auto", threads=1, tune_options=options)
                auto_jobs.append(run_job(comm, auto, a, out))
                assert np.array_equal(out, reference)
                while auto.config["approach_source"] is None:  # still racing at the job's end
                    unfinished += 1
                    auto.apply(a, out=out)
                config = auto.config
                decisions.append(config)
                del auto
                # The same job at the setting tuning chose, started as the auto job is:
                # from a fresh Operator, its first apply inside the job.
                chosen = hf.Operator(dec, stencil, **{k: config[k] for k in CHOICE})
                chosen_jobs.append(run_job(comm, chosen, a, out))
                del chosen
            # Fixed costs alone, per transport: an overlap Operator of batch 64 built, its
            # first and second applies of GRIDS grids, freed; and presets().
            build = {}
            for transport in hf.transport_names():
                samples = []
                for _ in range(repeats):
                    steps = []
                    try:
                        comm.Barrier()
                        begin = time.perf_counter()
                        op = hf.Operator(
                            dec, stencil, approach="flat-optimized", schedule="overlap", batch=64, transport=transport
                        )
                        steps.append(slowest(comm, time.perf_counter() - begin))
                    except ValueError:
                        samples = []
                        break
                    for _ in range(2):
                        comm.Barrier()
                        begin = time.perf_counter()
                        op.apply(a, out=out)
                        steps.append(slowest(comm, time.perf_counter() - begin))
                    comm.Barrier()
                    begin = time.perf_counter()
                    del op
                    steps.append(slowest(comm, time.perf_counter() - begin))
                    samples.append(steps)
                if samples:
                    build[transport] = [float(x) for x in np.median(np.array(samples), axis=0)]
            samples = []
            for _ in range(repeats):
                begin = time.perf_counter()
                tune.presets()
                samples.append(slowest(comm, time.perf_counter() - begin))
            parts: dict[str, list[float]] = {}
            for config in decisions:
                for name, seconds in config["tuning"]["parts"].items():
                    parts.setdefault(name, []).append(seconds)
            cases.append(
                {
                    "case": f"{n}^3 {dtype}",
                    "auto": float(np.median(auto_jobs)),
                    "chosen": float(np.median(chosen_jobs)),
                    "overhead": [x / y - 1 for x, y in zip(auto_jobs, chosen_jobs, strict=True)],
                    "tuning_seconds": float(np.median([c["tuning"]["tuning_seconds"] for c in decisions])),
                    "overhead_seconds": float(np.median([c["tuning"]["overhead_seconds"] for c in decisions])),
                    "budget_seconds": float(np.median([c["tuning"]["budget_seconds"] for c in decisions])),
                    "grids_applied": [c["tuning"]["grids_applied"] for c in decisions],
                    "parts": {name: float(np.median(values)) for name, values in parts.items()},
                    "first_calibration": decisions[0]["tuning"]["parts"]["calibration"],
                    "trials": [len(c["tuning"]["trials"]) for c in decisions],
                    "trial_grids": [c["tuning"]["trial_grids"] for c in decisions],
                    "unfinished": unfinished,
                    "settings": [f"{c['schedule']}/{c['transport']} b={c['batch']} n={c['slope']}" for c in decisions],
                    "sources": [c["approach_source"] for c in decisions],
                    "races": [c["tuning"]["race"] for c in decisions],
                    "within_budget": sum(
                        c["tuning"]["overhead_seconds"] <= c["tuning"]["budget_seconds"] for c in decisions
                    ),
                    "build_and_first_chunk": build,
                    "presets": float(np.median(samples)),
                }
            )
    remove_calibration(comm, calibration)
    if comm.rank == 0:
        from hybridfd import launch

        launch.report_result({"cases": cases})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--edges", type=int, nargs="+", default=[24, 96])
    parser.add_argument("--dtypes", nargs="+", default=["float64", "complex128"])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.edges, args.dtypes, args.repeats)
        return 0
    from hybridfd import launch

    argv = [sys.executable, __file__, "--worker", "--repeats", str(args.repeats), "--edges"]
    argv += [str(e) for e in args.edges] + ["--dtypes", *args.dtypes]
    summary = launch.worker_result(launch.run(2, argv, timeout=3000))
    print(f"command: {' '.join(['python', *sys.argv])}\n")
    for case in summary["cases"]:
        print(f"### {case['case']}: job of {JOB_GRIDS} grids, {GRIDS} per apply\n")
        overheads = ", ".join(f"{x * 100:+.1f} %" for x in case["overhead"])
        print(
            f"auto {case['auto'] * 1e3:.1f} ms, chosen setting {case['chosen'] * 1e3:.1f} ms (medians); "
            f"auto / chosen - 1 per pair: {overheads} (median {np.median(case['overhead']) * 100:+.1f} %)"
        )
        print(
            f"tuning {case['tuning_seconds'] * 1e3:.1f} ms, of which overhead {case['overhead_seconds'] * 1e3:.1f} ms "
            f"(tuning less the trials' grids at the winner's speed; budget {case['budget_seconds'] * 1e3:.1f} ms); "
            f"grids computed by trials "
            f"{case['grids_applied']}; entrants {case['trials']}; grids per trial chunk {case['trial_grids']}"
            + (f"; applies after the job to finish tuning: {case['unfinished']}" if case["unfinished"] else "")
        )
        print(f"settings chosen: {'; '.join(case['settings'])}")
        print(
            f"overhead within its budget in {case['within_budget']} of {len(case['sources'])} tunings; "
            f"decided by: {', '.join(case['sources'])}"
        )
        print(f"race (first tuning): {case['races'][0]}\n")
        print("| part | ms (median) |\n|---|---:|")
        for name, seconds in case["parts"].items():
            print(f"| {name} | {seconds * 1e3:.2f} |")
        print(f"\ncalibration part of the first tuning in the process: {case['first_calibration'] * 1e3:.2f} ms")
        print(f"presets(): {case['presets'] * 1e3:.2f} ms\n")
        print(f"| overlap b=64, transport | build ms | first apply of {GRIDS} ms | second apply ms | free ms |")
        print("|---|---:|---:|---:|---:|")
        for transport, steps in case["build_and_first_chunk"].items():
            print(f"| {transport} | " + " | ".join(f"{x * 1e3:.2f}" for x in steps) + " |")
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
