"""Simulated time per apply as a line in the number of grids, T(G) = a + b G, fitted from
a few small grid counts: how Fig. 7.4 (2,816 grids) and Fig. 7.3 (one grid per core) are
simulated at core counts where simulating every grid takes hours here
(docs/simulation.md, section 6).

Why a line: every batch step of an apply is the same work on every rank (the same
boxes, faces and compute); the presets' batches are [4, 8, ..., 8, 4] (batch 8, geometric
slope 1) for every multiple of 8 grids per rank (of 32 for hybrid-multiple's 4 grid
groups), and flat-original is one identical serial-dims round per grid. The simulation is
deterministic, so once the pipeline is steady each further batch step adds the same time.
That ranks do not drift apart batch after batch is an assumption about the simulated
schedule, so every line is fitted through the two larger of three grid counts and
``check_relative`` says how far it misses the smallest; direct simulations at large G
check it further (docs/simulation.md lists them).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hybridfd.simulate import experiments
from hybridfd.simulate import platform as platforms

#: Fig. 7.4's job (GPAW journal Sect. 7.2): 2,816 grids of 192^3, float64, radius 2.
GRIDS, SHAPE = 2816, 192


def flops_per_point(radius: int = 2) -> int:
    """Flops the simulated stencil charges per lane (cpp/tools/simulation.hpp,
    ``flops_per_lane``): 1 + 9r at radius r, 19 for the papers' 13 points."""
    return 1 + 9 * radius


#: The stencil's flops per point of Fig. 7.4's job.
FLOPS_PER_POINT = flops_per_point(2)


def compute_ms(grids: int, shape: int, cores: int, machine: platforms.Machine, radius: int = 2) -> float:
    """Milliseconds the stencil's compute alone takes per apply of ``grids`` grids of
    ``shape``^3 over ``cores`` cores at ``machine``'s core rate: the numerator of the
    paper's "CPU utilization" (compute alone / time)."""
    return 1e3 * grids * shape**3 * flops_per_point(radius) / cores / machine.core_speed


#: The grid counts a line is fitted at, per approach (the presets' batches): multiples of
#: the preset's batch (8) times the grid groups (4 for hybrid-multiple), so the batches
#: have the same form as at 2,816 grids or at G = cores >= 1,024.
POINTS = {
    "flat-original": (4, 8, 12),
    "flat-optimized": (16, 24, 32),
    "hybrid-master-only": (16, 24, 32),
    "hybrid-multiple": (64, 96, 128),
}


def grid_counts(approach: str, cores: int) -> tuple[int, int, int]:
    """The three grid counts of ``approach``'s line on ``cores`` cores. flat-original's
    rounds are one grid each, so fewer grids do at many cores (SMPI's wall time grows
    with ranks x messages): 4, 8, 12 up to 2,048 cores, 2, 4, 6 at 4,096, 1, 2, 3 above."""
    if approach not in POINTS:
        raise ValueError(f"{approach}: no line (grid counts known for {', '.join(POINTS)})")
    if approach == "flat-original":
        unit = min(4, max(1, 8192 // cores))
        return (unit, 2 * unit, 3 * unit)
    return POINTS[approach]


@dataclasses.dataclass(frozen=True)
class Line:
    """T(G) = ``ms_at_last`` + ``ms_per_grid`` (G - ``points[-1][0]``), in ms per apply."""

    #: (grids, simulated ms per apply), three of them, grids increasing
    points: tuple[tuple[int, float], ...]
    ms_per_grid: float
    #: how far the line through the two larger points misses the smallest, relative
    check_relative: float

    def at(self, grids: int) -> float:
        """The line's ms per apply of ``grids`` grids (of the same batch form)."""
        last_grids, last_ms = self.points[-1]
        return last_ms + self.ms_per_grid * (grids - last_grids)

    def valid_at(self, grids: int) -> bool:
        """``grids`` has the batch form of the fitted points: a multiple of their common
        divisor, and no fewer than the smallest."""
        counts = [g for g, _ in self.points]
        return grids >= counts[0] and grids % math.gcd(*counts) == 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "points": [list(p) for p in self.points],
            "ms_per_grid": self.ms_per_grid,
            "check_relative": self.check_relative,
        }


def fit(points: list[tuple[int, float]] | tuple[tuple[int, float], ...]) -> Line:
    """The line through the two larger of three (grids, ms) points, checked on the smallest."""
    (g1, t1), (g2, t2), (g3, t3) = sorted(points)
    per_grid = (t3 - t2) / (g3 - g2)
    predicted_first = t2 - per_grid * (g2 - g1)
    return Line(((g1, t1), (g2, t2), (g3, t3)), per_grid, (predicted_first - t1) / t1)


def simulate_line(
    run_of: Callable[[int], experiments.SimulatedRun],
    counts: tuple[int, int, int],
    machine: platforms.Machine,
    cache: Path,
    driver: Path,
    timeout: float,
) -> tuple[Line, dict[str, Any]]:
    """The line of the runs ``run_of(G)`` at the grid counts ``counts`` (each simulated
    once, through hybridfd.simulate.experiments' cache), and the driver's result row of
    the largest."""
    points = []
    row: dict[str, Any] = {}
    for grids in counts:
        run = run_of(grids)
        row = experiments.simulate(run, machine, cache, driver, timeout)
        points.append((grids, row["median_ms"]))
    return fit(points), row


def line_all(cores: int, job: dict[str, Any], timeout: float) -> list[dict[str, Any]]:
    """Every variant of ``job`` on ``cores`` cores from its line, evaluated at
    ``job["grids"]``: dicts as :func:`hybridfd.simulate.experiments.run_all` gives, each
    with the ``line`` it came from (``Line.as_dict``)."""
    from hybridfd.experiments import ExperimentInputError
    from hybridfd.experiments._stencil import model_of

    settings = job["simulate"]
    machine = experiments.MACHINES[settings["platform"]]
    grids = job["grids"]
    measured = []
    for variant in job["variants"]:
        approach = variant["options"]["approach"]
        model = model_of(approach)

        if experiments.planned(variant, model, cores, job) is None:
            continue  # not simulated at scale (experiments.model_at_scale)

        def run_of(g: int, variant: dict[str, Any] = variant, model: str = model) -> experiments.SimulatedRun:
            run = experiments.planned(variant, model, cores, dict(job, grids=g))
            assert run is not None  # modelled for job["grids"]: the model at scale does not depend on the grids
            return run

        if set(variant["options"]) != {"approach"} or approach not in POINTS:
            raise ExperimentInputError(
                f"{variant['label']}: lines are fitted for the presets of {', '.join(POINTS)} (no --batches)"
            )
        counts = grid_counts(approach, cores)
        experiments.check_large(run_of(counts[0]), cores, settings)
        line, row = simulate_line(run_of, counts, machine, Path(settings["cache"]), Path(settings["driver"]), timeout)
        if not line.valid_at(grids):
            raise ExperimentInputError(
                f"{variant['label']} on {cores} cores: {grids} grids are not of the batch form of its line's "
                f"{', '.join(map(str, counts))} grids"
            )
        measured.append(dict(experiments.measured_row(run_of(grids), cores, row, line.at(grids)), line=line.as_dict()))
    return measured


def simulate_point(
    approach: str,
    cores: int,
    grids: int,
    cache: Path,
    driver: Path,
    machine: platforms.Machine = experiments.MACHINES["bluegene-p"],
    batch_sync: float = 0.0,
    placement: str = "packed",
    schedule: str | None = None,
) -> tuple[float, float]:
    """(simulated ms per apply, wall seconds) of ``grids`` grids of Fig. 7.4's 192^3 on
    ``cores`` Blue Gene/P cores, ``approach`` with its preset: the run `hybridfd bench
    scalability|gustafson --simulate bluegene-p` plans (so they share cached points), a
    flat approach's ranks placed by ``placement``; ``batch_sync`` and ``schedule`` as
    :func:`hybridfd.simulate.experiments.plan` takes them. ValueError for a placement of
    a threaded approach or an approach not simulated at scale."""
    from hybridfd.experiments._stencil import model_of, variant

    start = time.perf_counter()
    if placement != "packed" and model_of(approach) != "flat":
        raise ValueError(f"placement {placement} is for the flat approaches (one rank per core), not {approach}")
    job = {"grids": grids, "shape": SHAPE, "dtype": "float64", "radius": 2, "simulate": {"platform": "bluegene-p"}}
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
    row = experiments.simulate(run, machine, cache, driver, timeout=4 * 3600)  # checks the placement's grid
    return row["median_ms"], time.perf_counter() - start
