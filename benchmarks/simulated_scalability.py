"""Fig. 7.4 (2,816 grids of 192^3 on 1,024-16,384 Blue Gene/P cores) simulated with fewer
grids per apply, the time per apply of 2,816 grids extrapolated (docs/simulation.md,
section 6).

Why this is possible: SMPI's wall time grows with the messages per apply (ranks x batch
steps x 6), and 2,816 grids are 17 million messages for flat-original at 1,024 cores,
hours here. But every batch step of an apply is the same work on every rank (the same
boxes, the same faces, the same compute): the presets' batches are [4, 8, ..., 8, 4]
(batch 8, geometric slope 1) for any multiple of 8 grids per rank (of 32 for
hybrid-multiple's 4 grid groups), and flat-original is one identical serial-dims round
per grid. The simulation is deterministic, so once the pipeline is in its steady state
each further batch step adds the same time, and T(G) = a + b G exactly for G of that
form. That is an assumption about the simulated schedule (ranks could drift apart batch
after batch), so it is checked, not assumed: each approach is simulated at three grid
counts, the line through the two largest predicts the smallest (``check`` column), and
with ``--direct`` the full 2,816 grids are simulated where that is affordable and set
beside the extrapolation.

    nice -n 10 .venv/bin/python benchmarks/simulated_scalability.py --cores 1024 16384 \
        -o benchmarks/results/simulated_scalability_bluegene_p.json \
        --plot docs/img/simulated_scalability_bluegene_p.png

Every simulated point is cached as JSON (hybridfd.simulate.experiments' cache), so a re-run
only simulates what is new.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from hybridfd.experiments._stencil import model_of, variant
from hybridfd.perfmodel.store import cache_dir
from hybridfd.simulate import experiments, smpi

GRIDS, SHAPE = 2816, 192
FLOPS_PER_POINT = 19  # cpp/tools/simulation.hpp: 13-point stencil, float64
#: Grid counts simulated per approach: multiples of the preset's batch (8) times the
#: grid groups (4 for hybrid-multiple), so the batches have the same form as at 2,816.
POINTS = {
    "flat-original": (4, 8, 12),
    "flat-optimized": (16, 24, 32),
    "hybrid-master-only": (16, 24, 32),
    "hybrid-multiple": (64, 96, 128),
}


def simulate(approach: str, cores: int, grids: int, cache: Path, driver: Path) -> tuple[float, float]:
    """(simulated ms per apply, wall seconds) of ``grids`` grids of 192^3 on ``cores`` cores."""
    job = {"grids": grids, "shape": SHAPE, "dtype": "float64", "radius": 2, "simulate": {"platform": "bluegene-p"}}
    run = experiments.plan(variant(approach), model_of(approach), cores, job, experiments.TEAM_SYNC_SECONDS)
    if run is None:
        raise ValueError(f"{approach} is not simulated at scale")
    start = time.perf_counter()
    row = experiments.simulate(run, experiments.MACHINES["bluegene-p"], cache, driver, timeout=4 * 3600)
    return row["median_ms"], time.perf_counter() - start


def save(rows: list[dict[str, Any]], output: str | None) -> None:
    """The rows as the JSON of ``-o`` (after every line, so a stopped run keeps what it did)."""
    if output:
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        Path(output).write_text(json.dumps({"grids": GRIDS, "shape": SHAPE, "rows": rows}, indent=1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cores", type=int, nargs="+", default=[1024])
    parser.add_argument("--approaches", nargs="+", default=list(POINTS), choices=list(POINTS))
    parser.add_argument("--direct", nargs="*", default=[], metavar="APPROACH@CORES", help="also simulate 2,816 grids")
    parser.add_argument(
        "--points",
        nargs="*",
        default=[],
        metavar="APPROACH=G1,G2,G3",
        help="other grid counts for an approach (three, of the same form as POINTS)",
    )
    parser.add_argument("--cache", default=str(cache_dir() / "simulate"))
    parser.add_argument("--driver", default=str(smpi.DRIVER_IN_CHECKOUT))
    parser.add_argument("-o", "--output", help="JSON file of the rows")
    parser.add_argument("--plot", metavar="PNG", help="plot the rows of --output (time and utilisation)")
    args = parser.parse_args(argv)
    cache, driver = Path(args.cache), Path(args.driver)
    points_of = dict(POINTS)
    for text in args.points:
        approach, _, counts = text.partition("=")
        points_of[approach] = tuple(int(c) for c in counts.split(","))
        if approach not in POINTS or len(points_of[approach]) != 3:
            parser.error(f"--points {text}: need a known approach and three grid counts")
    core_speed = experiments.MACHINES["bluegene-p"].core_speed
    rows: list[dict[str, Any]] = []
    if args.output and Path(args.output).exists():
        rows = json.loads(Path(args.output).read_text())["rows"]
    done = {(r["approach"], r["cores"]) for r in rows}
    for cores in args.cores:
        # The stencil's compute per core for 2,816 grids, at the BG/P core rate: the
        # utilisation's numerator (the paper's "CPU utilization").
        compute_ms = 1e3 * GRIDS * SHAPE**3 * FLOPS_PER_POINT / cores / core_speed
        for approach in args.approaches:
            key = f"{approach}@{cores}"
            if (approach, cores) in done:
                # A saved line: only a direct simulation asked for now is added to it.
                row = next(r for r in rows if (r["approach"], r["cores"]) == (approach, cores))
                if key in args.direct and "direct_ms" not in row:
                    row["direct_ms"], wall = simulate(approach, cores, GRIDS, cache, driver)
                    print(f"{key} 2816 grids directly: {row['direct_ms']:.3f} ms ({wall:.0f} s wall)", flush=True)
                    save(rows, args.output)
                continue
            points = []
            for grids in points_of[approach]:
                ms, wall = simulate(approach, cores, grids, cache, driver)
                points.append((grids, ms))
                print(f"{approach} {cores} cores {grids} grids: {ms:.3f} ms ({wall:.0f} s wall)", flush=True)
            (g1, t1), (g2, t2), (g3, t3) = points
            per_grid = (t3 - t2) / (g3 - g2)
            predicted_first = t2 - per_grid * (g2 - g1)
            extrapolated = t3 + per_grid * (GRIDS - g3)
            row = {
                "approach": approach,
                "cores": cores,
                "points": points,
                "ms_per_grid": per_grid,
                "check_relative": (predicted_first - t1) / t1,
                "extrapolated_ms": extrapolated,
                "compute_ms": compute_ms,
                "utilisation": compute_ms / extrapolated,
            }
            if key in args.direct:
                row["direct_ms"], wall = simulate(approach, cores, GRIDS, cache, driver)
                print(f"{key} 2816 grids directly: {row['direct_ms']:.3f} ms ({wall:.0f} s wall)", flush=True)
            rows.append(row)
            print(json.dumps(row), flush=True)
            save(rows, args.output)
    if args.plot:
        plot(rows, Path(args.plot))
    return 0


#: The papers' values at 16,384 cores (GPAW journal Sect. 7.2, 8): CPU utilisation.
PAPER_UTILISATION = {"flat-original": 0.36, "hybrid-multiple": 0.70}


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Fig. 7.4 as simulated: ms per apply and CPU utilisation against cores, the papers'
    16,384-core utilisations beside them (the seeds give no other values of the figure)."""
    from hybridfd.experiments._plot import figure, save

    def ms_of(row: dict[str, Any]) -> float:
        # A direct simulation of all 2,816 grids, where there is one, over the line.
        return row.get("direct_ms", row["extrapolated_ms"])

    fig, (left, right) = figure(panels=2, width=4.5)
    cores = sorted({r["cores"] for r in rows})
    for approach in POINTS:
        mine = sorted((r for r in rows if r["approach"] == approach), key=lambda r: r["cores"])
        if not mine:
            continue
        line = left.plot([r["cores"] for r in mine], [ms_of(r) for r in mine], marker="o", label=approach)
        right.plot(
            [r["cores"] for r in mine],
            [100 * r["compute_ms"] / ms_of(r) for r in mine],
            marker="o",
            color=line[0].get_color(),
        )
        if approach in PAPER_UTILISATION:
            right.plot(
                [16384],
                [100 * PAPER_UTILISATION[approach]],
                marker="*",
                markersize=12,
                linestyle="none",
                color=line[0].get_color(),
                label=f"paper: {approach}",
            )
    compute = sorted({(r["cores"], r["compute_ms"]) for r in rows})
    left.plot([c for c, _ in compute], [ms for _, ms in compute], color="grey", linestyle=":", label="compute alone")
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xticks(cores)
        ax.set_xticklabels([str(c) for c in cores], fontsize=7)
        ax.set_xlabel("cores")
    left.set_yscale("log")
    left.set_ylabel("simulated ms per apply")
    left.legend(fontsize=7)
    right.set_ylabel("CPU utilisation, % (compute alone / time)")
    right.set_ylim(0, 105)
    right.legend(fontsize=7)
    fig.suptitle(
        f"Fig. 7.4 simulated on Blue Gene/P: {GRIDS} grids of {SHAPE}^3 (extrapolated, or direct where simulated)",
        fontsize=9,
    )
    save(fig, path)


if __name__ == "__main__":
    sys.exit(main())
