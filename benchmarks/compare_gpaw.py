"""hybridfd vs GPAW's own C Laplace operator: the same job under the same kind of
mpiexec, launched alternately in one run (rounds), so machine drift hits both alike.

    .venv/bin/python benchmarks/compare_gpaw.py [--gpaw-python /path/to/gpaw/venv/bin/python]
        [--ranks 1 2] [--shape 96] [--grids 16] [--rounds 3]

GPAW lives in a virtual environment of its own, never as a dependency of hybridfd
(shared/PEERS.md; `make peers` builds it in .peers/gpaw). Without it this script says so
and exits 0. Job: G periodic grids of N^3 points, 13-point Laplacian (GPAW's Laplace with
n=2, spacing 0.2), float64 and complex128, default decomposition of each code (both
choose (P, 1, 1) here). Correctness: the checksum sum(b * conj(a)) of both results must
agree to 1e-10 relative (the codes sum each point in different orders).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_GPAW_PYTHON = ROOT / ".peers" / "gpaw" / "bin" / "python"
HYBRIDFD_CONFIGS = {
    "flat-original": {"approach": "flat-original"},
    "flat-optimized": {"approach": "flat-optimized"},
    "all-dims b=8": {"schedule": "all-dims", "batch": 8},
}


def hybridfd_worker(shape: int, grids: int, dtype: str, repeats: int) -> None:
    from mpi4py import MPI

    import hybridfd as hf
    from hybridfd.timing import time_apply  # median of the slowest rank's time per apply

    sys.path.insert(0, str(Path(__file__).parent / "peers"))
    from job import field  # the same input as GPAW's side

    comm = MPI.COMM_WORLD
    dec = hf.Decomposition(hf.Domain((shape,) * 3, dtype=dtype), comm)
    box = dec.box()
    g, x, y, z = np.meshgrid(
        np.arange(grids), *(np.arange(o, o + e) for o, e in zip(box.offset, box.extent, strict=True)), indexing="ij"
    )
    a = np.ascontiguousarray(field(g, x, y, z, shape) * (1 + 0.5j if dtype == "complex128" else 1))
    b = np.empty_like(a)
    result = {"process_grid": list(dec.grid)}
    stencil = hf.Stencil.laplace(2, 0.2)
    for label, options in HYBRIDFD_CONFIGS.items():
        op = hf.Operator(dec, stencil, **options)
        op.apply(a, out=b)
        seconds = time_apply(op, a, b, repeats)
        checksum = comm.allreduce(complex(np.sum(b * np.conj(a))), op=MPI.SUM)
        result[label] = {
            "ms_per_grid": 1e3 * seconds / grids,
            "checksum": [checksum.real, checksum.imag],
        }
    if comm.rank == 0:
        from hybridfd import launch

        launch.report_result(result)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpaw-python", type=Path, default=DEFAULT_GPAW_PYTHON)
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--shape", type=int, default=96)
    parser.add_argument("--grids", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--worker", choices=("float64", "complex128"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        hybridfd_worker(args.shape, args.grids, args.worker, args.repeats)
        return 0
    if not args.gpaw_python.exists():
        print(f"GPAW is not installed at {args.gpaw_python}; run `make peers` (see shared/PEERS.md). Skipping.")
        return 0
    from hybridfd import launch

    gpaw_mpiexec = str(args.gpaw_python.parent / "mpiexec")
    job = ["--shape", str(args.shape), "--grids", str(args.grids), "--repeats", str(args.repeats)]
    samples: dict[tuple, list[float]] = {}
    checks = []
    for _ in range(args.rounds):
        for ranks in args.ranks:
            for dtype in ("float64", "complex128"):
                gpaw = launch.run(
                    ranks,
                    [
                        str(args.gpaw_python),
                        str(Path(__file__).parent / "peers" / "gpaw_laplace.py"),
                        *job,
                        "--dtype",
                        dtype,
                    ],
                    timeout=1200,
                    extra_env={"GPAW_MPI_BACKEND": "mpi4py", "OMP_NUM_THREADS": "1"},
                    mpiexec=gpaw_mpiexec,
                )
                ours = launch.run(ranks, [sys.executable, __file__, "--worker", dtype, *job], timeout=1200)
                for name, result in (("GPAW", gpaw), ("hybridfd", ours)):
                    if result.returncode != 0 or result.timed_out:
                        print(f"{name} failed: {' '.join(result.command)}\n{result.output}", file=sys.stderr)
                        return 1
                theirs, mine = launch.worker_result(gpaw), launch.worker_result(ours)
                samples.setdefault((ranks, dtype, "GPAW Laplace.apply"), []).append(theirs["ms_per_grid"])
                reference = complex(*theirs["checksum"])
                for label in HYBRIDFD_CONFIGS:
                    samples.setdefault((ranks, dtype, f"hybridfd {label}"), []).append(mine[label]["ms_per_grid"])
                    value = complex(*mine[label]["checksum"])
                    checks.append(abs(value - reference) / abs(reference))
    worst = max(checks)
    print(f"command: {' '.join(['python', *sys.argv])}  cores: {os.cpu_count()}")
    print(f"checksums of every hybridfd configuration agree with GPAW's to {worst:.1e} relative")
    if worst > 1e-10:
        print("ERROR: results differ")
        return 1
    print(f"\n{args.grids} grids of {args.shape}^3, medians of {args.rounds} launches x {args.repeats} applies\n")
    print("| ranks | dtype | code | ms per grid | GPAW / this |")
    print("|---:|---|---|---:|---:|")
    rows = []
    for ranks in args.ranks:
        for dtype in ("float64", "complex128"):
            gpaw_ms = float(np.median(samples[(ranks, dtype, "GPAW Laplace.apply")]))
            for key, values in samples.items():
                if key[:2] != (ranks, dtype):
                    continue
                ms = float(np.median(values))
                rows.append(
                    {"ranks": ranks, "dtype": dtype, "code": key[2], "ms_per_grid": ms, "gpaw_over": gpaw_ms / ms}
                )
                print(f"| {ranks} | {dtype} | {key[2]} | {ms:.2f} | {gpaw_ms / ms:.2f}x |")
    (ROOT / "results").mkdir(exist_ok=True)
    (ROOT / "results" / "compare_gpaw.json").write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
