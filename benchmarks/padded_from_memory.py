"""Many small padded grids applied in turn: `apply_padded`'s `from_memory` hint, side by side.

A padded grid within the core's L2 is swept in columns (cpp/src/column_sweep.hpp). The
padded entry cannot tell whether such a grid comes from cache (applied again and again)
or from memory (one of many grids applied in turn); by default it assumes cache and does
not prefetch. This script applies G grids of n^3 in turn, so that every grid comes from
memory, with the default and with ``from_memory=True``, interleaved, and reports the
fastest round of each and their ratio (docs/benchmarks.md, session 17).

    .venv/bin/python benchmarks/padded_from_memory.py [--repeats 7] [--bytes 64]

Every output of the two calls is checked to be bit for bit the same.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import hybridfd as hf
from hybridfd.kernel import apply_padded

CASES = [(dtype, n) for dtype in ("float64", "complex128") for n in (16, 24, 32)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="interleaved rounds per setting (default 7)")
    parser.add_argument(
        "--bytes", type=int, default=64, help="MiB of padded input per case, far beyond the L3 (default 64)"
    )
    arguments = parser.parse_args()
    stencil = hf.Stencil.laplace(2, (1.0, 1.0, 1.0))
    rng = np.random.default_rng(0)
    print("| grids | dtype | default Mpoints/s | from_memory=True Mpoints/s | ratio |")
    print("|---|---|---:|---:|---:|")
    for dtype, n in CASES:
        itemsize = np.dtype(dtype).itemsize
        grids = max(1, arguments.bytes * 2**20 // ((n + 4) ** 3 * itemsize))
        inputs = [rng.random((n + 4,) * 3).astype(dtype) for _ in range(grids)]
        outputs = {hint: [np.empty((n,) * 3, dtype) for _ in range(grids)] for hint in (None, True)}
        rates: dict[bool | None, list[float]] = {None: [], True: []}
        for _ in range(arguments.repeats):
            for hint in (None, True):
                start = time.perf_counter()
                for padded, out in zip(inputs, outputs[hint], strict=True):
                    apply_padded(stencil, padded, out, from_memory=hint)
                rates[hint].append(grids * n**3 / (time.perf_counter() - start) / 1e6)
        for default, hinted in zip(outputs[None], outputs[True], strict=True):
            np.testing.assert_array_equal(hinted, default)
        default_rate, hinted_rate = max(rates[None]), max(rates[True])
        ratio = hinted_rate / default_rate
        print(f"| {grids} x {n}^3 | {dtype} | {default_rate:.0f} | {hinted_rate:.0f} | {ratio:.2f}x |")


if __name__ == "__main__":
    main()
