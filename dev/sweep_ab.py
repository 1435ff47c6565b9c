"""Two revisions of one wide-vector sweep side by side, in one process, built in seconds.

kernel_ab.py judges what the kernel runs, but compiles the whole kernel twice (3-6
minutes here). To iterate on a sweep itself (column_sweep.hpp, streamed_planes.hpp), this
compiles only tests/kernel_sweeps/driver.cpp, the sweeps' test driver, twice: once against
the headers of revision A (its cpp/src/kernel/ and cpp/include) and once against revision
B's (default: the working tree), about 10 s each, in parallel. Both revisions must have
the kernel's folder, cpp/src/kernel/, whose sweeps the driver calls. Both libraries are
loaded by ctypes and timed in alternating rounds on the same padded grids (the
Laplacian, float64 lanes of float64 or complex128 points); the report gives each side's
median rate, B / A, and whether every output lane agrees. `--realtime` reruns it under SCHED_FIFO (chrt; needs
root): other processes then cannot take its core, only memory bandwidth.
`--output-plane-pad` spaces the output's x-planes by that many more bytes: whether a
sweep's rate depends on where its output planes fall within a page.

    .venv/bin/python dev/sweep_ab.py --a HEAD --sweep streamed_planes --n 96 --grids 32
    .venv/bin/python dev/sweep_ab.py --a HEAD~2 --b HEAD --sweep columns --n 24 --grids 64

A sweep that beats another here still has to beat the row slide in kernel_ab.py before
the kernel's choice of sweep (cpp/src/kernel/sweep_choice.cpp) should take it.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from kernel_ab import FLAGS, ROOT, source_tree, split_commit

import hybridfd as hf
from hybridfd.arrays import placed_flat

DRIVER = ROOT / "tests" / "kernel_sweeps" / "driver.cpp"
SWEEPS = {
    "columns": 0,
    "columns_prefetching": 1,
    "streamed_planes": 2,
    "columns_streamed": 3,
    "columns_prefetching_streamed": 4,
}


def check_sweeps(tree: Path, revision: str | None) -> None:
    """Refuses a revision whose sweeps the driver cannot build: from before the kernel's folder."""
    if not (tree / "cpp" / "src" / "kernel" / "column_sweep.hpp").exists():
        raise SystemExit(
            f"revision {revision} has no cpp/src/kernel/column_sweep.hpp: its sweeps predate the kernel's "
            f"folder and the driver's interface to them, both from {split_commit()}; compare revisions from it on"
        )


def build(tree: Path, library: Path) -> None:
    # Only the revision's headers, its cpp/src ("kernel/column_sweep.hpp") and cpp/include,
    # so that no header the revision lacks is taken from the working tree unseen.
    command = ["c++", *FLAGS, "-fPIC", "-shared", f"-I{tree / 'cpp' / 'src'}", f"-I{tree / 'cpp' / 'include'}"]
    command += [str(DRIVER), "-o", str(library)]
    completed = subprocess.run(command, capture_output=True, text=True)
    if completed.returncode != 0:
        raise SystemExit(f"building {library.name} failed:\n{completed.stderr[-4000:]}")


def load(library: Path) -> ctypes.CDLL:
    """The driver's functions with their C types (tests/test_kernel_sweeps.py loads it so too)."""
    driver = ctypes.CDLL(str(library))
    pointer, int64 = ctypes.c_void_p, ctypes.c_int64
    driver.hybridfd_test_sweep.argtypes = [ctypes.c_int] * 3 + [pointer, pointer, int64, int64, pointer, pointer]
    driver.hybridfd_test_sweep.argtypes += [int64, int64, int64]
    driver.hybridfd_test_sweep.restype = ctypes.c_int
    driver.hybridfd_test_columns_stream.argtypes = [pointer, int64, int64, pointer]
    driver.hybridfd_test_columns_stream.restype = ctypes.c_int
    return driver


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--a", default="HEAD", help="revision of sweep a (default HEAD)")
    parser.add_argument("--b", default=None, help="revision of sweep b (default: the working tree)")
    parser.add_argument("--sweep", choices=list(SWEEPS), default="streamed_planes")
    parser.add_argument("--dtype", choices=["float64", "complex128"], default="float64")
    parser.add_argument("--n", type=int, default=96, help="points per side of each grid")
    parser.add_argument("--grids", type=int, default=32, help="grids applied in turn per round")
    parser.add_argument("--radius", type=int, choices=[1, 2, 3], default=2)
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds per side; the median is reported")
    parser.add_argument("--offset", type=int, default=16, help="bytes past a line where each array starts (numpy: 16)")
    parser.add_argument("--output-plane-pad", type=int, default=0, help="bytes added between output x-planes")
    parser.add_argument("--realtime", action="store_true", help="run under SCHED_FIFO (chrt -f 50)")
    arguments = argv if argv is not None else sys.argv[1:]
    args = parser.parse_args(arguments)
    for name in ("n", "grids", "rounds"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(args, name)}")
    if args.output_plane_pad < 0 or args.output_plane_pad % 8 != 0 or args.offset % 8 != 0:
        parser.error(
            f"--offset {args.offset} and --output-plane-pad {args.output_plane_pad} must be multiples of 8 "
            "(the pad not negative)"
        )
    if args.realtime and os.environ.get("HYBRIDFD_SWEEP_AB_REALTIME") != "1":
        if shutil.which("chrt") is None:
            parser.error("--realtime needs chrt (util-linux)")
        environment = dict(os.environ, HYBRIDFD_SWEEP_AB_REALTIME="1")
        command = ["chrt", "-f", "50", sys.executable, __file__, *arguments]
        return subprocess.run(command, env=environment).returncode

    with tempfile.TemporaryDirectory(prefix="sweep_ab_") as scratch:
        folder = Path(scratch)
        trees = [source_tree(args.a, folder / "tree_a"), source_tree(args.b, folder / "tree_b")]
        for tree, revision in zip(trees, (args.a, args.b), strict=True):
            check_sweeps(tree, revision)
        libraries = [folder / "sweeps_a.so", folder / "sweeps_b.so"]
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(build, trees, libraries))
        drivers = [load(library) for library in libraries]

        radius, point_lanes, n = args.radius, 2 if args.dtype == "complex128" else 1, args.n
        side = n + 2 * radius
        stride_y, out_stride_y = side * point_lanes, n * point_lanes
        stride_x, out_stride_x = side * stride_y, n * out_stride_y + args.output_plane_pad // 8
        coefficients = np.ascontiguousarray(hf.Stencil.laplace(radius, 0.2).coefficients)
        # The kernel's budget for the streamed sweep's bands: half the L2 (row_slide.hpp).
        budget_bytes = hf._core.cache_sizes()[1] // 2
        rng = np.random.default_rng(0)
        inputs = [placed_flat(side**3 * point_lanes * 8, np.float64, past=args.offset) for _ in range(args.grids)]
        for grid in inputs:
            grid[...] = rng.standard_normal(grid.size)
        outputs = [
            [placed_flat(n * out_stride_x * 8, np.float64, past=args.offset) for _ in range(args.grids)]
            for _ in drivers
        ]
        for grids in outputs:
            for grid in grids:
                grid[...] = 0.0
        extent = np.array([n, n, n * point_lanes], dtype=np.int64)
        first = radius * (stride_x + stride_y + point_lanes)

        def apply(side_index: int) -> float:
            driver, start = drivers[side_index], time.perf_counter()
            for source, target in zip(inputs, outputs[side_index], strict=True):
                served = driver.hybridfd_test_sweep(
                    SWEEPS[args.sweep],
                    radius,
                    point_lanes,
                    coefficients.ctypes.data,
                    source.ctypes.data + 8 * first,
                    stride_x,
                    stride_y,
                    extent.ctypes.data,
                    target.ctypes.data,
                    out_stride_x,
                    out_stride_y,
                    budget_bytes,
                )
                if served != 0:
                    raise SystemExit(f"the build's sweeps do not serve radius {radius} with {args.dtype}")
            return time.perf_counter() - start

        for side_index in (0, 1):  # first touch of every page
            apply(side_index)
        seconds: list[list[float]] = [[], []]
        for round_number in range(args.rounds):
            for side_index in (0, 1) if round_number % 2 == 0 else (1, 0):
                seconds[side_index].append(apply(side_index))
        identical = all(np.array_equal(a, b) for a, b in zip(*outputs, strict=True))

    points = n**3 * args.grids
    rate = [points / float(np.median(times)) / 1e6 for times in seconds]
    ratios = [a / b for a, b in zip(seconds[0], seconds[1], strict=True)]
    print(f"command: python dev/sweep_ab.py {' '.join(arguments)}")
    print(f"sweep a: {args.a}; sweep b: {args.b or 'working tree'}; {args.rounds} rounds each, alternating")
    print("| case | a Mpoints/s | b Mpoints/s | b / a (median of rounds) | bit-identical |")
    print("|---|---:|---:|---|---|")
    case = f"{args.sweep} r={radius} {args.dtype} {args.grids} x {n}^3, output planes +{args.output_plane_pad} B"
    print(f"| {case} | {rate[0]:.0f} | {rate[1]:.0f} | **{float(np.median(ratios)):.3f}** | {identical} |")
    return 0 if identical else 1


if __name__ == "__main__":
    raise SystemExit(main())
