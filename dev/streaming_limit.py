"""Where the kernel's from-memory rate is bound: loops beside the library's kernel.

The kernel aims at 85 % of STREAM Copy on grids that come from memory. This script
builds dev/streaming_limit/probe.cpp against the working tree's core library (as
kernel_ab.py does) and runs it: STREAM Copy; a one-stream stencil (the kernel's
arithmetic and bytes per point, every neighbour from the one stream it reads); the
Laplacian in row order, one plane at a time (the same arithmetic plus the x- and
y-neighbour rows, bit for bit the library's output); the same over P = 2, 3, 4 x-planes
at a time with the next step's planes prefetched and rows in bands (what the kernel's
streamed_planes.hpp does), and over 3 planes without bands or without prefetches; and
the library's kernel, on the same G grids of n^3 float64 applied in turn, in
interleaved rounds, with the arrays on 4 KiB pages and on huge pages (numpy madvises its
arrays from 4 MiB, so the Python benchmarks see the second). Each cell is the median
over the probe's runs of each run's median round, as % of the same run's Copy. Every
loop runs on the build's widest vectors (8 lanes with AVX-512, 4 with AVX2).

    .venv/bin/python dev/streaming_limit.py [--n 96] [--grids 32] [--repeats 3] [--realtime]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from kernel_ab import FLAGS, ROOT, core_libraries, run, run_json

PROBE = Path(__file__).resolve().parent / "streaming_limit" / "probe.cpp"
PLANES = ("planes_2", "planes_3", "planes_4", "planes_3_whole_planes", "planes_3_no_prefetch")


def build(build_dir: Path) -> Path:
    libraries = core_libraries(build_dir)
    executable = build_dir / "streaming_limit"
    run(
        [
            "c++",
            *FLAGS,
            "-Wall",
            "-Wextra",
            f"-I{ROOT / 'cpp' / 'include'}",
            f"-I{ROOT / 'cpp' / 'src'}",  # the kernel's private headers: "kernel/wide_vector.hpp"
            f"-I{ROOT / 'cpp' / 'probes'}",
            f"-I{ROOT / '.venv' / 'include'}",
            str(PROBE),
            *map(str, libraries),
            f"-L{ROOT / '.venv' / 'lib'}",
            f"-Wl,-rpath,{ROOT / '.venv' / 'lib'}",
            "-lmpi",
            "-fopenmp",
            "-o",
            str(executable),
        ]
    )
    return executable


def share(results: list[dict], loop: str) -> str:
    """A loop's rate as % of Copy in the same probe run: the median, then each run's."""
    ratios = [result[loop] / result["copy"] for result in results]
    spread = ", ".join(f"{100 * ratio:.0f}" for ratio in ratios)
    return f"**{100 * statistics.median(ratios):.0f} %** ({spread})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=96, help="grid edge, a multiple of 24 (default 96)")
    parser.add_argument("--grids", type=int, default=32, help="grids applied in turn (default 32)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds per probe run (default 5)")
    parser.add_argument("--repeats", type=int, default=3, help="probe runs per setting; the median is reported")
    parser.add_argument("--realtime", action="store_true", help="run the probe under SCHED_FIFO (chrt -f 50)")
    parser.add_argument("--build-dir", type=Path, default=ROOT / "build" / "kernel-ab")
    args = parser.parse_args(argv)
    executable = build(args.build_dir)
    prefix = ["chrt", "-f", "50"] if args.realtime else []
    print(f"{args.grids} x {args.n}^3 float64, median of {args.repeats} probe runs, % of the same run's Copy")
    columns = ("one_stream", "rows_one_plane", "library", *PLANES)
    print(f"| pages | Copy Mpoints/s | {' | '.join(columns)} | all == library |")
    print(f"|---|---:|{'---:|' * len(columns)}---|")
    failed = False
    for huge_pages in (False, True):
        command = [*prefix, str(executable), "--n", str(args.n), "--grids", str(args.grids)]
        command += ["--rounds", str(args.rounds)] + (["--huge-pages"] if huge_pages else [])
        results = [run_json(command, "probe") for _ in range(args.repeats)]
        identical = all(result["bit_identical"] for result in results)
        failed = failed or not identical
        copy = statistics.median(result["copy"] for result in results)
        print(
            f"| {'2 MiB (madvise)' if huge_pages else '4 KiB'} | {copy:.0f} "
            f"| {' | '.join(share(results, column) for column in columns)} | {identical} |",
            flush=True,
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
