"""What moves the kernel's rate from one second to the next on a shared host: the core's
issue rate, probed beside the kernel and the core's references, in turn, for a while.

    .venv/bin/python dev/core_sharing.py [--seconds 120] [--n 24]   # in cache
    .venv/bin/python dev/core_sharing.py --n 192                    # from memory

Each sample, in turn on this thread, each over about 20 ms: the issue-rate probe
(hybridfd._probes.measure_issue_rate: independent register-only adds, which a core running
this thread alone issues at its full width and one shared with another hardware thread at
about half), the multiply+add and FMA peaks (measure_arithmetic_peak), STREAM Copy of
8 KiB (in the L1) and of the kernel's output's bytes, the kernel on one padded n^3 float64
grid (kernel_seconds; from memory where the grid and its output outgrow this core's share
of the last-level cache, as in benchmarks/kernel_throughput.py's size curve), and the kernel's share
of that Copy within the sample. Samples are then split by the probe into the core alone (>= 85 %
of the best probe) and shared (<= 70 %); the table gives each measure's median in both
states and their ratio, and its correlation with the probe over all samples. On a VM
whose vCPU shares its physical core with another tenant's, the FMA peak does not move
while the kernel, the multiply+add loop and the copies in cache lose a quarter to a half.
Writes results/core_sharing.json and results/core_sharing.png.
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

ROOT = Path(__file__).resolve().parents[1]
WINDOW = 0.02
MEASURES = (
    ("issue_rate", "issue-rate probe, instructions/ns"),
    ("multiply_add_gflops", "multiply+add peak, GFLOP/s"),
    ("fma_gflops", "FMA peak, GFLOP/s"),
    ("l1_copy_gb_per_s", "Copy of 8 KiB (L1), GB/s"),
    ("grid_copy_gb_per_s", "Copy of the output's bytes, GB/s"),
    ("kernel_mpoints_per_s", "kernel, Mpoints/s"),
    ("kernel_share_of_copy", "kernel's share of that Copy"),
)


def sample_for(seconds: float, n: int) -> list[dict]:
    stencil = hf.Stencil.laplace(2, 0.2)
    rng = np.random.default_rng(1)
    grid = empty_padded((n, n, n), stencil.radius, "float64")
    grid[...] = rng.standard_normal(grid.shape)
    out = empty_aligned((n, n, n), "float64")
    # As kernel_throughput's size curve: from memory unless the grid and its output fit
    # this core's share of the last-level cache.
    from_memory = grid.nbytes + out.nbytes > hf._core.cache_sizes()[2]
    copies = {size: (rng.standard_normal(size // 8), np.empty(size // 8)) for size in (8 << 10, out.nbytes)}
    samples = []
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        issue_rate = _probes.measure_issue_rate(WINDOW)
        multiply_add, fma = _probes.measure_arithmetic_peak(WINDOW)
        copy_seconds = {size: _probes.copy_seconds(source, target, WINDOW) for size, (source, target) in copies.items()}
        kernel_seconds = _probes.kernel_seconds(stencil._core, grid, out, WINDOW, 1, from_memory)
        samples.append(
            {
                "seconds": time.perf_counter() - start,
                "issue_rate": issue_rate,
                "multiply_add_gflops": multiply_add,
                "fma_gflops": fma,
                "l1_copy_gb_per_s": 2 * (8 << 10) / copy_seconds[8 << 10] / 1e9,
                "grid_copy_gb_per_s": 2 * out.nbytes / copy_seconds[out.nbytes] / 1e9,
                "kernel_mpoints_per_s": n**3 / kernel_seconds / 1e6,
                "kernel_share_of_copy": copy_seconds[out.nbytes] / kernel_seconds,
                "from_memory": from_memory,
            }
        )
    np.testing.assert_array_equal(out, hf.reference.apply_padded(stencil, np.asarray(grid)))
    return samples


def summarise(samples: list[dict]) -> dict:
    """Each measure's median with the core alone and shared (by the probe), their ratio,
    and its correlation with the probe over all samples."""
    best = max(sample["issue_rate"] for sample in samples)
    states = [core_state([s["issue_rate"]], best) for s in samples]
    alone = [s for s, state in zip(samples, states, strict=True) if state == "alone"]
    shared = [s for s, state in zip(samples, states, strict=True) if state == "shared"]
    probe = np.array([s["issue_rate"] for s in samples])
    summary = {"best_issue_rate": best, "alone_samples": len(alone), "shared_samples": len(shared), "measures": {}}
    for name, _ in MEASURES:
        values = np.array([s[name] for s in samples])
        in_state = {
            state: float(np.median([s[name] for s in group])) if group else None
            for state, group in (("alone", alone), ("shared", shared))
        }
        both = in_state["alone"] is not None and in_state["shared"] is not None
        summary["measures"][name] = {
            **in_state,
            "shared_over_alone": in_state["shared"] / in_state["alone"] if both else None,
            "correlation_with_probe": float(np.corrcoef(probe, values)[0, 1]) if values.std() > 0 else None,
        }
    return summary


def plot(samples: list[dict], summary: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(MEASURES), 1, figsize=(10, 2 * len(MEASURES)), sharex=True)
    t = [s["seconds"] for s in samples]
    best = summary["best_issue_rate"]
    shared = [core_state([s["issue_rate"]], best) == "shared" for s in samples]
    for ax, (name, label) in zip(axes, MEASURES, strict=True):
        ax.plot(t, [s[name] for s in samples], lw=0.8, color="tab:blue")
        ax.scatter(
            [x for x, flag in zip(t, shared, strict=True) if flag],
            [s[name] for s, flag in zip(samples, shared, strict=True) if flag],
            s=4,
            color="tab:red",
            label=f"core shared (probe <= {SHARED:.0%} of its best)",
        )
        ax.set_ylabel(label, fontsize=7)
        ax.set_ylim(bottom=0)
    axes[0].legend(fontsize=7, loc="lower right")
    axes[-1].set_xlabel("seconds")
    fig.suptitle("One core's rates over time, each sample ~20 ms of each loop in turn", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--n", type=int, default=24, help="edge of the padded float64 grid the kernel applies")
    parser.add_argument("--output", type=Path, default=ROOT / "results" / "core_sharing.json")
    parser.add_argument("--plot", type=Path, default=ROOT / "results" / "core_sharing.png")
    args = parser.parse_args(argv)
    samples = sample_for(args.seconds, args.n)
    summary = summarise(samples)
    print(f"command: {' '.join(['python', *sys.argv])}")
    print(f"host: {platform.node()}  build: {hf._core.build_flags()}")
    where = "from memory" if samples[0]["from_memory"] else "in cache"
    print(f"kernel on one {args.n}^3 float64 grid, {where}")
    print(
        f"{len(samples)} samples; best probe {summary['best_issue_rate']:.2f} instructions/ns; core alone "
        f"(>= {ALONE:.0%} of it) in {summary['alone_samples']}, shared (<= {SHARED:.0%}) in "
        f"{summary['shared_samples']}\n"
    )
    print("| measure | core alone (median) | core shared (median) | shared / alone | correlation with the probe |")
    print("|---|---:|---:|---:|---:|")

    def cell(value: float | None, form: str) -> str:
        return "-" if value is None else format(value, form)

    for name, label in MEASURES:
        m = summary["measures"][name]
        form = ".2f" if name == "kernel_share_of_copy" else ".1f"
        print(
            f"| {label} | {cell(m['alone'], form)} | {cell(m['shared'], form)} | "
            f"{cell(m['shared_over_alone'], '.2f')} | {cell(m['correlation_with_probe'], '.2f')} |"
        )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps({"summary": summary, "samples": samples}, indent=1))
    plot(samples, summary, args.plot)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
