"""Oversubscription (more ranks than cores): on 2, 4 and 8 ranks, with idle ranks
yielding their core (the launcher's default MPICH progress throttle) and without (MPI's
default busy polling), launched back to back in one run, for two loops: flat-original
applies (waiting in MPI_Waitall) and a ring exchange spinning on MPI_Testall (what a
polling transport does).

    .venv/bin/python benchmarks/oversubscription.py [--rounds 3]

Reports the median over rounds of each launch's median time per apply, and each launch's
wall time. Writes results/oversubscription.json and results/oversubscription.png.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

from hybridfd import launch

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4, 8])
    args = parser.parse_args()
    program = [sys.executable, str(Path(__file__).with_name("halo_loop.py"))]
    modes = {"apply": "flat-original apply (Waitall)", "poll": "ring exchange spinning on Testall"}
    samples: dict[tuple[str, int, bool], list[tuple[float, float]]] = {}
    for _ in range(args.rounds):  # rounds interleave the settings, so load drifts hit all alike
        for mode in modes:
            for ranks in args.ranks:
                for yielding in (True, False):
                    result = launch.run(ranks, [*program, "--mode", mode], timeout=600, yield_when_idle=yielding)
                    if result.returncode != 0 or result.timed_out:
                        print(result.output, file=sys.stderr)
                        return 1
                    record = json.loads(result.output.strip().splitlines()[-1])
                    key = (mode, ranks, yielding)
                    samples.setdefault(key, []).append((record["median_ms_per_apply"], result.seconds))
    rows = []
    print(f"command: {' '.join(['python', *sys.argv])}  cores: {os.cpu_count()}\n")
    print("| loop | ranks | idle ranks | ms per iteration (median) | launch wall s (median) | busy-poll / yield |")
    print("|---|---:|---|---:|---:|---:|")
    for mode, label in modes.items():
        for ranks in args.ranks:
            medians = {}
            for yielding in (True, False):
                ms, wall = (float(np.median(values)) for values in zip(*samples[(mode, ranks, yielding)], strict=True))
                medians[yielding] = ms
                rows.append({"loop": mode, "ranks": ranks, "yield": yielding, "ms_per_apply": ms, "wall_seconds": wall})
            for yielding in (True, False):
                row = rows[-2] if yielding else rows[-1]
                ratio = f"{medians[False] / medians[True]:.1f}x" if yielding else ""
                print(
                    f"| {label} | {ranks} | {'yield' if yielding else 'busy-poll'} | {row['ms_per_apply']:.3f} | "
                    f"{row['wall_seconds']:.1f} | {ratio} |"
                )
    (ROOT / "results").mkdir(exist_ok=True)
    (ROOT / "results" / "oversubscription.json").write_text(json.dumps(rows, indent=2))

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    x = np.arange(len(args.ranks))
    for ax, (mode, label) in zip(axes, modes.items(), strict=True):
        for k, yielding in enumerate((True, False)):
            values = [
                next(
                    r["ms_per_apply"] for r in rows if r["loop"] == mode and r["ranks"] == n and r["yield"] == yielding
                )
                for n in args.ranks
            ]
            ax.bar(x + (k - 0.5) * 0.4, values, 0.4, label="idle ranks yield" if yielding else "busy polling")
        ax.set_xticks(x, [f"{n} ranks" for n in args.ranks])
        ax.set_yscale("log")
        ax.set_ylabel("ms per iteration (median)")
        ax.set_title(f"{label}, {os.cpu_count()} cores", fontsize=9)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(ROOT / "results" / "oversubscription.png", dpi=120)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
