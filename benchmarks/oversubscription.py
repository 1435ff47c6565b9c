"""Oversubscription (more ranks than cores): flat-original applies on 2, 4 and 8 ranks,
with idle ranks yielding their core (the launcher's default MPICH progress throttle)
and without (MPI's default busy polling), launched back to back in one run.

    .venv/bin/python benchmarks/oversubscription.py [--rounds 3]

Reports the median over rounds of each launch's median time per apply, and each launch's
wall time. Writes results/oversubscription.json and docs/img/oversubscription.png.
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
    samples: dict[tuple[int, bool], list[tuple[float, float]]] = {}
    for _ in range(args.rounds):  # rounds interleave the settings, so load drifts hit all alike
        for ranks in args.ranks:
            for yielding in (True, False):
                result = launch.run(ranks, program, timeout=600, yield_when_idle=yielding)
                if result.returncode != 0 or result.timed_out:
                    print(result.output, file=sys.stderr)
                    return 1
                record = json.loads(result.output.strip().splitlines()[-1])
                samples.setdefault((ranks, yielding), []).append((record["median_ms_per_apply"], result.seconds))
    rows = []
    print(f"command: {' '.join(['python', *sys.argv])}  cores: {os.cpu_count()}\n")
    print("| ranks | idle ranks | ms per apply (median) | launch wall s (median) | busy-poll / yield |")
    print("|---:|---|---:|---:|---:|")
    for ranks in args.ranks:
        medians = {}
        for yielding in (True, False):
            ms, wall = (float(np.median(values)) for values in zip(*samples[(ranks, yielding)], strict=True))
            medians[yielding] = ms
            rows.append({"ranks": ranks, "yield": yielding, "ms_per_apply": ms, "wall_seconds": wall})
        for yielding in (True, False):
            row = next(r for r in rows if r["ranks"] == ranks and r["yield"] == yielding)
            ratio = f"{medians[False] / medians[True]:.1f}x" if yielding else ""
            print(
                f"| {ranks} | {'yield' if yielding else 'busy-poll'} | {row['ms_per_apply']:.2f} | "
                f"{row['wall_seconds']:.1f} | {ratio} |"
            )
    (ROOT / "results").mkdir(exist_ok=True)
    (ROOT / "results" / "oversubscription.json").write_text(json.dumps(rows, indent=2))

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    x = np.arange(len(args.ranks))
    for k, yielding in enumerate((True, False)):
        values = [
            next(r["ms_per_apply"] for r in rows if r["ranks"] == n and r["yield"] == yielding) for n in args.ranks
        ]
        ax.bar(x + (k - 0.5) * 0.4, values, 0.4, label="idle ranks yield" if yielding else "busy polling")
    ax.set_xticks(x, [f"{n} ranks" for n in args.ranks])
    ax.set_yscale("log")
    ax.set_ylabel("ms per apply (median)")
    ax.set_title(f"flat-original, 4 grids of 48^3, on {os.cpu_count()} cores")
    ax.legend()
    fig.tight_layout()
    (ROOT / "docs" / "img").mkdir(parents=True, exist_ok=True)
    fig.savefig(ROOT / "docs" / "img" / "oversubscription.png", dpi=120)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
