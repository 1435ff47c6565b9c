"""Where a grid lies in memory, side by side: the kernel on the same values with the
padded input's interior, and the output, at different offsets past a 64-byte line.

    chrt -f 50 .venv/bin/python dev/placement.py [--rounds 7] [--seconds 0.05]

numpy starts a large array 16 bytes past a line (malloc's header): a float64 output
then lies "16 past", and a radius-2 padded input's interior "32 past" (two points in).
hybridfd.arrays places both on a line (0 past). Each placement is timed in C++
(``hybridfd._probes.kernel_seconds``, fastest of ten windows) right after hybridfd's own
placement (input 0, output 0), and the ratio of the two taken; medians over the rounds.
The kernel is told where the grid lives as in benchmarks/kernel_throughput.py's size curve. Writes
results/placement.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

import hybridfd as hf
from hybridfd import _probes
from hybridfd.arrays import placed_flat

ROOT = Path(__file__).resolve().parents[1]
SIZES = (24, 48, 96, 192)
INPUT_OFFSETS = (0, 8, 16, 24, 32)  # bytes past a line of the interior's first point
OUTPUT_OFFSETS = (0, 16)  # bytes past a line of the output's first point


def placed(shape: tuple[int, ...], dtype: str, first: int, offset: int) -> np.ndarray:
    """A fresh C-contiguous array whose byte ``first`` lies ``offset`` bytes past a line."""
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    return placed_flat(nbytes, dtype, first=first, past=offset).reshape(shape)


def measure(n: int, dtype: str, rounds: int, seconds: float) -> list[dict]:
    stencil = hf.Stencil.laplace(2, 0.2)
    r = stencil.radius
    padded_shape = (n + 2 * r,) * 3
    item = np.dtype(dtype).itemsize
    interior = ((r * padded_shape[1] + r) * padded_shape[2] + r) * item
    values = np.random.default_rng(n).standard_normal(padded_shape).astype(dtype)
    expected = hf.reference.apply_padded(stencil, values)
    _, _, last_level_share = hf._core.cache_sizes()
    in_cache = values.nbytes + n**3 * item <= last_level_share  # input and output, as kernel_throughput.py
    inputs = {offset: placed(padded_shape, dtype, interior, offset) for offset in INPUT_OFFSETS}
    outputs = {offset: placed((n, n, n), dtype, 0, offset) for offset in OUTPUT_OFFSETS}
    for grid in inputs.values():
        grid[...] = values
    pairs = [(i, o) for i in INPUT_OFFSETS for o in OUTPUT_OFFSETS]

    def timed(i: int, o: int) -> float:
        return _probes.kernel_seconds(stencil._core, inputs[i], outputs[o], seconds, 1, not in_cache)

    # Each placement right after hybridfd's own, so that the machine's drifts (seconds
    # long here) hit both sides of a ratio alike.
    times: dict[tuple[int, int], list[float]] = {pair: [] for pair in pairs}
    ratios: dict[tuple[int, int], list[float]] = {pair: [] for pair in pairs}
    for _ in range(rounds):
        for pair in pairs:
            base = timed(0, 0)
            times[pair].append(timed(*pair))
            ratios[pair].append(base / times[pair][-1])
            np.testing.assert_array_equal(outputs[pair[1]], expected)
    rows = []
    for i, o in pairs:
        rows.append(
            {
                "n": n,
                "dtype": dtype,
                "path": "in cache" if in_cache else "from memory",
                "input_offset": i,
                "output_offset": o,
                "mpoints_per_s": n**3 / float(np.median(times[(i, o)])) / 1e6,
                "rate_vs_hybridfd_placement": float(np.median(ratios[(i, o)])),
                "range": [min(ratios[(i, o)]), max(ratios[(i, o)])],
            }
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seconds", type=float, default=0.05, help="time per timing (C++ windows)")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    args = parser.parse_args()
    if args.rounds < 1 or not 0 < args.seconds <= 10 or any(n < 1 for n in args.sizes):
        parser.error(f"rounds {args.rounds}, seconds {args.seconds} and sizes {args.sizes} must be positive")
    rows = [
        row
        for n in args.sizes
        for dtype in ("float64", "complex128")
        for row in measure(n, dtype, args.rounds, args.seconds)
    ]
    print(f"command: {' '.join(['python', *sys.argv])}\n")
    print(
        "| n | dtype | path | input interior, bytes past a line | output, bytes past a line | Mpoints/s "
        "| rate vs hybridfd's placement (0, 0) | range |"
    )
    print("|---:|---|---|---:|---:|---:|---:|---|")
    for row in rows:
        low, high = row["range"]
        print(
            f"| {row['n']} | {row['dtype']} | {row['path']} | {row['input_offset']} | {row['output_offset']} | "
            f"{row['mpoints_per_s']:.0f} | {row['rate_vs_hybridfd_placement']:.2f} | {low:.2f}-{high:.2f} |"
        )
    results = ROOT / "results"
    results.mkdir(exist_ok=True)
    (results / "placement.json").write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
