"""hybridfd side by side with its peers: GPAW's own C Laplace operator (default PyPI build,
and its GPAW_ASYNC + OpenMP build) and Devito's batched one-pass Laplacian, the same job
under the same launcher (hybridfd.launch, MPICH's yield settings), each code in its own
environment and processes, launched alternately in rounds so machine drift hits all alike.

    .venv/bin/python benchmarks/compare_peers.py kernel   [--rounds 3] [--repeats 5]
    .venv/bin/python benchmarks/compare_peers.py latency  [--ranks 2 4] [--rounds 3] [--repeats 3]
    .venv/bin/python benchmarks/compare_peers.py curve    [--sizes 16 24 32 48 64 96 128]
    .venv/bin/python benchmarks/compare_peers.py general  [--rounds 5] [--repeats 3]

kernel: 1 rank, 32 grids of 96^3, float64 and complex128 (the kernel against the peers'
kernels). latency: 2 and 4 ranks, per rank 64 grids of 96^3 and 512 grids of 24^3,
float64 (latency hiding against theirs). curve: 1 rank, float64 and complex128,
throughput against grid size. general: 1 rank, 32 grids of 96^3, float64 and complex128,
GPAW's Laplacian of a non-orthogonal (fcc) cell, GUCLaplace with n = 2 and 3 (a general
stencil: offsets along six directions, edge ghosts), against GPAW's own apply of it;
general_rounds says more.

Every job but general: per rank an n^3 box of a (P*n, n, n) domain cut into (P, 1, 1)
boxes, 13-point radius-2 Laplacian, spacing 0.2, input job.field of the global point. GPAW is periodic
(hybridfd's periodic result is compared with it per grid to 1e-10); Devito has no periodic
boundary, so it is compared with hybridfd's non-periodic result on interior points, per
grid and pointwise on grid 0, to 1e-8 of the size of the stencil's terms (Devito prints its
weights with 9 digits, so they do not sum to zero; one_round says more). Each hybridfd
setting is timed on both boundaries in the same launch; ratios pair codes on the same
boundary. Peers live in .peers/ (`make peers`; docs/install.md says what they need); a
peer that is absent is skipped with a message. `make bench-peers` runs kernel, latency and
curve.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from peers.job import checksum_difference, sample_difference

ROOT = Path(__file__).resolve().parents[1]
PEERS_DIR = Path(__file__).resolve().parent / "peers"

#: Peer environments (Makefile `peers`).
GPAW_DEFAULT = ROOT / ".peers" / "gpaw"
GPAW_ASYNC = ROOT / ".peers" / "gpaw-async"
DEVITO = ROOT / ".peers" / "devito"

#: hybridfd settings timed in every job: the papers' two flat approaches and the settings
#: that benchmarks/latency_hiding.py finds best on this machine ("best" is the fastest of
#: them in the same run).
HYBRIDFD_CONFIGS = {
    "flat-original": {"approach": "flat-original"},
    "flat-optimized": {"approach": "flat-optimized"},
    "all-dims b=8": {"schedule": "all-dims", "batch": 8},
    "all-dims b=64": {"schedule": "all-dims", "batch": 64},
    "double-buffered b=64": {"schedule": "double-buffered", "batch": 64},
    "overlap b=16 progress=1": {"schedule": "overlap", "batch": 16, "progress": 1},
}
#: GPAW_MPI_OPTIMAL_MSG_SIZE values swept (KiB per message; 0 = unset, one grid per message).
GPAW_MSG_SIZES = [0, 64, 256, 1024, 4096]
#: hybridfd settings timed on the general-stencil jobs, and the kernel alone on a padded
#: grid (hybridfd.kernel.apply_padded): what the halo exchange adds.
GENERAL_CONFIGS = {
    "flat-original": {"approach": "flat-original"},
    "all-dims b=8": {"schedule": "all-dims", "batch": 8},
}
GENERAL_KERNEL = "kernel on padded grids"
DEVITO_LABEL = "Devito batched apply (non-periodic)"
CHECKSUM_TOLERANCE = {"GPAW": 1e-10, "Devito": 1e-8}


def hybridfd_worker(n: int, grids: int, dtype: str, repeats: int, save_dir: str) -> None:
    from mpi4py import MPI
    from peers.job import field, gather_first_grid, interior_checksums

    import hybridfd as hf
    from hybridfd import launch
    from hybridfd.timing import time_apply  # median of the slowest rank's time per apply

    comm = MPI.COMM_WORLD
    shape = (n * comm.size, n, n)
    stencil = hf.Stencil.laplace(2, 0.2)
    result = {}
    for periodic in (True, False):
        dec = hf.Decomposition(hf.Domain(shape, dtype=dtype, periodic=periodic), comm, grid=(comm.size, 1, 1))
        box = dec.box()
        g, x, y, z = np.meshgrid(
            np.arange(grids), *(np.arange(o, o + e) for o, e in zip(box.offset, box.extent, strict=True)), indexing="ij"
        )
        # Where hybridfd places a batch it makes (Decomposition.scatter), as Devito places
        # its own Functions' data.
        a = hf.empty_aligned(g.shape, dtype)
        a[...] = field(g, x, y, z, n) * (1 + 0.5j if dtype == "complex128" else 1)
        del g, x, y, z
        out = hf.empty_aligned(a.shape, dtype)
        reference = hf.Operator(dec, stencil, approach="flat-original").apply(a)
        times = {}
        for label, options in HYBRIDFD_CONFIGS.items():
            op = hf.Operator(dec, stencil, **options)  # one at a time: large batches hold much memory
            op.apply(a, out=out)
            times[label] = 1e3 * time_apply(op, a, out, repeats) / grids
            if not np.array_equal(out, reference):
                raise AssertionError(f"hybridfd {label} differs from flat-original")
            del op
        boundary = "periodic" if periodic else "non-periodic"
        result[boundary] = {
            "ms_per_grid": times,
            "max_abs_input": comm.allreduce(float(np.max(np.abs(a))), op=MPI.MAX),
            "operator_norm": float(np.sum(np.abs(stencil.coefficients))),
            "checksums": interior_checksums(a, reference, list(box.offset), shape, comm, radius=0 if periodic else 2),
        }
        gather_first_grid(reference, list(box.offset), shape, comm, f"{save_dir}/hybridfd-{boundary}.npy")
        del a, out, reference
    if comm.rank == 0:
        launch.report_result(result)


def peer_run(name: str, env_dir: Path, ranks: int, argv: list[str], extra_env: dict[str, str]) -> dict:
    """One launch of a peer script under that peer's Python and mpiexec, through hybridfd's
    launcher (same yield settings as hybridfd's own runs). The peer's bin comes first on
    PATH: Devito compiles its MPI code with the ``mpicc`` it finds there."""
    from hybridfd import launch

    path = f"{env_dir / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    result = launch.run(
        ranks,
        [str(env_dir / "bin" / "python"), *argv],
        timeout=3000,
        extra_env={"OMP_NUM_THREADS": "1", "PATH": path, **extra_env},
        mpiexec=str(env_dir / "bin" / "mpiexec"),
    )
    try:
        return launch.worker_result(result)
    except RuntimeError as error:
        raise RuntimeError(f"{name} failed: {error}") from None


def available_peers() -> dict[str, Path]:
    found = {}
    for name, path in (("GPAW", GPAW_DEFAULT), ("GPAW ASYNC", GPAW_ASYNC), ("Devito", DEVITO)):
        if (path / "bin" / "python").exists():
            found[name] = path
        else:
            print(f"{name} is not installed at {path.relative_to(ROOT)}; run `make peers`. Skipping it.")
    return found


def one_round(
    ranks: int,
    n: int,
    grids: int,
    dtype: str,
    repeats: int,
    peers: dict[str, Path],
    threads: list[int],
    first: bool,
    msg_sizes: list[int],
) -> tuple[dict[str, float], dict[str, float]]:
    """Every code once on one job: ms per grid by label, and each peer's disagreement with
    hybridfd (relative)."""
    from hybridfd import launch

    times: dict[str, float] = {}
    agreement: dict[str, float] = {}
    job = ["--shape", str(n), "--grids", str(grids), "--dtype", dtype, "--repeats", str(repeats)]
    with tempfile.TemporaryDirectory() as save_dir:
        ours = launch.run(
            ranks, [sys.executable, __file__, "hybridfd-worker", *job, "--save-dir", save_dir], timeout=3000
        )
        mine = launch.worker_result(ours)
        for boundary, values in mine.items():
            for label, ms in values["ms_per_grid"].items():
                times[f"hybridfd {label} ({boundary})"] = ms
        gpaw_env = {"GPAW_MPI_BACKEND": "mpi4py"}
        for name, settings in (("GPAW", [1]), ("GPAW ASYNC", threads)):
            if name not in peers:
                continue
            for omp in settings:
                sizes = msg_sizes if name == "GPAW ASYNC" else [0]
                theirs = peer_run(
                    name,
                    peers[name],
                    ranks,
                    [str(PEERS_DIR / "gpaw_laplace.py"), *job, "--msg-sizes", *map(str, sizes)],
                    {**gpaw_env, "OMP_NUM_THREADS": str(omp)},
                )
                for size, value in theirs["by_msg_size"].items():
                    label = name if name == "GPAW" else f"{name} OMP={omp} msg={size} KiB"
                    times[label] = value["ms_per_grid"]
                    difference = checksum_difference(mine["periodic"]["checksums"], value["checksums"])
                    agreement[label] = difference
        if "Devito" in peers:
            path = f"{save_dir}/devito.npy"
            theirs = peer_run(
                "Devito",
                peers["Devito"],
                ranks,
                [str(PEERS_DIR / "devito_laplace.py"), *job, "--save", path, *(["--mpi-modes"] if first else [])],
                {"DEVITO_LANGUAGE": "C", "DEVITO_MPI": "basic" if ranks > 1 else "0", "DEVITO_LOGGING": "WARNING"},
            )
            times[DEVITO_LABEL] = theirs["ms_per_grid"]
            # Devito prints its weights with 9 digits (1.333333330, -8.33333333e-2), so they
            # sum to -6.7e-9 instead of 0 per axis: its result carries about -5e-7 * u at
            # h = 0.2, which is 1e-7..1e-5 of a smooth field's Laplacian. Differences are
            # therefore scaled by the size of the stencil's terms, sum|w| * max|u|.
            ours = mine["non-periodic"]
            terms = ours["operator_norm"] * ours["max_abs_input"]
            interior = (n * ranks - 4) * (n - 4) ** 2
            ours_sample, their_sample = np.load(f"{save_dir}/hybridfd-non-periodic.npy"), np.load(path)
            agreement["Devito"] = max(
                checksum_difference(
                    ours["checksums"], theirs["interior_checksums"], scale=terms * ours["max_abs_input"] * interior
                ),
                sample_difference(ours_sample, their_sample, scale=terms),
            )
            agreement["Devito (relative to the result, not checked)"] = sample_difference(ours_sample, their_sample)
            if theirs["generated_code_by_mpi_mode"]:
                modes = theirs["generated_code_by_mpi_mode"]
                print(f"  Devito's generated code by DEVITO_MPI mode ({ranks} ranks): {modes}")
    for label, difference in agreement.items():
        if "not checked" in label:
            continue
        tolerance = CHECKSUM_TOLERANCE["Devito" if label == "Devito" else "GPAW"]
        if not difference <= tolerance:
            raise AssertionError(f"{label} differs from hybridfd by {difference:.1e} relative (> {tolerance:.0e})")
    return times, agreement


def summarise(times: dict[str, list[float]]) -> dict[str, float]:
    return {label: float(np.median(values)) for label, values in times.items()}


def best(median: dict[str, float], prefix: str, suffix: str = "") -> tuple[str, float]:
    """The fastest setting whose label starts with ``prefix`` (and ends with ``suffix``)."""
    matches = {label: ms for label, ms in median.items() if label.startswith(prefix) and label.endswith(suffix)}
    label = min(matches, key=matches.__getitem__)
    return label, matches[label]


def ratios(median: dict[str, float]) -> dict[str, float]:
    """Speed-ups of hybridfd's best setting over each peer (its best setting), pairing
    codes on the same boundary: GPAW with periodic grids, Devito with non-periodic ones."""
    out = {}
    _, ours_periodic = best(median, "hybridfd", "(periodic)")
    _, ours_open = best(median, "hybridfd", "(non-periodic)")
    gpaw = {label: ms for label, ms in median.items() if label.startswith("GPAW")}
    if "GPAW" in gpaw:
        out["GPAW default"] = gpaw["GPAW"] / ours_periodic
    if any(label.startswith("GPAW ASYNC") for label in gpaw):
        out["GPAW ASYNC best"] = best(median, "GPAW ASYNC")[1] / ours_periodic
    if gpaw:
        out["GPAW best"] = min(gpaw.values()) / ours_periodic
    if DEVITO_LABEL in median:
        out["Devito"] = median[DEVITO_LABEL] / ours_open
    return out


def run_jobs(jobs: list[tuple[int, int, int, str]], args: argparse.Namespace, name: str) -> list[dict]:
    peers = {name: path for name, path in available_peers().items() if name not in getattr(args, "without", [])}
    if not peers:
        print(f"No peer environment for the {name} comparison; nothing to compare. Skipping.")
        return []
    samples: dict[tuple, dict[str, list[float]]] = {job: {} for job in jobs}
    worst: dict[str, float] = {}
    for round_index in range(args.rounds):
        for job in jobs:
            ranks, n, grids, dtype = job
            threads = [1, 2] if ranks <= 2 else [1]
            times, agreement = one_round(
                ranks, n, grids, dtype, args.repeats, peers, threads, round_index == 0, args.msg_sizes
            )
            for label, ms in times.items():
                samples[job].setdefault(label, []).append(ms)
            for label, difference in agreement.items():
                worst[label] = max(worst.get(label, 0.0), difference)
            print(f"round {round_index + 1}/{args.rounds}: {ranks} ranks, {grids} x {n}^3, {dtype} done", flush=True)
    print(f"\ncommand: {' '.join(['python', *sys.argv])}  cores: {os.cpu_count()}  load: {os.getloadavg()}")
    for label, difference in sorted(worst.items()):
        print(f"agreement with hybridfd: {label}: {difference:.1e} relative")
    rows = []
    for job in jobs:
        ranks, n, grids, dtype = job
        median = summarise(samples[job])
        speedups = ratios(median)
        rows.append(
            {"ranks": ranks, "n": n, "grids": grids, "dtype": dtype, "ms_per_grid": median, "speedups": speedups}
        )
        print(
            f"\n{ranks} rank(s), {grids} grids of {n}^3 per rank, {dtype}: ms per grid"
            f" (medians of {args.rounds} launches x {args.repeats} applies)\n"
        )
        print("| code and setting | ms per grid |")
        print("|---|---:|")
        for label, ms in sorted(median.items(), key=lambda item: item[1]):
            print(f"| {label} | {ms:.3f} |")
        print("\n" + ", ".join(f"best hybridfd / {peer}: {value:.2f}x" for peer, value in speedups.items()))
    print("\n" + summary_table(rows))
    (ROOT / "results").mkdir(exist_ok=True)
    (ROOT / "results" / f"compare_peers_{name}.json").write_text(json.dumps(rows, indent=2))
    return rows


def summary_table(rows: list[dict]) -> str:
    """One line per job: hybridfd's flat approaches and best setting beside each peer's
    best, and the ratios (docs/performance.md quotes this table)."""
    lines = [
        "| ranks | grids x n^3 per rank | dtype | hybridfd flat-original | flat-optimized | best hybridfd (periodic)"
        " | GPAW default | GPAW ASYNC best | best hybridfd (non-periodic) | Devito"
        " | best / GPAW best | best / Devito |",
        "|---:|---|---|---:|---:|---|---:|---|---|---:|---:|---:|",
    ]
    for row in rows:
        median = row["ms_per_grid"]
        ours, ours_ms = best(median, "hybridfd", "(periodic)")
        open_label, open_ms = best(median, "hybridfd", "(non-periodic)")
        has_async = any(label.startswith("GPAW ASYNC") for label in median)
        if has_async:
            async_label, async_ms = best(median, "GPAW ASYNC")
            gpaw_async = f"{async_ms:.2f} ({async_label.removeprefix('GPAW ASYNC ')})"
        else:
            gpaw_async = "-"
        speedups = row["speedups"]
        cells = [
            str(row["ranks"]),
            f"{row['grids']} x {row['n']}^3",
            row["dtype"],
            f"{median['hybridfd flat-original (periodic)']:.2f}",
            f"{median['hybridfd flat-optimized (periodic)']:.2f}",
            f"{ours_ms:.2f} ({ours.removeprefix('hybridfd ').removesuffix(' (periodic)')})",
            f"{median['GPAW']:.2f}" if "GPAW" in median else "-",
            gpaw_async,
            f"{open_ms:.2f} ({open_label.removeprefix('hybridfd ').removesuffix(' (non-periodic)')})",
            f"{median[DEVITO_LABEL]:.2f}" if DEVITO_LABEL in median else "-",
            f"{speedups['GPAW best']:.2f}x" if "GPAW best" in speedups else "-",
            f"{speedups['Devito']:.2f}x" if "Devito" in speedups else "-",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def general_worker(n: int, grids: int, repeats: int, stencils: str) -> None:
    """hybridfd on the general-stencil jobs GPAW described (``stencils``: its offsets and
    weights per order and dtype), one rank, periodic; general_job says what is timed."""
    from hybridfd import launch

    launch.report_result([general_job(n, grids, repeats, job) for job in json.loads(Path(stencils).read_text())])


def general_job(n: int, grids: int, repeats: int, job: dict) -> dict:
    """Per hybridfd setting, and for the kernel alone on padded grids, ``repeats`` applies
    of the batch, each followed by numpy.copyto of the same bytes (the batch read, a batch
    written); then the core's FMA peak, measured in the same process."""
    from mpi4py import MPI
    from peers.job import field, interior_checksums

    import hybridfd as hf
    from hybridfd import _probes
    from hybridfd.kernel import apply_padded

    stencil = hf.Stencil.from_offsets(job["offsets"], job["weights"])
    dtype = job["dtype"]
    dec = hf.Decomposition(hf.Domain((n, n, n), dtype=dtype, periodic=True), MPI.COMM_WORLD, grid=(1, 1, 1))
    g, x, y, z = np.meshgrid(np.arange(grids), *(np.arange(n),) * 3, indexing="ij")
    a = hf.empty_aligned(g.shape, dtype)
    a[...] = field(g, x, y, z, n) * (1 + 0.5j if dtype == "complex128" else 1)
    del g, x, y, z
    out, copy = hf.empty_aligned(a.shape, dtype), hf.empty_aligned(a.shape, dtype)
    reference = hf.Operator(dec, stencil, approach="flat-original").apply(a)
    seconds: dict[str, list[float]] = {}
    copies: dict[str, list[float]] = {}
    for label, options in GENERAL_CONFIGS.items():
        op = hf.Operator(dec, stencil, **options)
        op.apply(a, out=out)
        if not np.array_equal(out, reference):
            raise AssertionError(f"hybridfd {label} differs from flat-original")
        seconds[label], copies[label] = timed_with_copies(partial(op.apply, a, out=out), a, copy, repeats)
    padded = np.pad(a, [(0, 0), *[(w, w) for w in stencil.widths]], mode="wrap")

    def kernel() -> None:
        for grid in range(grids):
            apply_padded(stencil, padded[grid], out[grid], from_memory=True)

    kernel()
    if not np.array_equal(out, reference):
        raise AssertionError("hybridfd's kernel on padded grids differs from flat-original")
    seconds[GENERAL_KERNEL], copies[GENERAL_KERNEL] = timed_with_copies(kernel, a, copy, repeats)
    multiply_add, fma = _probes.measure_arithmetic_peak(0.3)
    return {
        "order": job["order"],
        "dtype": dtype,
        "terms": len(stencil.terms()),
        "flops_per_point": general_flops_per_point(stencil, dtype),
        "ms_per_grid": {label: [1e3 * t / grids for t in values] for label, values in seconds.items()},
        "memcpy_ms_per_grid": {label: [1e3 * t / grids for t in values] for label, values in copies.items()},
        "multiply_add_peak_gflops": multiply_add,
        "fma_peak_gflops": fma,
        "checksums": interior_checksums(a, reference, [0, 0, 0], (n, n, n), MPI.COMM_WORLD, radius=0),
    }


def timed_with_copies(
    apply: Callable[[], object], source: np.ndarray, copy: np.ndarray, repeats: int
) -> tuple[list[float], list[float]]:
    """Seconds of ``repeats`` calls of ``apply``, and of the numpy.copyto of ``source`` into
    ``copy`` timed right after each: every apply has a copy of the same bytes beside it."""
    import time

    times, copies = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        apply()
        times.append(time.perf_counter() - start)
        start = time.perf_counter()
        np.copyto(copy, source)
        copies.append(time.perf_counter() - start)
    return times, copies


def general_flops_per_point(stencil: Any, dtype: str) -> int:
    """Per point, the sum's operations (stencil.hpp's order: the first term's multiply, and
    its add if paired; per later term a multiply and an add, and an add more if paired),
    per float64 lane."""
    lanes = 2 if dtype == "complex128" else 1
    terms = stencil.terms()
    first_paired = terms[0][2]
    later = sum(3 if paired else 2 for _, _, paired in terms[1:])
    return lanes * ((2 if first_paired else 1) + later)


def general_rounds(args: argparse.Namespace) -> list[dict]:
    """The general-stencil jobs: GPAW's GUCLaplace of an fcc cell (n = 2 and 3, float64
    and complex128, 1 rank, 32 grids of 96^3; GPAW's default build, OMP_NUM_THREADS=1)
    against hybridfd applying the same offsets and weights (GPAW's own, read from its
    operator), each code in its own process, alternately in rounds. Per round and job
    the ratio GPAW / hybridfd, hybridfd's share of numpy.copyto of the same bytes and of
    the core's FMA peak, all taken within the round (hybridfd's fastest setting by
    median); the table gives their medians over the rounds. Results agree per grid to
    1e-10 relative (GPAW sums in another order)."""
    from hybridfd import launch

    if not (GPAW_DEFAULT / "bin" / "python").exists():
        print(f"GPAW is not installed at {GPAW_DEFAULT.relative_to(ROOT)}; run `make peers-gpaw`. Skipping.")
        return []
    n, grids = (24, 4) if args.quick else (96, 32)
    job = ["--shape", str(n), "--grids", str(grids), "--repeats", str(args.repeats)]
    rounds: list[tuple[dict, dict]] = []
    with tempfile.TemporaryDirectory() as save_dir:
        for round_index in range(args.rounds):
            theirs = peer_run(
                "GPAW", GPAW_DEFAULT, 1, [str(PEERS_DIR / "gpaw_guc_laplace.py"), *job], {"GPAW_MPI_BACKEND": "mpi4py"}
            )["jobs"]
            stencils = Path(save_dir) / "stencils.json"
            stencils.write_text(json.dumps(theirs))
            worker = [sys.executable, __file__, "general-worker", *job, "--stencils", str(stencils)]
            ours = launch.worker_result(launch.run(1, worker, timeout=3000))
            for mine, peer in zip(ours, theirs, strict=True):
                difference = checksum_difference(mine["checksums"], peer["checksums"])
                if not difference <= CHECKSUM_TOLERANCE["GPAW"]:
                    raise AssertionError(
                        f"GPAW GUCLaplace n={peer['order']} {peer['dtype']} differs by {difference:.1e}"
                    )
            rounds.append(({(j["order"], j["dtype"]): j for j in theirs}, {(j["order"], j["dtype"]): j for j in ours}))
            print(f"round {round_index + 1}/{args.rounds}: {grids} x {n}^3 general stencils done", flush=True)
    rows = [general_row(key, rounds, n, grids) for key in rounds[0][1]]
    print(f"\ncommand: {' '.join(['python', *sys.argv])}  cores: {os.cpu_count()}  load: {os.getloadavg()}")
    print(general_table(rows))
    (ROOT / "results").mkdir(exist_ok=True)
    (ROOT / "results" / "compare_peers_general.json").write_text(json.dumps(rows, indent=2))
    return rows


def general_row(key: tuple[int, str], rounds: list[tuple[dict, dict]], n: int, grids: int) -> dict:
    """One job's medians over the rounds: ms per grid of each code and setting (memcpy: every
    copy), and, paired within each round, GPAW over hybridfd's fastest setting, its share of
    memcpy (copy time over apply time, apply by apply) and of the FMA peak."""
    ours = [mine[key] for _, mine in rounds]
    gpaw = [theirs[key]["ms_per_grid"] for theirs, _ in rounds]
    median = {
        label: float(np.median([v for job in ours for v in job["ms_per_grid"][label]]))
        for label in ours[0]["ms_per_grid"]
    }
    median["memcpy"] = float(
        np.median([v for job in ours for values in job["memcpy_ms_per_grid"].values() for v in values])
    )
    median["GPAW"] = float(np.median(gpaw))
    fastest = min(GENERAL_CONFIGS, key=median.__getitem__)
    per_round = [float(np.median(job["ms_per_grid"][fastest])) for job in ours]
    memcpy_share = [
        np.median(np.asarray(job["memcpy_ms_per_grid"][fastest]) / np.asarray(job["ms_per_grid"][fastest]))
        for job in ours
    ]
    flops = ours[0]["flops_per_point"] * n**3
    fma_share = [flops / (1e6 * ms) / job["fma_peak_gflops"] for job, ms in zip(ours, per_round, strict=True)]
    return {
        "order": key[0],
        "dtype": key[1],
        "grids": grids,
        "n": n,
        "terms": ours[0]["terms"],
        "flops_per_point": ours[0]["flops_per_point"],
        "ms_per_grid": median,
        "fastest": fastest,
        "speedup_over_gpaw": float(np.median([g / t for g, t in zip(gpaw, per_round, strict=True)])),
        "fraction_of_memcpy": float(np.median(memcpy_share)),
        "fraction_of_fma_peak": float(np.median(fma_share)),
        "fma_peak_gflops": float(np.median([job["fma_peak_gflops"] for job in ours])),
    }


def general_table(rows: list[dict]) -> str:
    lines = [
        "| GUCLaplace fcc | dtype | GPAW ms/grid | hybridfd ms/grid (setting) | kernel on padded grids"
        " | memcpy ms/grid | hybridfd / GPAW speed | % of memcpy | GFLOP/s | % of FMA peak |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        median = row["ms_per_grid"]
        ms = median[row["fastest"]]
        gflops = row["flops_per_point"] * row["n"] ** 3 / (1e-3 * ms) / 1e9
        cells = [
            f"n={row['order']} ({row['terms']} terms)",
            row["dtype"],
            f"{median['GPAW']:.1f}",
            f"{ms:.2f} ({row['fastest']})",
            f"{median[GENERAL_KERNEL]:.2f}",
            f"{median['memcpy']:.2f}",
            f"{row['speedup_over_gpaw']:.1f}x",
            f"{100 * row['fraction_of_memcpy']:.0f} %",
            f"{gflops:.1f}",
            f"{100 * row['fraction_of_fma_peak']:.0f} % of {row['fma_peak_gflops']:.0f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def curve_jobs(sizes: list[int]) -> list[tuple[int, int, int, str]]:
    """1 rank, about as many points per job as 8 grids of 96^3 (at most 512 grids)."""
    return [(1, n, min(512, max(1, 8 * 96**3 // n**3)), dtype) for dtype in ("float64", "complex128") for n in sizes]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "job", choices=("kernel", "latency", "curve", "general", "summary", "hybridfd-worker", "general-worker")
    )
    parser.add_argument("--results", type=Path, help="summary: a results/compare_peers_*.json to tabulate")
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 24, 32, 48, 64, 96, 128])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--msg-sizes", type=int, nargs="+", default=GPAW_MSG_SIZES, help="GPAW_MPI_OPTIMAL_MSG_SIZE values (KiB) swept"
    )
    parser.add_argument("--quick", action="store_true", help="small grids, one round (a smoke test)")
    # the hybridfd worker's job (set by the driver)
    parser.add_argument("--shape", type=int)
    parser.add_argument("--grids", type=int)
    parser.add_argument("--dtype", default="float64")
    parser.add_argument("--save-dir")
    parser.add_argument("--stencils", help="general-worker: GPAW's offsets and weights per job (JSON)")
    args = parser.parse_args()
    if args.job == "hybridfd-worker":
        hybridfd_worker(args.shape, args.grids, args.dtype, args.repeats, args.save_dir)
        return 0
    if args.job == "general-worker":
        general_worker(args.shape, args.grids, args.repeats, args.stencils)
        return 0
    if args.job == "summary":
        print(summary_table(json.loads(args.results.read_text())))
        return 0
    if args.quick:
        args.rounds, args.repeats = 1, 2
    if args.job == "general":
        general_rounds(args)
        return 0
    if args.job != "latency":  # one core: GPAW's default build (OpenMP would take the second core)
        args.without = ["GPAW ASYNC"]
    if args.job == "kernel":
        n, grids = (24, 4) if args.quick else (96, 32)
        jobs = [(1, n, grids, dtype) for dtype in ("float64", "complex128")]
    elif args.job == "latency":
        cases = [(24, 8), (12, 16)] if args.quick else [(96, 64), (24, 512)]
        jobs = [(ranks, n, grids, "float64") for ranks in args.ranks for n, grids in cases]
    else:
        jobs = curve_jobs([16, 24] if args.quick else args.sizes)
    rows = run_jobs(jobs, args, args.job)
    if rows and not args.quick:
        plot(rows, args.job, ROOT / "docs" / "img" / f"compare_peers_{args.job}.png")
    return 0


def plot(rows: list[dict], name: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if name == "curve":
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
        for ax, dtype in zip(axes, ("float64", "complex128"), strict=True):
            selected = [row for row in rows if row["dtype"] == dtype]
            sizes = [row["n"] for row in selected]
            codes = {
                "hybridfd best (periodic)": lambda m: best(m, "hybridfd", "(periodic)")[1],
                "hybridfd best (non-periodic)": lambda m: best(m, "hybridfd", "(non-periodic)")[1],
                "GPAW default (periodic)": lambda m: m.get("GPAW"),
                "Devito (non-periodic)": lambda m: m.get(DEVITO_LABEL),
            }
            for label, pick in codes.items():
                ms = [pick(row["ms_per_grid"]) for row in selected]
                if all(value is not None for value in ms):
                    ax.plot(sizes, [n**3 / (1e3 * m) for n, m in zip(sizes, ms, strict=True)], "o-", label=label)
            ax.set_xscale("log", base=2)
            ax.set_xticks(sizes, [str(n) for n in sizes])
            ax.set_xlabel("grid edge n (n^3 points, 1 rank)")
            ax.set_ylabel("Mpoints/s")
            ax.set_title(dtype)
            ax.legend(fontsize=8)
    else:
        fig, ax = plt.subplots(figsize=(9, 4.5))
        labels = [f"{row['ranks']}r {row['grids']}x{row['n']}^3 {row['dtype']}" for row in rows]
        peers = sorted({peer for row in rows for peer in row["speedups"]})
        width = 0.8 / max(1, len(peers))
        for i, peer in enumerate(peers):
            values = [row["speedups"].get(peer, 0.0) for row in rows]
            ax.bar(np.arange(len(rows)) + i * width, values, width, label=f"best hybridfd / {peer}")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(np.arange(len(rows)) + 0.4 - width / 2, labels, fontsize=8)
        ax.set_ylabel("speed-up (same run, medians)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    raise SystemExit(main())
