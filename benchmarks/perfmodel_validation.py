"""Performance-model validation (GPAW journal Sect. 5.1.2, Fig. 5.2): predicted against
measured apply time of flat double-buffered batches, batch 1..64 and slope 0..3, on 2
ranks, sub-grids of 24^3 and 96^3 per rank, float64 and complex128; the model's best
batch/slope against the measured best; the tuner's choices and their cost on a
1,000-grid job; and the model applied to the GPAW journal's Blue Gene/P numbers.

    .venv/bin/python benchmarks/perfmodel_validation.py [--repeats 5] [--quick] [--trial-grids N]

Runs itself under the launcher on 2 ranks. One run: calibration first (ping-pong, kernel
C, pack cost: :mod:`hybridfd.perfmodel.calibrate`), saved as the tuner's calibration
file; then per case every setting timed in interleaved rounds (median of the rounds; a
round's time is the slowest rank's); then a job of 1,000 grids, applied 64 at a time,
with ``approach="auto"`` (no cache: it tunes on the job's own grids) interleaved with
the same job at the best measured setting; then each tuned choice timed beside the best.
Every output is checked bit-identical to flat-original. Writes
results/perfmodel_validation.json and results/perfmodel_validation.png.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
from tuning_job import GRIDS, JOB_GRIDS, job_case, run_job

ROOT = Path(__file__).resolve().parents[1]
BATCHES = (1, 2, 4, 8, 16, 32, 64)


def settings() -> list[tuple[int, int]]:
    return [(b, n) for b in BATCHES for n in range(min(3, b.bit_length() - 1) + 1)]


CHOICE = ("approach", "model", "schedule", "transport", "batch", "slope", "threads")


def label(config: dict) -> str:
    return (
        f"{config['model']}/{config['schedule']}/{config['transport']} b={config['batch']} n={config['slope']} "
        f"T={config['threads']} ({config['approach']})"
    )


def timed_apply(comm: object, op: object, a: np.ndarray, out: np.ndarray) -> float:
    """One apply after a barrier: the slowest rank's seconds."""
    from mpi4py import MPI

    comm.Barrier()
    begin = time.perf_counter()
    op.apply(a, out=out)
    return comm.allreduce(time.perf_counter() - begin, op=MPI.MAX)


def worker(quick: bool, repeats: int, trial_grids: int | None) -> None:
    from mpi4py import MPI

    import hybridfd as hf
    from hybridfd.perfmodel import calibrate, predict, problem_of

    comm = MPI.COMM_WORLD
    stencil = hf.Stencil.laplace(2, 0.2)
    edges = (12, 24) if quick else (24, 96)
    dtypes = ("float64",) if quick else ("float64", "complex128")
    start = time.perf_counter()
    entry = calibrate.calibrate(comm, subgrids=edges, dtypes=dtypes, repeats=repeats)
    calibration_seconds = time.perf_counter() - start
    # The tuner reads this run's calibration, as it would read `hybridfd calibrate`'s file:
    # calibration is once per machine and rank count, tuning once per problem.
    calibration_file = ROOT / "results" / f"perfmodel_validation_calibration_{comm.size}.json"
    if comm.rank == 0:
        calibration_file.parent.mkdir(exist_ok=True)
        calibrate.save(entry, calibration_file)
    comm.Barrier()
    cases = []
    for dtype in dtypes:
        for n in edges:
            dec, a, out, reference = job_case(comm, stencil, dtype, n)
            problem = problem_of(dec, stencil.radius, GRIDS)
            costs = calibrate.costs(entry, dtype, problem.points)
            operators = {
                s: hf.Operator(dec, stencil, approach="flat-optimized", batch=s[0], slope=s[1]) for s in settings()
            }
            times: dict[tuple[int, int], list[float]] = {s: [] for s in settings()}
            for op in operators.values():
                op.apply(a, out=out)
            for _ in range(repeats):  # interleaved rounds: noise hits every setting alike
                for setting, op in operators.items():
                    times[setting].append(timed_apply(comm, op, a, out))
                    assert np.array_equal(out, reference), setting
            rows = []
            for (batch, slope), measured in times.items():
                predicted = predict(costs, problem, model="flat", schedule="double-buffered", batch=batch, slope=slope)
                rows.append(
                    {"batch": batch, "slope": slope, "predicted": predicted, "measured": float(np.median(measured))}
                )
            best_setting = min(times, key=lambda s: np.median(times[s]))
            best = operators[best_setting]
            del operators

            # The job, tuned on its own grids by approach="auto" (no cache), against the
            # same job with the best setting measured above; interleaved, `repeats` each.
            options = {"cache": False, "calibration": calibration_file}
            if trial_grids is not None:
                options["trial_grids"] = trial_grids
            job_auto, job_best, decisions, unfinished = [], [], [], 0
            for _ in range(repeats):
                auto = hf.Operator(dec, stencil, approach="auto", threads=1, tune_options=options)
                job_auto.append(run_job(comm, auto, a, out))
                assert np.array_equal(out, reference)
                # A tuning still racing when the job ends (every entrant's chunks did not
                # fit in it) is finished on more applies, outside the job's time, and
                # counted: the job's time then holds only part of the tuning.
                unfinished += auto.config["approach_source"] is None
                while auto.config["approach_source"] is None:
                    auto.apply(a, out=out)
                decisions.append(auto.config)
                del auto
                # The same job at the best setting, started as the auto job is: from a
                # fresh Operator, its first apply inside the job.
                fresh_best = hf.Operator(
                    dec, stencil, approach="flat-optimized", batch=best_setting[0], slope=best_setting[1]
                )
                job_best.append(run_job(comm, fresh_best, a, out))
                del fresh_best
            # Each distinct tuned choice, timed in interleaved rounds beside the best.
            chosen = [tuple(c[k] for k in CHOICE) for c in decisions]
            tuned_ops = {
                choice: hf.Operator(dec, stencil, **dict(zip(CHOICE, choice, strict=True)))
                for choice in dict.fromkeys(chosen)
            }
            tuned_times: dict[tuple, list[float]] = {choice: [] for choice in tuned_ops}
            best_times: list[float] = []
            for op in tuned_ops.values():
                op.apply(a, out=out)
            for _ in range(repeats):
                best_times.append(timed_apply(comm, best, a, out))
                for choice, op in tuned_ops.items():
                    tuned_times[choice].append(timed_apply(comm, op, a, out))
                    assert np.array_equal(out, reference)
            del tuned_ops, best
            tunings = [
                {
                    "setting": label(dict(zip(CHOICE, choice, strict=True))),
                    "vs_best": float(np.median(tuned_times[choice]) / np.median(best_times)),
                }
                for choice in chosen
            ]
            cases.append(
                {
                    "subgrid": n,
                    "dtype": dtype,
                    "rows": rows,
                    "costs": costs.__dict__,
                    "best_setting": best_setting,
                    "tunings": tunings,
                    "decisions": [
                        {
                            "setting": label(c),
                            "tuning_seconds": c["tuning"]["tuning_seconds"],
                            "grids_applied": c["tuning"]["grids_applied"],
                            "overhead_seconds": c["tuning"]["overhead_seconds"],
                            "parts": c["tuning"]["parts"],
                            "source": c["approach_source"],
                        }
                        for c in decisions
                    ],
                    "job_auto": float(np.median(job_auto)),
                    "unfinished": unfinished,
                    "job_best": float(np.median(job_best)),
                    "job_overheads": [x / y - 1 for x, y in zip(job_auto, job_best, strict=True)],
                }
            )
    if comm.rank == 0:
        summary = {
            "ranks": comm.size,
            "grids": GRIDS,
            "job_grids": JOB_GRIDS,
            "calibration_seconds": calibration_seconds,
            "latency": entry["latency"],
            "bandwidth": entry["bandwidth"],
            "half_bandwidth_bytes": entry["half_bandwidth_bytes"],
            "cases": cases,
        }
        from hybridfd import launch

        launch.report_result(summary)


def bluegene_p() -> list[dict]:
    """Fig. 5.2 and the total-time model on the GPAW journal's Blue Gene/P numbers.

    Assumptions, all from the journal: links 425 MB/s each way (Table 3.1), the six faces
    on six links at once (Sect. 5.1: "utilize the torus network in all six directions
    simultaneously"), so the aggregate send bandwidth is 6 x 425 MB/s; half bandwidth
    near 10^3 bytes (Fig. 3.1), so Hockney's latency l = n_1/2 / B = 10^3 / 425e6 s;
    compute per point from Table 3.1 at peak: 13.6 GFlop/s per node over 4 cores, 25
    flops per 13-point stencil point (13 multiplies, 12 adds), 7.35 ns, a lower bound, and
    4x that as a realistic PowerPC 450 rate; packing and synchronisation left out, as
    the paper does. Settings: Fig. 7.2's 32 grids of 144^3 on 2,048 cores (virtual mode,
    flat-optimized), and Fig. 7.4's 2,816 grids of 192^3 on 16,384 cores.
    """
    from hybridfd.decomposition import automatic_grid
    from hybridfd.perfmodel import Costs, Problem, halo_bytes_per_grid, predict

    link, half = 425e6, 1e3
    results = []
    for shape, ranks, grids in ((144, 2048, 32), (192, 16384, 2816)):
        grid = automatic_grid((shape,) * 3, ranks)
        extent = tuple(math.ceil(shape / p) for p in grid)
        points = math.prod(extent)
        every = ((True, True),) * 3
        problem = Problem(grids, points, halo_bytes_per_grid(extent, 2, 8, every), math.prod(e - 4 for e in extent))
        for label, per_point in (
            ("peak (7.35 ns/point)", 25 / 3.4e9),
            ("4x peak time (29.4 ns/point)", 4 * 25 / 3.4e9),
        ):

            def best(latency: float, per_point: float = per_point, problem: Problem = problem) -> tuple:
                costs = Costs(
                    latency=latency,
                    bandwidth=6 * link,
                    compute_per_point=per_point,
                    pack_per_byte=0.0,
                    sync=0.0,
                    cores=4,
                    ranks_per_host=4,
                )
                scored = []
                for batch in (b for b in (1, 2, 4, 8, 16, 32, 64, 128) if b <= problem.grids):
                    for slope in range(min(3, batch.bit_length() - 1) + 1):
                        seconds = predict(
                            costs, problem, model="flat", schedule="double-buffered", batch=batch, slope=slope
                        )
                        scored.append((seconds, batch, slope))
                return min(scored), next(s for s in scored if s[1] == 8 and s[2] == 0)

            (seconds, batch, slope), paper = best(half / link)
            # The latency per exchange at which the model would pick a batch of 8 or more
            # (the journal's choice): scanned over 1 us .. 10 ms, 20 steps per decade.
            needed = next((lat for lat in np.logspace(-6, -2, 81) if best(lat)[0][1] >= 8), None)
            results.append(
                {
                    "setting": f"{grids} grids of {shape}^3 on {ranks} cores, boxes {extent}",
                    "compute": label,
                    "best_batch": batch,
                    "best_slope": slope,
                    "best_ms": seconds * 1e3,
                    "batch8_ms": paper[0] * 1e3,
                    "halo_bytes_per_grid": problem.bytes_per_grid,
                    "latency_for_batch8_us": None if needed is None else float(needed) * 1e6,
                }
            )
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--trial-grids", type=int, default=None, help="the tuner's trial chunk (default: its own)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.quick, args.repeats, args.trial_grids)
        return 0
    from hybridfd import launch

    argv = [sys.executable, __file__, "--worker", "--repeats", str(args.repeats), *(["--quick"] if args.quick else [])]
    if args.trial_grids is not None:
        argv += ["--trial-grids", str(args.trial_grids)]
    result = launch.run(2, argv, timeout=3000)
    summary = launch.worker_result(result)
    summary["bluegene_p"] = bluegene_p()
    print(f"command: {' '.join(['python', *sys.argv])}\n")
    print(
        f"calibration ({summary['ranks']} ranks, {summary['calibration_seconds']:.1f} s): "
        f"l = {summary['latency'] * 1e6:.2f} us, B = {summary['bandwidth'] / 1e9:.2f} GB/s, "
        f"half bandwidth at {summary['half_bandwidth_bytes']:.0f} B\n"
    )
    overview = []
    for case in summary["cases"]:
        rows = case["rows"]
        errors = [abs(r["predicted"] - r["measured"]) / r["measured"] for r in rows]
        model_best = min(rows, key=lambda r: r["predicted"])
        measured_best = min(rows, key=lambda r: r["measured"])
        within = sum(r["measured"] <= 1.05 * measured_best["measured"] for r in rows)
        case["median_relative_error"] = float(np.median(errors))
        case["model_best"] = (model_best["batch"], model_best["slope"])
        case["measured_best"] = (measured_best["batch"], measured_best["slope"])
        case["model_pick_vs_best"] = model_best["measured"] / measured_best["measured"]
        # The median of the pairs' ratios: a pair's two jobs ran side by side, under the
        # same load, which the ratio of two medians does not keep.
        case["job_overhead"] = float(np.median(case["job_overheads"]))
        name = f"{case['subgrid']}^3 {case['dtype']}"
        print(f"### {GRIDS} grids of {name} per rank, flat double-buffered\n")
        print("| batch | slope | predicted ms | measured ms | error |")
        print("|---:|---:|---:|---:|---:|")
        for r in rows:
            print(
                f"| {r['batch']} | {r['slope']} | {r['predicted'] * 1e3:.3f} | {r['measured'] * 1e3:.3f} | "
                f"{(r['predicted'] / r['measured'] - 1) * 100:+.0f} % |"
            )
        print(
            f"\nmedian relative error {case['median_relative_error'] * 100:.0f} %; model's best (b, n) = "
            f"{case['model_best']}, measured best = {case['measured_best']}; the model's pick measures "
            f"{case['model_pick_vs_best']:.3f}x the best; {within} of {len(rows)} settings within 5 % of the best\n"
        )
        print(f"A job of {JOB_GRIDS} grids ({GRIDS} per apply) with approach='auto', tuned on its own grids:\n")
        print("| tuning | chosen | by | chosen vs best | tuning s | grids computed by trials | overhead s |")
        print("|---:|---|---|---:|---:|---:|---:|")
        for i, (decision, tuning) in enumerate(zip(case["decisions"], case["tunings"], strict=True), 1):
            print(
                f"| {i} | {decision['setting']} | {decision['source']} | {tuning['vs_best']:.3f}x | "
                f"{decision['tuning_seconds']:.3f} | {decision['grids_applied']} | {decision['overhead_seconds']:.3f} |"
            )
        print(
            f"\njob time: auto {case['job_auto']:.3f} s, best setting {case['job_best']:.3f} s: tuning costs "
            f"{case['job_overhead'] * 100:+.1f} % of the job (median of {len(case['decisions'])} pairs' ratios)"
            + (
                f"; {case['unfinished']} tunings still racing at the job's end (finished after it, untimed)"
                if case["unfinished"]
                else ""
            )
        )
        names = dict.fromkeys(name for d in case["decisions"] for name in d["parts"])
        parts = {name: float(np.median([d["parts"].get(name, 0.0) for d in case["decisions"]])) for name in names}
        print(
            "where tuning time went (rank 0, medians, ms): "
            + ", ".join(f"{name} {seconds * 1e3:.2f}" for name, seconds in parts.items())
            + "\n"
        )
        overview.append(
            (
                name,
                case["median_relative_error"],
                case["model_best"],
                case["measured_best"],
                case["model_pick_vs_best"],
                f"{within} of {len(rows)}",
                [t["vs_best"] for t in case["tunings"]],
                case["job_overhead"],
            )
        )
    tunings = [ratio for row in overview for ratio in row[6]]
    print("### Summary\n")
    print(
        "| sub-grid | median error | model's best (b, n) | measured best (b, n) | model's pick vs best "
        "| settings within 5 % | tuned choices vs best | tuning cost, % of the job |"
    )
    print("|---|---:|---|---|---:|---:|---|---:|")
    for name, error, model, measured, pick, within, ratios, overhead in overview:
        print(
            f"| {name} | {error * 100:.0f} % | {model} | {measured} | {pick:.2f}x | {within} | "
            f"{', '.join(f'{r:.2f}x' for r in ratios)} | {overhead * 100:+.1f} % |"
        )
    print(
        f"\ntuned choices within 5 % of the best: {sum(r <= 1.05 for r in tunings)} of {len(tunings)}; "
        f"calibration (once per machine and rank count) took {summary['calibration_seconds']:.1f} s\n"
    )
    print("### The model on the GPAW journal's Blue Gene/P numbers\n")
    print("| setting | compute | best batch | best slope | predicted ms | batch 8, slope 0 ms | l for b >= 8 |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in summary["bluegene_p"]:
        needed = "none up to 10 ms" if r["latency_for_batch8_us"] is None else f"{r['latency_for_batch8_us']:.0f} us"
        print(
            f"| {r['setting']} | {r['compute']} | {r['best_batch']} | {r['best_slope']} | {r['best_ms']:.3f} | "
            f"{r['batch8_ms']:.3f} | {needed} |"
        )
    (ROOT / "results").mkdir(exist_ok=True)
    (ROOT / "results" / "perfmodel_validation.json").write_text(json.dumps(summary, indent=2))
    if not args.quick:
        plot(summary, ROOT / "results" / "perfmodel_validation.png")
    return 0


def plot(summary: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = summary["cases"]
    columns = min(len(cases), 2)
    fig, axes = plt.subplots(
        math.ceil(len(cases) / columns), columns, figsize=(5.5 * columns, 4 * math.ceil(len(cases) / columns))
    )
    for ax, case in zip(np.ravel(axes), cases, strict=True):
        for slope, marker in zip(range(4), "osD^", strict=True):
            rows = [r for r in case["rows"] if r["slope"] == slope]
            if not rows:
                continue
            (line,) = ax.plot(
                [r["batch"] for r in rows], [r["measured"] * 1e3 for r in rows], marker, label=f"measured n={slope}"
            )
            ax.plot(
                [r["batch"] for r in rows],
                [r["predicted"] * 1e3 for r in rows],
                "--",
                color=line.get_color(),
                label=f"predicted n={slope}",
            )
        ax.set_xscale("log", base=2)
        ax.set_xlabel("batch size b (grids per message)")
        ax.set_ylabel("ms per apply (slowest rank)")
        ax.set_title(f"{summary['ranks']} ranks, {GRIDS} grids of {case['subgrid']}^3 {case['dtype']}", fontsize=9)
        ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    raise SystemExit(main())
