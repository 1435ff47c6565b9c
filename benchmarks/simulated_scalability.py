"""Fig. 7.4 (2,816 grids of 192^3 on 1,024-16,384 Blue Gene/P cores) simulated with fewer
grids per apply, the time per apply of 2,816 grids extrapolated (docs/simulation.md,
"Fig. 7.4 simulated").

Why this is possible: SMPI's wall time grows with the messages per apply (ranks x batch
steps x 6), and 2,816 grids are 17 million messages for flat-original at 1,024 cores,
hours here. But once the pipeline is steady each further batch step adds the same time,
so T(G) = a + b G (hybridfd.simulate.lines says why, and fits the lines; `hybridfd bench
gustafson --simulate bluegene-p --line-from C` uses the same lines for Fig. 7.3). That is
an assumption about the simulated schedule (ranks could drift apart batch after batch),
so it is checked, not assumed: each approach is simulated at three grid counts, the line
through the two largest predicts the smallest (``check`` column), and with ``--direct``
more grids (2,816, or any count of the same form: ``APPROACH@CORES:GRIDS``) are simulated
where that is affordable and set beside the extrapolation.

    nice -n 10 .venv/bin/python benchmarks/simulated_scalability.py --cores 1024 16384 \
        -o benchmarks/results/simulated_scalability_bluegene_p.json \
        --plot docs/img/simulated_scalability_bluegene_p.png

The flat approaches' ranks sit packed unless ``--placement`` says otherwise; the figure
(``--plot``) draws them where Blue Gene/P's MPI_Cart_create puts them (``--placement
bluegene-p``, simulated for the flat approaches at every core count), packed dashed beside.

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
from hybridfd.simulate import experiments, lines, smpi
from hybridfd.simulate.lines import POINTS
from hybridfd.simulate.placement import PLACEMENTS

GRIDS, SHAPE = 2816, 192
FLOPS_PER_POINT = 19  # cpp/tools/simulation.hpp: 13-point stencil, float64


def plan(
    approach: str,
    cores: int,
    grids: int,
    batch_sync: float = 0.0,
    placement: str = "packed",
    schedule: str | None = None,
) -> experiments.SimulatedRun:
    """The run of ``grids`` grids of 192^3 on ``cores`` cores: the plan `hybridfd bench
    gustafson|scalability --simulate bluegene-p` makes (so the two share cached points);
    a flat approach's ranks placed by ``placement`` (hybridfd.simulate.placement)."""
    job = {"grids": grids, "shape": SHAPE, "dtype": "float64", "radius": 2, "simulate": {"platform": "bluegene-p"}}
    if placement != "packed" and model_of(approach) != "flat":
        raise ValueError(f"placement {placement} is for the flat approaches (one rank per core), not {approach}")
    run = experiments.plan(
        variant(approach),
        model_of(approach),
        cores,
        job,
        experiments.TEAM_SYNC_SECONDS,
        batch_sync=batch_sync,
        schedule=schedule,
        placement=placement,
    )
    if run is None:
        raise ValueError(f"{approach} is not simulated at scale")
    return run


def simulate(
    approach: str,
    cores: int,
    grids: int,
    cache: Path,
    driver: Path,
    machine: experiments.platforms.Machine = experiments.MACHINES["bluegene-p"],
    batch_sync: float = 0.0,
    placement: str = "packed",
    schedule: str | None = None,
) -> tuple[float, float]:
    """(simulated ms per apply, wall seconds) of ``grids`` grids of 192^3 on ``cores`` cores."""
    start = time.perf_counter()
    run = plan(approach, cores, grids, batch_sync, placement, schedule)
    row = experiments.simulate(run, machine, cache, driver, timeout=4 * 3600)  # checks the placement's grid
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
    parser.add_argument(
        "--direct",
        nargs="*",
        default=[],
        metavar="APPROACH@CORES[:GRIDS]",
        help="also simulate 2,816 grids (or GRIDS, e.g. one per core: Fig. 7.3's point) and set it beside the line",
    )
    parser.add_argument(
        "--points",
        nargs="*",
        default=[],
        metavar="APPROACH=G1,G2,G3",
        help="other grid counts for an approach (three, of the same form as POINTS)",
    )
    parser.add_argument(
        "--placement",
        default="packed",
        choices=PLACEMENTS,
        help="where the flat approaches' ranks sit (hybridfd.simulate.placement; rows keep it); default packed",
    )
    parser.add_argument("--cache", default=str(cache_dir() / "simulate"))
    parser.add_argument("--driver", default=str(smpi.DRIVER_IN_CHECKOUT))
    parser.add_argument("-o", "--output", help="JSON file of the rows")
    parser.add_argument("--plot", metavar="PNG", help="plot the rows of --output (time and utilisation)")
    parser.add_argument(
        "--plot-placement",
        default="bluegene-p",
        choices=PLACEMENTS,
        help="the flat approaches' placement the plot draws (packed's rows dashed beside it); default bluegene-p",
    )
    args = parser.parse_args(argv)
    cache, driver = Path(args.cache), Path(args.driver)
    points_of: dict[str, tuple[int, ...]] = {}
    for text in args.points:
        approach, _, counts = text.partition("=")
        points_of[approach] = tuple(int(c) for c in counts.split(","))
        if approach not in POINTS or len(points_of[approach]) != 3:
            parser.error(f"--points {text}: need a known approach and three grid counts")
    directs: dict[tuple[str, int], list[int]] = {}
    for text in args.direct:
        approach, _, where = text.partition("@")
        cores_text, _, grids_text = where.partition(":")
        directs.setdefault((approach, int(cores_text)), []).append(int(grids_text or GRIDS))
    core_speed = experiments.MACHINES["bluegene-p"].core_speed
    rows: list[dict[str, Any]] = []
    if args.output and Path(args.output).exists():
        rows = json.loads(Path(args.output).read_text())["rows"]

    def key(row: dict[str, Any]) -> tuple[str, int, str]:
        return row["approach"], row["cores"], row.get("placement", "packed")

    done = {key(r) for r in rows}
    for cores in args.cores:
        # The stencil's compute per core for 2,816 grids, at the BG/P core rate: the
        # utilisation's numerator (the paper's "CPU utilization").
        compute_ms = 1e3 * GRIDS * SHAPE**3 * FLOPS_PER_POINT / cores / core_speed
        for approach in args.approaches:
            if (approach, cores, args.placement) not in done:
                counts = points_of.get(approach, lines.grid_counts(approach, cores))
                points = []
                for grids in counts:
                    ms, wall = simulate(approach, cores, grids, cache, driver, placement=args.placement)
                    points.append((grids, ms))
                    print(f"{approach} {cores} cores {grids} grids: {ms:.3f} ms ({wall:.0f} s wall)", flush=True)
                line = lines.fit(points)
                extrapolated = line.at(GRIDS)
                row = {"approach": approach, "cores": cores, **line.as_dict()}
                if args.placement != "packed":
                    row["placement"] = args.placement
                row.update(extrapolated_ms=extrapolated, compute_ms=compute_ms, utilisation=compute_ms / extrapolated)
                rows.append(row)
                print(json.dumps(row), flush=True)
            # A saved line keeps its points: only the direct simulations asked for now are added.
            row = next(r for r in rows if key(r) == (approach, cores, args.placement))
            for grids in directs.get((approach, cores), []):
                if "direct_ms" in row if grids == GRIDS else str(grids) in row.get("direct_ms_at", {}):
                    continue
                ms, wall = simulate(approach, cores, grids, cache, driver, placement=args.placement)
                if grids == GRIDS:
                    row["direct_ms"] = ms  # Fig. 7.4's own point
                else:  # another grid count (Fig. 7.3: one per core): a check of the line
                    row.setdefault("direct_ms_at", {})[str(grids)] = ms
                print(f"{approach}@{cores} {grids} grids directly: {ms:.3f} ms ({wall:.0f} s wall)", flush=True)
            save(rows, args.output)
    if args.plot:
        plot(rows, Path(args.plot), args.plot_placement)
    return 0


#: The papers' values at 16,384 cores (GPAW journal Sect. 7.2, 8): CPU utilisation.
PAPER_UTILISATION = {"flat-original": 0.36, "hybrid-multiple": 0.70}


def plot(rows: list[dict[str, Any]], path: Path, placement: str = "bluegene-p") -> None:
    """Fig. 7.4 as simulated: ms per apply and CPU utilisation against cores, the papers'
    16,384-core utilisations beside them (the journal gives no other values of the figure).
    The flat approaches' ranks sit where ``placement`` puts them (by default Blue Gene/P's
    MPI_Cart_create, which every run of the journal used: GPAW journal Sect. 3.1), their
    packed rows dashed beside them; the hybrid approaches' ranks have one placement."""
    from hybridfd.experiments._plot import figure, save

    def ms_of(row: dict[str, Any]) -> float:
        # A direct simulation of all 2,816 grids, where there is one, over the line.
        return row.get("direct_ms", row["extrapolated_ms"])

    fig, (left, right) = figure(panels=2, width=4.5)
    cores = sorted({r["cores"] for r in rows})
    for approach in POINTS:
        flat = model_of(approach) == "flat"

        def placed(name: str, approach: str = approach) -> list[dict[str, Any]]:
            found = (r for r in rows if r["approach"] == approach and r.get("placement", "packed") == name)
            return sorted(found, key=lambda r: r["cores"])

        mine = placed(placement if flat else "packed")
        if not mine:
            continue
        label = f"{approach} ({placement})" if flat and placement != "packed" else approach
        line = left.plot([r["cores"] for r in mine], [ms_of(r) for r in mine], marker="o", label=label)
        right.plot(
            [r["cores"] for r in mine],
            [100 * r["compute_ms"] / ms_of(r) for r in mine],
            marker="o",
            color=line[0].get_color(),
        )
        packed = placed("packed") if flat and placement != "packed" else []
        if packed:
            style = {"marker": ".", "linestyle": "--", "linewidth": 0.8, "color": line[0].get_color()}
            cores_of = [r["cores"] for r in packed]
            left.plot(cores_of, [ms_of(r) for r in packed], label=f"{approach} (packed)", **style)
            right.plot(cores_of, [100 * r["compute_ms"] / ms_of(r) for r in packed], **style)
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
    compute = sorted({(r["cores"], r["compute_ms"]) for r in rows if r.get("placement", "packed") == "packed"})
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
        f"Fig. 7.4 simulated on Blue Gene/P: {GRIDS} grids of {SHAPE}^3\nflat ranks "
        + ("where BG/P's MPI_Cart_create puts them" if placement == "bluegene-p" else placement)
        + " (extrapolated, or direct where simulated)",
        fontsize=9,
    )
    save(fig, path)


if __name__ == "__main__":
    sys.exit(main())
