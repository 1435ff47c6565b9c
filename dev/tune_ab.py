"""The tuner of this checkout against the tuner of an earlier commit, interleaved in the
same processes, on the 1,000-grid job of benchmarks/perfmodel_validation.py (tuning_job.py).

    .venv/bin/python dev/tune_ab.py --baseline 8cabbd0 [--repeats 5] [--edges 24 96] [--dtypes float64]
        [--also-trial-grids 16]

Runs itself under the launcher on 2 ranks. The baseline's tuner (``src/hybridfd/tune.py``,
or the package ``src/hybridfd/tune/``, whichever that commit has) is read with git and
swapped in for ``hybridfd.tune`` (which ``Operator(approach="auto")`` imports at its first
apply) on alternate jobs, so both tuners meet the same load; the C++ core is this
checkout's. Per case and tuner, the medians over ``repeats`` jobs of: the job's time with
``approach="auto"`` (no cache, the tuner's own default options, a calibration file made
first), the tuning time the tuner reports, the grids its trials computed, and its
overhead (tuning time less those grids at the winner's measured speed).
``--also-trial-grids N`` adds a third tuner: this checkout's with ``trial_grids=N``.
Every output is checked bit-identical to flat-original. On a busy machine the job times
swing; the tuner's own counts (grids, entrants) do not.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from types import ModuleType

import numpy as np
from tuning_job import calibration_file, job_case, remove_calibration, run_job

ROOT = Path(__file__).resolve().parents[1]


TUNER = "hybridfd.tune"
Modules = dict[str, ModuleType]


def tuner_modules() -> Modules:
    """The tuner's entries of sys.modules: the module or package and its submodules."""
    return {name: module for name, module in sys.modules.items() if name == TUNER or name.startswith(TUNER + ".")}


def activate(modules: Modules) -> Modules:
    """Make ``modules`` the tuner that ``import hybridfd.tune`` finds (also the submodules a
    package imports lazily); returns the tuner's entries as they were, so that they can be
    activated again later, submodules imported meanwhile included."""
    import hybridfd

    previous = tuner_modules()
    for name in previous:
        del sys.modules[name]
    sys.modules.update(modules)
    if TUNER in modules:
        hybridfd.tune = modules[TUNER]
    return previous


def baseline_modules(commit: str, folder: Path) -> Modules:
    """The tuner of ``commit``, loaded under its own name from a copy of its source."""
    listing = subprocess.run(
        ["git", "-C", str(ROOT), "ls-tree", "--name-only", commit, "src/hybridfd/"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    if "src/hybridfd/tune.py" in listing:
        source = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{commit}:src/hybridfd/tune.py"], check=True, capture_output=True
        ).stdout
        path = folder / "tune.py"
        path.write_bytes(source)
        spec = importlib.util.spec_from_file_location(TUNER, path)
    else:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", commit, "src/hybridfd/tune"], check=True, capture_output=True
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(folder, filter="data")
        package = folder / "src" / "hybridfd" / "tune"
        spec = importlib.util.spec_from_file_location(
            TUNER, package / "__init__.py", submodule_search_locations=[str(package)]
        )
    current = activate({})
    try:
        module = importlib.util.module_from_spec(spec)
        sys.modules[TUNER] = module
        spec.loader.exec_module(module)
    finally:
        baseline = activate(current)
    return baseline


def worker(commit: str, edges: list[int], dtypes: list[str], repeats: int, trial_grids: int | None) -> None:
    from mpi4py import MPI

    import hybridfd as hf
    from hybridfd import tune  # noqa: F401  (this checkout's tuner, in sys.modules)

    comm = MPI.COMM_WORLD
    current = tuner_modules()
    tuners: dict[str, tuple[Modules, dict]] = {"this checkout": (current, {})}
    if trial_grids is not None:
        tuners[f"this checkout, trial_grids {trial_grids}"] = (current, {"trial_grids": trial_grids})
    tuners[commit] = (baseline_modules(commit, Path(tempfile.mkdtemp())), {})
    active = current
    calibration = calibration_file(comm, edges, dtypes, "hybridfd-tune-ab-")
    stencil = hf.Stencil.laplace(2, 0.2)
    cases = []
    for dtype in dtypes:
        for n in edges:
            dec, a, out, reference = job_case(comm, stencil, dtype, n)
            rows: dict[str, list[tuple]] = {name: [] for name in tuners}
            unfinished = dict.fromkeys(tuners, 0)
            for _ in range(repeats):
                for name, (modules, extra) in tuners.items():
                    active.update(activate(modules))  # with the submodules it imported meanwhile
                    active = modules
                    options = {"cache": False, "calibration": calibration, **extra}
                    auto = hf.Operator(dec, stencil, approach="auto", threads=1, tune_options=options)
                    job = run_job(comm, auto, a, out)
                    assert np.array_equal(out, reference)
                    while auto.config["approach_source"] is None:  # still racing at the job's end
                        unfinished[name] += 1
                        auto.apply(a, out=out)
                    tuning = auto.config["tuning"]
                    rows[name].append(
                        (
                            job,
                            tuning["tuning_seconds"],
                            tuning["grids_applied"],
                            tuning["overhead_seconds"],
                            len(tuning["trials"]),
                        )
                    )
                    del auto
            active.update(activate(current))
            active = current
            cases.append(
                {
                    "case": f"{n}^3 {dtype}",
                    "tuners": {name: [float(x) for x in np.median(np.array(r), axis=0)] for name, r in rows.items()},
                    "unfinished": unfinished,
                }
            )
    remove_calibration(comm, calibration)
    if comm.rank == 0:
        from hybridfd import launch

        launch.report_result({"cases": cases})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="commit whose tuner is the baseline")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--edges", type=int, nargs="+", default=[24, 96])
    parser.add_argument("--dtypes", nargs="+", default=["float64", "complex128"])
    parser.add_argument("--also-trial-grids", type=int, default=None, help="add this tuner with trial_grids=N")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.baseline, args.edges, args.dtypes, args.repeats, args.also_trial_grids)
        return 0
    from hybridfd import launch

    argv = [sys.executable, __file__, "--worker", "--baseline", args.baseline, "--repeats", str(args.repeats)]
    argv += ["--edges", *map(str, args.edges), "--dtypes", *args.dtypes]
    if args.also_trial_grids is not None:
        argv += ["--also-trial-grids", str(args.also_trial_grids)]
    summary = launch.worker_result(launch.run(2, argv, timeout=3000))
    print(f"command: {' '.join(['python', *sys.argv])}\n")
    print("| case | tuner | job ms | tuning ms | grids computed by trials | overhead ms | entrants |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for case in summary["cases"]:
        for name, (job, tuning, grids, overhead, entrants) in case["tuners"].items():
            print(
                f"| {case['case']} | {name} | {job * 1e3:.1f} | {tuning * 1e3:.1f} | {grids:.0f} | "
                f"{overhead * 1e3:.1f} | {entrants:.0f} |"
            )
    print(f"\nmedians of {args.repeats} jobs per tuner, interleaved")
    for case in summary["cases"]:
        for name, count in case["unfinished"].items():
            if count:
                print(f"{case['case']}, {name}: {count} applies after the jobs to finish tunings still racing")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
