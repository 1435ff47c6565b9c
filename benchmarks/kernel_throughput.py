"""Kernel throughput on one core beside a STREAM-style copy of the same bytes and a
numpy-slicing stencil, all measured side by side in one run (this machine is noisy:
only ratios measured together mean anything).

    .venv/bin/python benchmarks/kernel_throughput.py [--repeats 7] [--quick]

The copy is STREAM's Copy kernel (c[j] = a[j], ordinary stores, in C++); numpy.copyto
(glibc memcpy, which switches to non-temporal stores and other tricks at size thresholds)
is shown beside it. Bytes moved per grid are counted as one read of the grid and one
write of the result (2 * points * itemsize), the same bytes the copies move; the
kernel's "% of Copy" is the copy's time over the kernel's time. "2 threads / 1 thread"
is the kernel split over two threads by x-slabs (OMP_WAIT_POLICY as the caller set it).
The kernel's GFLOP/s (for the Laplacian, a symmetric stencil: 9r + 1 flops per float64
lane) is set beside the core's arithmetic peak for separate multiplies and adds,
measured by a small C++ loop in the same run. Writes results/kernel_throughput.json and docs/img/kernel_throughput.png.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

import hybridfd as hf
from hybridfd.kernel import apply_padded

ROOT = Path(__file__).resolve().parents[1]


def seconds(function: object) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def measure(shape: int, grids: int, dtype: str, repeats: int, numpy_repeats: int) -> dict:
    stencil = hf.Stencil.laplace(2, 0.2)
    r = stencil.radius
    rng = np.random.default_rng(0)
    padded = rng.standard_normal((grids, shape + 2 * r, shape + 2 * r, shape + 2 * r)).astype(dtype)
    out = np.empty((grids, shape, shape, shape), dtype=dtype)
    source = rng.standard_normal(out.shape).astype(dtype)
    target = np.empty_like(source)

    def kernel() -> None:
        for g in range(grids):
            apply_padded(stencil, padded[g], out[g])

    def kernel_two_threads() -> None:
        for g in range(grids):
            apply_padded(stencil, padded[g], out[g], threads=2)

    source_lanes, target_lanes = source.reshape(-1).view(np.float64), target.reshape(-1).view(np.float64)

    def copy() -> None:
        hf._core.stream_copy(source_lanes, target_lanes)

    def memcpy() -> None:
        np.copyto(target, source)

    def numpy_stencil() -> None:
        hf.reference.apply_padded(stencil, padded)

    kernel(), copy()  # first touch of every page
    times = {"copy": [], "memcpy": [], "kernel": [], "kernel_2_threads": [], "numpy": []}
    for repeat in range(repeats):  # interleaved, so drifts in machine load hit all alike
        times["copy"].append(seconds(copy))
        times["memcpy"].append(seconds(memcpy))
        times["kernel"].append(seconds(kernel))
        times["kernel_2_threads"].append(seconds(kernel_two_threads))
        if repeat < numpy_repeats:
            times["numpy"].append(seconds(numpy_stencil))
    np.testing.assert_array_equal(out[0], hf.reference.apply_padded(stencil, padded[0]))
    points = grids * shape**3
    moved = 2 * points * np.dtype(dtype).itemsize
    median = {name: float(np.median(values)) for name, values in times.items()}
    flops = points * flops_per_point(stencil, dtype)
    return {
        "case": f"{grids} x {shape}^3",
        "dtype": dtype,
        "grids": grids,
        "shape": shape,
        "repeats": repeats,
        "median_seconds": median,
        "gb_per_s": {name: moved / t / 1e9 for name, t in median.items()},
        "mpoints_per_s": {name: points / t / 1e6 for name, t in median.items()},
        "kernel_fraction_of_copy": median["copy"] / median["kernel"],
        "kernel_fraction_of_memcpy": median["memcpy"] / median["kernel"],
        "kernel_gflops": flops / median["kernel"] / 1e9,
        "kernel_speedup_over_numpy": median["numpy"] / median["kernel"],
        "two_threads_speedup": median["kernel"] / median["kernel_2_threads"],
    }


SIZE_CURVE = (16, 24, 32, 48, 64, 96, 128, 192)


def flops_per_point(stencil: hf.Stencil, dtype: str) -> int:
    """Per float64 lane: the centre's multiply, then per pair 2 multiplies + 2 adds, or
    1 multiply + 2 adds in the paired form of a symmetric stencil (the Laplacian)."""
    lanes = 2 if dtype == "complex128" else 1
    return lanes * ((9 if stencil.symmetric else 12) * stencil.radius + 1)


def size_curve(sizes: tuple[int, ...], seconds: float) -> list[dict]:
    """The kernel on one n^3 grid for each n, timed in C++ (fastest of ten windows,
    ``hybridfd._core.kernel_seconds``): sub-grids of 16^3..48^3 are what a rank holds in a
    strong-scaling run, and live in cache, where arithmetic, not memory, sets the pace."""
    stencil = hf.Stencil.laplace(2, 0.2)
    r = stencil.radius
    rng = np.random.default_rng(1)
    rows = []
    for dtype in ("float64", "complex128"):
        for n in sizes:
            padded = rng.standard_normal((n + 2 * r,) * 3)
            if dtype == "complex128":
                padded = padded + 1j * rng.standard_normal(padded.shape)
            padded = np.ascontiguousarray(padded, dtype=dtype)
            out = np.empty((n, n, n), dtype=dtype)
            per_apply = hf._core.kernel_seconds(stencil._core, padded, out, seconds)
            np.testing.assert_array_equal(out, hf.reference.apply_padded(stencil, padded))
            rows.append(
                {
                    "n": n,
                    "dtype": dtype,
                    "seconds": per_apply,
                    "mpoints_per_s": n**3 / per_apply / 1e6,
                    "gflops": n**3 * flops_per_point(stencil, dtype) / per_apply / 1e9,
                    "bytes_in_caches": padded.nbytes + out.nbytes,
                }
            )
    return rows


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{row['case']}\n{row['dtype']}" for row in rows]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(8, 4))
    bars = [
        ("copy", "STREAM Copy"),
        ("memcpy", "memcpy (numpy.copyto)"),
        ("kernel", "hybridfd kernel"),
        ("numpy", "numpy slicing stencil"),
    ]
    for k, (name, label) in enumerate(bars):
        ax.bar(x + (k - 1.5) * 0.2, [row["gb_per_s"][name] for row in rows], 0.2, label=label)
    for i, row in enumerate(rows):
        ax.annotate(
            f"{100 * row['kernel_fraction_of_copy']:.0f} %",
            (x[i] + 0.1, row["gb_per_s"]["kernel"]),
            ha="center",
            va="bottom",
            fontsize=8,
        )
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_ylabel("GB/s (grid read + result written)")
    ax.set_title("13-point stencil on one core vs a copy of the same bytes (medians)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)


def plot_size_curve(curve: list[dict], multiply_add_peak: float, fma_peak: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for dtype in ("float64", "complex128"):
        rows = [row for row in curve if row["dtype"] == dtype]
        ax.plot([row["n"] for row in rows], [row["gflops"] for row in rows], "o-", label=f"kernel, {dtype}")
    ax.axhline(fma_peak, color="grey", ls="--", lw=0.8, label=f"FMA peak {fma_peak:.1f}")
    ax.axhline(multiply_add_peak, color="grey", ls=":", lw=0.8, label=f"multiply+add peak {multiply_add_peak:.1f}")
    ax.axhline(fma_peak / 2, color="red", ls="-.", lw=0.8, label="50 % of FMA peak")
    ax.set_xscale("log", base=2)
    ax.set_xticks([row["n"] for row in curve if row["dtype"] == "float64"])
    ax.set_xticklabels([str(row["n"]) for row in curve if row["dtype"] == "float64"])
    ax.set_xlabel("grid edge n (one n^3 grid)")
    ax.set_ylabel("GFLOP/s (one core)")
    ax.set_ylim(bottom=0)
    ax.set_title("13-point stencil: arithmetic rate by grid size")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="small grids, for a smoke run")
    args = parser.parse_args()
    cases = [(48, 1), (24, 8)] if args.quick else [(192, 1), (96, 32)]
    peaks = [hf._core.measure_arithmetic_peak(0.3)]
    rows = [
        measure(shape, grids, dtype, args.repeats, min(3, args.repeats))
        for shape, grids in cases
        for dtype in ("float64", "complex128")
    ]
    curve = size_curve(SIZE_CURVE, 0.05 if args.quick else 0.3)
    peaks.append(hf._core.measure_arithmetic_peak(0.3))
    multiply_add_peak = float(np.median([p[0] for p in peaks]))
    fma_peak = float(np.median([p[1] for p in peaks]))
    for row in rows:
        row["multiply_add_peak_gflops"] = multiply_add_peak
        row["fma_peak_gflops"] = fma_peak
    print(f"command: {' '.join(['python', *sys.argv])}")
    print(f"host: {platform.node()}  build: {hf._core.build_flags()}")
    print(f"core arithmetic peak: {multiply_add_peak:.1f} GFLOP/s multiply+add, {fma_peak:.1f} GFLOP/s FMA\n")
    print(
        "| case | dtype | STREAM Copy GB/s | memcpy GB/s | kernel GB/s | kernel Mpoints/s | kernel % of Copy "
        "| kernel % of memcpy | kernel GFLOP/s | % of mul+add peak | numpy GB/s | kernel / numpy "
        "| 2 threads / 1 thread |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        g = row["gb_per_s"]
        print(
            f"| {row['case']} | {row['dtype']} | {g['copy']:.2f} | {g['memcpy']:.2f} | {g['kernel']:.2f} | "
            f"{row['mpoints_per_s']['kernel']:.0f} | {100 * row['kernel_fraction_of_copy']:.0f} % | "
            f"{100 * row['kernel_fraction_of_memcpy']:.0f} % | "
            f"{row['kernel_gflops']:.1f} | {100 * row['kernel_gflops'] / multiply_add_peak:.0f} % | "
            f"{g['numpy']:.2f} | {row['kernel_speedup_over_numpy']:.1f}x | {row['two_threads_speedup']:.2f}x |"
        )
    print("\nSize curve: one n^3 grid, timed in C++ (fastest of ten windows)\n")
    print("| n | dtype | padded input + output | Mpoints/s | GFLOP/s | % of FMA peak | % of mul+add peak |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for row in curve:
        print(
            f"| {row['n']} | {row['dtype']} | {row['bytes_in_caches'] / 2**10:.0f} KiB | {row['mpoints_per_s']:.0f} | "
            f"{row['gflops']:.1f} | {100 * row['gflops'] / fma_peak:.0f} % | "
            f"{100 * row['gflops'] / multiply_add_peak:.0f} % |"
        )
    results = ROOT / "results"
    results.mkdir(exist_ok=True)
    (results / "kernel_throughput.json").write_text(json.dumps({"cases": rows, "size_curve": curve}, indent=2))
    if not args.quick:
        plot(rows, ROOT / "docs" / "img" / "kernel_throughput.png")
        plot_size_curve(curve, multiply_add_peak, fma_peak, ROOT / "docs" / "img" / "kernel_size_curve.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
