"""Kernel throughput on one core beside a STREAM-style copy of the same bytes and a
numpy-slicing stencil, all measured side by side in one run (this machine is noisy:
only ratios measured together mean anything).

    .venv/bin/python benchmarks/kernel_throughput.py [--repeats 7] [--quick]

The copy is STREAM's Copy kernel (c[j] = a[j], ordinary stores, in C++); numpy.copyto
(glibc memcpy, which switches to non-temporal stores and other tricks at size thresholds)
is shown beside it. Bytes moved per grid are counted as one read of the grid and one
write of the result (2 * points * itemsize), the same bytes the copies move; the
kernel's "% of Copy" is the copy's time over the kernel's time. "2 threads / 1 thread"
is the kernel split over two threads by x-slabs (OMP_WAIT_POLICY as the caller set it),
beside STREAM Copy on two threads (one contiguous half each): what the memory bus gives a
second core, and the two-thread kernel's share of the two-thread Copy (where two threads
gain less than 1.7x, whether the bus is what stops them).
Every ratio is paired: taken within one round between timings made next to each other,
then the median over the rounds (this machine's rates drift by up to 1.5x in blocks of
seconds, so a ratio of two medians would mix states the two timings never shared).
"aligned" is the kernel on the same grids and outputs placed by hybridfd
(hybridfd.arrays: empty_padded, each interior on a cache line, and empty_aligned); numpy
starts both 16 bytes past a line. The kernel's GFLOP/s (for the Laplacian, a symmetric
stencil: 9r + 1 flops per float64 lane) is set beside the core's arithmetic peak for separate multiplies and adds,
measured by a small C++ loop in the same run (in the size curve, once per round beside
that round's kernel timings). Then the size curve: one n^3 grid
(16^3..256^3) applied again and again, the kernel on one and two threads beside STREAM
Copy of the same bytes, each timed in C++ (see size_curve). An issue-rate probe around
each kernel timing says whether another hardware thread shared the core (core_states);
the placed kernel's shares of Copy and of the FMA peak are also given within the rounds
where the core was alone and within those where it was shared. Writes
results/kernel_throughput.json, docs/img/kernel_throughput.png and
docs/img/kernel_size_curve.png.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
from core_state import ALONE, SHARED, core_state

import hybridfd as hf
from hybridfd import _probes
from hybridfd.arrays import empty_aligned, empty_padded
from hybridfd.kernel import apply_padded

ROOT = Path(__file__).resolve().parents[1]


def seconds(function: object) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def paired_median(numerators: list[float], denominators: list[float]) -> float:
    """Median over rounds of numerator / denominator, each pair timed in the same round
    (the shorter list sets how many rounds there are)."""
    count = min(len(numerators), len(denominators))
    if count == 0:
        raise ValueError("paired_median needs at least one round of both timings")
    return float(np.median(np.asarray(numerators[:count]) / np.asarray(denominators[:count])))


def measure(shape: int, grids: int, dtype: str, repeats: int, numpy_repeats: int) -> dict:
    stencil = hf.Stencil.laplace(2, 0.2)
    r = stencil.radius
    rng = np.random.default_rng(0)
    padded = rng.standard_normal((grids, shape + 2 * r, shape + 2 * r, shape + 2 * r)).astype(dtype)
    out = np.empty((grids, shape, shape, shape), dtype=dtype)
    # The same grids, and outputs, where hybridfd places them (empty_padded: each
    # interior on a cache line; empty_aligned): numpy starts both 16 bytes past one.
    aligned = empty_padded((grids, shape, shape, shape), r, dtype)
    aligned[...] = padded
    aligned_out = empty_aligned(out.shape, dtype)
    source = rng.standard_normal(out.shape).astype(dtype)
    target = np.empty_like(source)

    # Each grid is one of many applied in turn, or larger than the caches: from memory,
    # whatever the padded entry's default would guess for a grid this size.
    def kernel() -> None:
        for g in range(grids):
            apply_padded(stencil, padded[g], out[g], from_memory=True)

    def kernel_aligned() -> None:
        for g in range(grids):
            apply_padded(stencil, aligned[g], aligned_out[g], from_memory=True)

    def kernel_two_threads() -> None:
        for g in range(grids):
            apply_padded(stencil, padded[g], out[g], threads=2, from_memory=True)

    source_lanes, target_lanes = source.reshape(-1).view(np.float64), target.reshape(-1).view(np.float64)

    def copy() -> None:
        _probes.stream_copy(source_lanes, target_lanes)

    def copy_two_threads() -> None:
        _probes.stream_copy(source_lanes, target_lanes, 2)

    def memcpy() -> None:
        np.copyto(target, source)

    def numpy_stencil() -> None:
        hf.reference.apply_padded(stencil, padded)

    kernel(), kernel_aligned(), copy()  # first touch of every page
    names = ("copy", "copy_2_threads", "memcpy", "kernel", "kernel_aligned", "kernel_2_threads", "numpy")
    times: dict[str, list[float]] = {name: [] for name in names}
    probes: list[tuple[float, float]] = []  # before Copy and after the placed kernel, each repeat
    for repeat in range(repeats):  # interleaved, so drifts in machine load hit all alike
        before = _probes.measure_issue_rate(PROBE_SECONDS)
        times["copy"].append(seconds(copy))
        times["copy_2_threads"].append(seconds(copy_two_threads))
        times["memcpy"].append(seconds(memcpy))
        times["kernel"].append(seconds(kernel))
        times["kernel_aligned"].append(seconds(kernel_aligned))
        probes.append((before, _probes.measure_issue_rate(PROBE_SECONDS)))
        times["kernel_2_threads"].append(seconds(kernel_two_threads))
        if repeat < numpy_repeats:
            times["numpy"].append(seconds(numpy_stencil))
    np.testing.assert_array_equal(out[0], hf.reference.apply_padded(stencil, padded[0]))
    np.testing.assert_array_equal(aligned_out[-1], hf.reference.apply_padded(stencil, padded[-1]))
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
        "kernel_fraction_of_copy": paired_median(times["copy"], times["kernel"]),
        "aligned_fraction_of_copy": paired_median(times["copy"], times["kernel_aligned"]),
        "kernel_fraction_of_memcpy": paired_median(times["memcpy"], times["kernel"]),
        "kernel_gflops": flops / median["kernel"] / 1e9,
        "kernel_speedup_over_numpy": paired_median(times["numpy"], times["kernel"]),
        **two_thread_ratios(times),
        "state_splits": {"aligned_copy_alone_shared": state_split(times["copy"], times["kernel_aligned"], probes)},
    }


def two_thread_ratios(times: dict[str, list[float]]) -> dict[str, float]:
    """The kernel's gain from a second thread, beside what the memory bus gives a second
    core (STREAM Copy on two threads over one), and how much of the two-thread Copy's
    rate the two-thread kernel reaches: where that is near the one-thread kernel's share
    of the one-thread Copy, the bus, not the kernel, stops the scaling."""
    return {
        "two_threads_speedup": paired_median(times["kernel"], times["kernel_2_threads"]),
        "two_threads_copy_speedup": paired_median(times["copy"], times["copy_2_threads"]),
        "two_threads_fraction_of_copy": paired_median(times["copy_2_threads"], times["kernel_2_threads"]),
    }


SIZE_CURVE = (16, 24, 32, 48, 64, 96, 128, 192, 256)
CURVE_ROUNDS = 7
PROBE_SECONDS = 0.01


def flops_per_point(stencil: hf.Stencil, dtype: str) -> int:
    """Per float64 lane: the centre's multiply, then per pair 2 multiplies + 2 adds, or
    1 multiply + 2 adds in the paired form of a symmetric stencil (the Laplacian)."""
    lanes = 2 if dtype == "complex128" else 1
    return lanes * ((9 if stencil.symmetric else 12) * stencil.radius + 1)


def size_curve(sizes: tuple[int, ...], seconds: float) -> list[dict]:
    """One n^3 grid applied again and again, for each n: the kernel on one thread and on
    two, on one thread again on the same grid and output placed by hybridfd, and STREAM
    Copy of the same bytes (an array of the output's size), and the core's arithmetic
    peak, each timed in C++ (``hybridfd._probes.kernel_seconds`` / ``copy_seconds`` /
    ``measure_arithmetic_peak``: fastest of ten windows, so a 16^3 grid's microseconds
    are not drowned by a call from Python), in ``CURVE_ROUNDS`` interleaved rounds:
    every ratio is taken within a round (``paired_median``). Sub-grids of 16^3..48^3 are what a rank
    holds in a strong-scaling run. The kernel is told where the grid lives
    (``from_memory``): in cache while the grid and its output fit one core's share of the
    last-level cache, which a grid applied again and again then stays in; beyond that,
    from memory. (The padded entry's default, which cannot know, draws the line at the
    L2: docs/design.md, "The kernel".)"""
    stencil = hf.Stencil.laplace(2, 0.2)
    r = stencil.radius
    _, _, last_level_share = hf._core.cache_sizes()
    rng = np.random.default_rng(1)
    rows = []
    for dtype in ("float64", "complex128"):
        for n in sizes:
            padded = rng.standard_normal((n + 2 * r,) * 3)
            if dtype == "complex128":
                padded = padded + 1j * rng.standard_normal(padded.shape)
            padded = np.ascontiguousarray(padded, dtype=dtype)
            aligned = empty_padded((n, n, n), r, dtype)
            aligned[...] = padded
            out = np.empty((n, n, n), dtype=dtype)
            aligned_out = empty_aligned(out.shape, dtype)
            source = rng.standard_normal(out.size * out.itemsize // 8)
            target = np.empty_like(source)
            in_cache = padded.nbytes + out.nbytes <= last_level_share
            timings: dict[str, list[float]] = {
                name: [] for name in ("copy", "copy_2_threads", "kernel", "kernel_aligned", "kernel_2_threads")
            }
            # Seconds per FMA-peak flop and per multiply+add-peak flop, so that a paired
            # median of (seconds per peak flop) / (seconds per kernel flop) is the kernel's
            # fraction of the peak in that round.
            peak_seconds: dict[str, list[float]] = {"fma": [], "multiply_add": []}
            # The issue-rate probe just before and just after each one-thread kernel timing
            # (core_states): whether another hardware thread shared the core meanwhile.
            probes: dict[str, list[tuple[float, float]]] = {"kernel": [], "kernel_aligned": []}
            flops = n**3 * flops_per_point(stencil, dtype)
            for _ in range(CURVE_ROUNDS):
                multiply_add, fma = _probes.measure_arithmetic_peak(seconds)
                peak_seconds["multiply_add"].append(flops / (multiply_add * 1e9))
                peak_seconds["fma"].append(flops / (fma * 1e9))
                timings["copy"].append(_probes.copy_seconds(source, target, seconds))
                timings["copy_2_threads"].append(_probes.copy_seconds(source, target, seconds, 2))
                for grid, result, threads, name in (
                    (padded, out, 1, "kernel"),
                    (aligned, aligned_out, 1, "kernel_aligned"),
                    (padded, out, 2, "kernel_2_threads"),
                ):
                    before = _probes.measure_issue_rate(PROBE_SECONDS)
                    timings[name].append(
                        _probes.kernel_seconds(stencil._core, grid, result, seconds, threads, not in_cache)
                    )
                    if threads == 1:
                        probes[name].append((before, _probes.measure_issue_rate(PROBE_SECONDS)))
            expected = hf.reference.apply_padded(stencil, padded)
            np.testing.assert_array_equal(out, expected)
            np.testing.assert_array_equal(aligned_out, expected)
            median = {name: float(np.median(values)) for name, values in timings.items()}
            moved = 2 * out.nbytes
            rows.append(
                {
                    "n": n,
                    "dtype": dtype,
                    "seconds": median["kernel"],
                    "median_seconds": median,
                    "mpoints_per_s": n**3 / median["kernel"] / 1e6,
                    "gflops": flops / median["kernel"] / 1e9,
                    "aligned_gflops": flops / median["kernel_aligned"] / 1e9,
                    "fma_peak_gflops": flops / float(np.median(peak_seconds["fma"])) / 1e9,
                    "multiply_add_peak_gflops": flops / float(np.median(peak_seconds["multiply_add"])) / 1e9,
                    "fraction_of_fma_peak": paired_median(peak_seconds["fma"], timings["kernel"]),
                    "aligned_fraction_of_fma_peak": paired_median(peak_seconds["fma"], timings["kernel_aligned"]),
                    "gb_per_s": {name: moved / t / 1e9 for name, t in median.items()},
                    "kernel_fraction_of_copy": paired_median(timings["copy"], timings["kernel"]),
                    "aligned_fraction_of_copy": paired_median(timings["copy"], timings["kernel_aligned"]),
                    **two_thread_ratios(timings),
                    "bytes_in_caches": padded.nbytes + out.nbytes,
                    "in_cache": in_cache,
                    "state_splits": {
                        "fma_peak_alone_shared": state_split(peak_seconds["fma"], timings["kernel"], probes["kernel"]),
                        "aligned_fma_peak_alone_shared": state_split(
                            peak_seconds["fma"], timings["kernel_aligned"], probes["kernel_aligned"]
                        ),
                    },
                }
            )
    return rows


def state_split(numerators: list[float], denominators: list[float], probes: list[tuple[float, float]]) -> dict:
    """A paired ratio's rounds with the issue-rate probes around each (core_states)."""
    return {"numerators": numerators, "denominators": denominators, "probes": probes}


def core_states(rows: list[dict]) -> None:
    """Each row's paired ratios (the kernel's share of the FMA peak in the size curve, of
    STREAM Copy in the cases) within the rounds where the core ran this thread alone, and
    within those where another hardware thread shared it (on a VM whose vCPU shares its
    physical core with another tenant's, most of the time: dev/core_sharing.py shows it).
    The FMA loop needs barely two instructions a cycle and does not feel the sharing; the
    kernel (about 33 per four float64 points) gets half the core's issue width, and half
    its loads and stores, and does. A round counts by the probes around it against the
    best probe of all the rows (core_state.py)."""
    best = max(max(pair) for row in rows for split in row["state_splits"].values() for pair in split["probes"])
    for row in rows:
        row["best_issue_rate"] = best
        for key, split in row["state_splits"].items():
            states: dict[str, tuple[list[float], list[float]]] = {"alone": ([], []), "shared": ([], [])}
            for numerator, denominator, (before, after) in zip(
                split["numerators"], split["denominators"], split["probes"], strict=True
            ):
                state = core_state((before, after), best)
                if state:
                    states[state][0].append(numerator)
                    states[state][1].append(denominator)
            row[key] = {
                state: (paired_median(*pair) if pair[0] else None, len(pair[0])) for state, pair in states.items()
            }


def state_cell(state: tuple[float | None, int]) -> str:
    fraction, rounds = state
    return f"{100 * fraction:.0f} % ({rounds})" if fraction is not None else "- (0)"


def two_thread_cells(row: dict) -> str:
    return (
        f"{row['two_threads_speedup']:.2f}x | {row['two_threads_copy_speedup']:.2f}x | "
        f"{100 * row['two_threads_fraction_of_copy']:.0f} % |"
    )


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
        ("kernel_aligned", "hybridfd kernel, arrays placed by hybridfd"),
        ("numpy", "numpy slicing stencil"),
    ]
    for k, (name, label) in enumerate(bars):
        ax.bar(x + (k - 2) * 0.16, [row["gb_per_s"][name] for row in rows], 0.16, label=label)
    for i, row in enumerate(rows):
        ax.annotate(
            f"{100 * row['kernel_fraction_of_copy']:.0f} %",
            (x[i], row["gb_per_s"]["kernel"]),
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

    level1, level2, last_level_share = hf._core.cache_sizes()
    fig, (moved, arithmetic) = plt.subplots(1, 2, figsize=(12, 4.5))
    styles = {"float64": "-", "complex128": "--"}
    for dtype, style in styles.items():
        rows = [row for row in curve if row["dtype"] == dtype]
        n = [row["n"] for row in rows]
        for name, label, colour in (
            ("copy", "STREAM Copy", "grey"),
            ("copy_2_threads", "STREAM Copy, 2 threads", "black"),
            ("kernel", "kernel, 1 thread", "tab:blue"),
            ("kernel_aligned", "kernel, 1 thread, arrays placed by hybridfd", "tab:green"),
            ("kernel_2_threads", "kernel, 2 threads", "tab:orange"),
        ):
            moved.plot(
                n,
                [row["gb_per_s"][name] for row in rows],
                style,
                marker="o",
                ms=3,
                color=colour,
                label=f"{label}, {dtype}",
            )
        arithmetic.plot(
            n, [row["gflops"] for row in rows], style, marker="o", color="tab:blue", label=f"kernel, 1 thread, {dtype}"
        )
        arithmetic.plot(
            n,
            [row["aligned_gflops"] for row in rows],
            style,
            marker="o",
            color="tab:green",
            label=f"kernel, 1 thread, arrays placed by hybridfd, {dtype}",
        )
    # Where the float64 grid and its output outgrow each cache (complex128: one step sooner).
    float64_rows = [row for row in curve if row["dtype"] == "float64"]
    for bytes_, name in ((level2, "L2"), (last_level_share, "L3 share")):
        beyond = [row["n"] for row in float64_rows if row["bytes_in_caches"] > bytes_]
        if beyond:
            for ax in (moved, arithmetic):
                ax.axvline(beyond[0], color="black", lw=0.6, ls=":")
            moved.annotate(
                f"float64 grid + output\n> {name} ({bytes_ / 2**20:g} MiB)",
                (beyond[0], 0),
                xytext=(3, 5),
                textcoords="offset points",
                fontsize=7,
            )
    arithmetic.axhline(fma_peak, color="grey", ls="--", lw=0.8, label=f"FMA peak {fma_peak:.1f}")
    arithmetic.axhline(
        multiply_add_peak, color="grey", ls=":", lw=0.8, label=f"multiply+add peak {multiply_add_peak:.1f}"
    )
    arithmetic.axhline(fma_peak / 2, color="red", ls="-.", lw=0.8, label="50 % of FMA peak")
    for ax, ylabel, title in (
        (moved, "GB/s (grid read + result written)", "bytes moved, kernel vs Copy of the same bytes"),
        (arithmetic, "GFLOP/s (one core)", "arithmetic rate vs the core's peak"),
    ):
        ax.set_xscale("log", base=2)
        ax.set_xticks([row["n"] for row in float64_rows], [str(row["n"]) for row in float64_rows])
        ax.set_xlabel("grid edge n (one n^3 grid applied again and again)")
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=7)
    fig.suptitle(f"13-point stencil by grid size (L1 {level1 >> 10} KiB, L2 {level2 >> 10} KiB per core; medians)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="small grids, for a smoke run")
    args = parser.parse_args()
    cases = [(48, 1), (24, 8)] if args.quick else [(192, 1), (96, 32)]
    peaks = [_probes.measure_arithmetic_peak(0.3)]
    rows = [
        measure(shape, grids, dtype, args.repeats, min(3, args.repeats))
        for shape, grids in cases
        for dtype in ("float64", "complex128")
    ]
    curve = size_curve(SIZE_CURVE[:5] if args.quick else SIZE_CURVE, 0.05 if args.quick else 0.3)
    core_states(rows + curve)
    peaks.append(_probes.measure_arithmetic_peak(0.3))
    multiply_add_peak = float(np.median([p[0] for p in peaks]))
    fma_peak = float(np.median([p[1] for p in peaks]))
    for row in rows:
        row["multiply_add_peak_gflops"] = multiply_add_peak
        row["fma_peak_gflops"] = fma_peak
    print(f"command: {' '.join(['python', *sys.argv])}")
    print(f"host: {platform.node()}  build: {hf._core.build_flags()}")
    print(f"core arithmetic peak: {multiply_add_peak:.1f} GFLOP/s multiply+add, {fma_peak:.1f} GFLOP/s FMA")
    print(
        f"best issue-rate probe {rows[0]['best_issue_rate']:.2f} instructions/ns: a round had the core alone where "
        f"both probes around it reached {ALONE:.0%} of it, shared where both stayed at or below {SHARED:.0%}\n"
    )
    print(
        "| case | dtype | STREAM Copy GB/s | memcpy GB/s | kernel GB/s | kernel Mpoints/s | kernel % of Copy "
        "| aligned % of Copy | kernel % of memcpy | kernel GFLOP/s | % of mul+add peak | numpy GB/s | kernel / numpy "
        "| aligned % of Copy, core alone (rounds) | aligned, core shared "
        "| 2 threads / 1 thread | Copy 2 threads / 1 thread | 2 threads % of 2-thread Copy |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        g = row["gb_per_s"]
        print(
            f"| {row['case']} | {row['dtype']} | {g['copy']:.2f} | {g['memcpy']:.2f} | {g['kernel']:.2f} | "
            f"{row['mpoints_per_s']['kernel']:.0f} | {100 * row['kernel_fraction_of_copy']:.0f} % | "
            f"{100 * row['aligned_fraction_of_copy']:.0f} % | {100 * row['kernel_fraction_of_memcpy']:.0f} % | "
            f"{row['kernel_gflops']:.1f} | {100 * row['kernel_gflops'] / multiply_add_peak:.0f} % | "
            f"{g['numpy']:.2f} | {row['kernel_speedup_over_numpy']:.1f}x | "
            f"{state_cell(row['aligned_copy_alone_shared']['alone'])} | "
            f"{state_cell(row['aligned_copy_alone_shared']['shared'])} | {two_thread_cells(row)}"
        )
    print(
        f"\nSize curve: one n^3 grid applied again and again, timed in C++ (fastest of ten windows), "
        f"median of {CURVE_ROUNDS} interleaved rounds\n"
    )
    print(
        "| n | dtype | padded input + output | path | Copy GB/s | kernel GB/s | kernel % of Copy | Mpoints/s "
        "| GFLOP/s | % of FMA peak | aligned % of Copy | aligned % of FMA peak | aligned % of FMA peak, core alone "
        "(rounds) | aligned, core shared | 2 threads / 1 thread | Copy 2 threads / 1 thread "
        "| 2 threads % of 2-thread Copy |"
    )
    print("|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in curve:
        g = row["gb_per_s"]
        print(
            f"| {row['n']} | {row['dtype']} | {row['bytes_in_caches'] / 2**10:.0f} KiB | "
            f"{'in cache' if row['in_cache'] else 'from memory'} | {g['copy']:.1f} | {g['kernel']:.1f} | "
            f"{100 * row['kernel_fraction_of_copy']:.0f} % | {row['mpoints_per_s']:.0f} | {row['gflops']:.1f} | "
            f"{100 * row['fraction_of_fma_peak']:.0f} % | {100 * row['aligned_fraction_of_copy']:.0f} % | "
            f"{100 * row['aligned_fraction_of_fma_peak']:.0f} % | "
            f"{state_cell(row['aligned_fma_peak_alone_shared']['alone'])} | "
            f"{state_cell(row['aligned_fma_peak_alone_shared']['shared'])} | {two_thread_cells(row)}"
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
