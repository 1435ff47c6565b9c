"""The stencil experiments (speedup, gustafson, scalability: GPAW journal Sect. 7, Figs
7.2-7.4) on a simulated platform: each variant becomes one ``hybridfd-bench`` run under
SMPI with modelled compute (``hybridfd bench <experiment> --simulate bluegene-p``).

Threads at scale (SMPI runs no threads that call MPI; docs/simulation.md):

- a flat approach runs one rank per core, 4 to a node (virtual mode), rank r on slot r
  ("packed") unless the job's ``placement`` (``--placement``, one of
  hybridfd.simulate.placement.PLACEMENTS) puts its Cartesian process grid elsewhere,
  e.g. ``bluegene-p``, where Blue Gene/P's MPI_Cart_create puts it (GPAW journal Sect.
  3.1: every run used MPI_Cart_create);
- hybrid-multiple runs as the journal's own equivalence experiment (Sect. 7.2): one flat
  rank per core in ``cores_per_node`` groups, rank r in group r % cores_per_node, so each
  group has one rank per node and cuts the domain into node-sized boxes; each group owns
  its share of the grids; one team join per apply (``--sync-per-apply``);
- hybrid-master-only runs one rank per node with the node's compute rate (each grid
  region split evenly over the node's cores, ``--node-cores``) plus the thread team's
  synchronisation per batch step measured on this machine (``--sync-per-batch``);
- other threaded models are not modelled at scale and are left out (with a note).

Every run is cached as JSON under a key of everything that determines its simulated time
(ranks, driver arguments, platform file, hostfile), so a point is simulated once.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hybridfd import traits
from hybridfd.mapping.topology import Topology
from hybridfd.simulate import platform as platforms
from hybridfd.simulate import smpi
from hybridfd.simulate.placement import PLACEMENTS, rank_slots

#: Simulated platforms: name -> costs (the topology comes from Topology.preset(name, ranks)).
MACHINES = {"bluegene-p": platforms.BLUEGENE_P}

#: Seconds one thread-team synchronisation (fork and join of hybridfd's ThreadTeam) costs,
#: measured on this machine by hybridfd.perfmodel.calibrate.sync_seconds (2 threads, 64
#: batches of one 4^3 grid; median of 15 runs 3.4 us, range 2.6-5.1 us and one 60 us outlier,
#: at a load of 7.8; ``python -m hybridfd.perfmodel.calibrate`` prints it as "team
#: synchronisation"). Charged per batch step to hybrid-master-only and once per apply to
#: hybrid-multiple.
TEAM_SYNC_SECONDS = 3.4e-6

#: Above this many simulated ranks a point needs ``--large`` (SMPI wall time and memory
#: grow with ranks and with the problem's bytes: docs/simulation.md).
LARGE_RANKS = 4096


@dataclasses.dataclass(frozen=True)
class SimulatedRun:
    """One hybridfd-bench run under SMPI: its ranks, placement and arguments."""

    label: str
    approach: str
    ranks: int
    threads: int
    topology: Topology
    arguments: tuple[str, ...]
    #: where the ranks sit (hybridfd.simulate.placement): a flat run's ``placement``; a
    #: threaded approach's ranks are placed by its model ("packed": hybrid-multiple's 4
    #: group ranks per node, hybrid-master-only's one rank per node)
    placement: str = "packed"
    #: the process grid the placement was computed for (None: packed, any grid); the
    #: driver's own grid is checked against it (:func:`simulate`)
    process_grid: tuple[int, ...] | None = None


def model_at_scale(approach_model: str, cores: int, cores_per_node: int) -> tuple[int, list[str]] | None:
    """(ranks, extra driver arguments) that model an approach of ``approach_model`` on
    ``cores`` cores, as the model's registry line says it runs at scale (its ``at_scale``
    trait, hybridfd.traits), or None if it is not simulated at scale."""
    at_scale = traits.model_traits()[approach_model]["at_scale"]
    if at_scale == "rank-per-core":
        return cores, []
    if at_scale == "none" or cores % cores_per_node:
        return None  # a threaded approach needs whole nodes
    if at_scale == "grid-groups":
        return cores, ["--model", "flat", "--grid-groups", str(cores_per_node)]
    if at_scale == "node-cores":
        return cores // cores_per_node, ["--model", "flat", "--node-cores", str(cores_per_node)]
    raise ValueError(f"model {approach_model!r} runs at scale as {at_scale!r}, which the simulation does not know")


def plan(
    variant: dict[str, Any],
    model: str,
    cores: int,
    job: dict[str, Any],
    team_sync: float,
    batch_sync: float = 0.0,
    schedule: str | None = None,
    placement: str = "packed",
) -> SimulatedRun | None:
    """The simulated run of one experiment variant on ``cores`` cores of the platform.

    ``batch_sync``: seconds hybrid-multiple's ranks are charged per batch step on top of
    the team join per apply (``--sync-per-batch``), a cost the default model does not have:
    the sensitivity study of benchmarks/simulated_sensitivity.py raises it to see what
    unmodelled cost per batch (THREAD_MULTIPLE locking, say) the paper's numbers need.
    0 (the default) leaves the run, and its cache key, as before. ``schedule`` replaces
    the approach's own (``--schedule``; None, the default, keeps it and the cache key):
    the same study runs the double-buffered approaches with ``all-dims``, which hides no
    exchange behind computation. ``placement`` puts a flat approach's ranks where that
    placement of hybridfd.simulate.placement puts the driver's process grid (its
    ``automatic_grid``); "packed" (the default) leaves the run and its cache key as before,
    as does any placement on one node (every rank on it) and for a threaded approach
    (its ranks are placed by its model). Raises ValueError for an unknown placement."""
    if placement not in PLACEMENTS:
        raise ValueError(f"unknown placement {placement!r}; known: {', '.join(PLACEMENTS)}")
    topology = Topology.preset(job["simulate"]["platform"], cores)
    per_node = topology.cores_per_node
    placed = model_at_scale(model, cores, per_node)
    if placed is None:
        return None
    ranks, extra = placed
    options = variant["options"]
    arguments = ["--grids", str(job["grids"]), "--shape", str(job["shape"]), "--dtype", job["dtype"]]
    arguments += ["--radius", str(job.get("radius", 2)), "--approach", options["approach"]]
    for key in ("batch", "slope"):
        if key in options:
            arguments += [f"--{key}", str(options[key])]
    if schedule is not None:
        arguments += ["--schedule", schedule]
    arguments += ["--repeats", "1", "--check", "off", "--compute", "modelled", *extra]
    at_scale = traits.model_traits()[model]["at_scale"]
    if at_scale == "grid-groups":
        arguments += ["--sync-per-apply", repr(team_sync)]
        if batch_sync:
            arguments += ["--sync-per-batch", repr(batch_sync)]
    elif at_scale == "node-cores":
        arguments += ["--sync-per-batch", repr(team_sync)]
        topology = dataclasses.replace(topology, rank_slots=tuple(range(0, cores, per_node)))
    threads = 1 if model == "flat" else per_node
    grid = None
    if model == "flat" and placement != "packed" and topology.nodes > 1:
        from hybridfd.decomposition import automatic_grid

        grid = automatic_grid((int(job["shape"]),) * 3, ranks)
        topology = dataclasses.replace(topology, rank_slots=rank_slots(placement, grid, topology))
    return SimulatedRun(
        variant["label"],
        options["approach"],
        ranks,
        threads,
        topology,
        tuple(arguments),
        placement if model == "flat" else "packed",
        grid,
    )


def driver_digest(driver: Path) -> str:
    """The SMPI driver's content hash: a rebuilt driver may charge differently."""
    return hashlib.sha256(Path(driver).read_bytes()).hexdigest()


def cache_key(run: SimulatedRun, machine: platforms.Machine, driver: str = "") -> str:
    """Everything that determines the simulated time: ranks, arguments (the run's and the
    machine's), platform, hostfile, SMPI settings and the driver (its :func:`driver_digest`)."""
    text = json.dumps(
        {
            "driver": driver,
            "ranks": run.ranks,
            "arguments": list(run.arguments) + machine.driver_arguments(),
            "platform": platforms.platform_xml(run.topology, machine),
            "hostfile": platforms.hostfile(run.topology, run.ranks),
            "smpi": list(smpi.SETTINGS) + machine.smpirun_options(),
        },
        sort_keys=True,
    )
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def simulate(run: SimulatedRun, machine: platforms.Machine, cache: Path, driver: Path, timeout: float) -> dict:
    """The driver's result row of ``run``, from ``cache`` if it was simulated before."""
    path = cache / f"{cache_key(run, machine, driver_digest(driver))}.json"
    if path.exists():
        return checked_grid(run, json.loads(path.read_text()))
    with tempfile.TemporaryDirectory(prefix="hybridfd-smpi-") as directory:
        record = smpi.run(run.ranks, run.topology, machine, run.arguments, directory, driver, timeout=timeout)
    row = checked_grid(run, record["rows"][0])  # a run placed for another grid is not cached
    cache.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(row))
    return row


def checked_grid(run: SimulatedRun, row: dict[str, Any]) -> dict[str, Any]:
    """``row``, if the driver cut the process grid ``run``'s placement was computed for;
    else RuntimeError (the ranks would sit where the placement puts another grid)."""
    if run.process_grid is not None and list(row["process_grid"]) != list(run.process_grid):
        raise RuntimeError(
            f"{run.label}: the driver cut the process grid {row['process_grid']}, placement {run.placement} "
            f"was computed for {list(run.process_grid)}"
        )
    return row


def run_all(cores: int, job: dict[str, Any], timeout: float, model_of: Callable[[str], str]) -> list[dict[str, Any]]:
    """Every variant of ``job`` simulated on ``cores`` cores: dicts as
    hybridfd.experiments._stencil.run_all returns (times simulated, results not checked).
    ``model_of`` names the threading model of an approach's preset (the stencil
    experiments' own, which call this)."""
    settings = job["simulate"]
    measured = []
    for variant in job["variants"]:
        run = planned(variant, model_of(variant["options"]["approach"]), cores, job)
        if run is None:
            continue
        check_large(run, cores, settings)
        row = simulate(run, MACHINES[settings["platform"]], Path(settings["cache"]), Path(settings["driver"]), timeout)
        measured.append(measured_row(run, cores, row, row["median_ms"]))
    return measured


def planned(variant: dict[str, Any], model: str, cores: int, job: dict[str, Any]) -> SimulatedRun | None:
    """:func:`plan` with the job's simulation settings (team cost, ``placement``); a
    placement that cannot place the run is the caller's input error."""
    from hybridfd.experiments import ExperimentInputError

    settings = job["simulate"]
    try:
        return plan(variant, model, cores, job, settings["team_sync"], placement=settings.get("placement", "packed"))
    except ValueError as error:
        raise ExperimentInputError(f"{variant['label']} on {cores} cores: {error}") from None


def check_large(run: SimulatedRun, cores: int, settings: dict[str, Any]) -> None:
    """Refuses a run of more than LARGE_RANKS ranks unless the job allows it (``--large``)."""
    from hybridfd.experiments import ExperimentInputError

    if run.ranks > LARGE_RANKS and not settings["large"]:
        raise ExperimentInputError(
            f"{run.label} on {cores} cores simulates {run.ranks} ranks, more than {LARGE_RANKS}: "
            "pass --large (SMPI wall time and memory: docs/simulation.md)"
        )


def measured_row(run: SimulatedRun, cores: int, row: dict[str, Any], ms: float) -> dict[str, Any]:
    """The dict _stencil.run_all gives for a variant, from the driver's result ``row`` of
    ``run`` and the simulated ``ms`` per apply."""
    config = dict(row["config"], approach=run.approach, threads=run.threads, placement=run.placement)
    return {
        "label": run.label,
        "median_seconds": ms / 1e3,
        "samples_seconds": [ms / 1e3] if ms != row["median_ms"] else [s / 1e3 for s in row["samples_ms"]],
        "bit_identical_to_flat_original": None,
        "config": config,
        # In the papers' terms: a threaded approach has one rank of 4 threads per node.
        "ranks": run.ranks if run.threads == 1 else cores // run.threads,
        "threads": run.threads,
        "process_grid": row["process_grid"],
    }


def add_arguments(parser: Any) -> None:  # noqa: ANN401 - argparse
    from hybridfd.perfmodel.store import cache_dir

    parser.add_argument(
        "--simulate",
        choices=sorted(MACHINES),
        help="simulate the runs on this platform by SimGrid SMPI (needs `make smpi`; docs/simulation.md)",
    )
    parser.add_argument(
        "--simulate-cache",
        default=str(cache_dir() / "simulate"),
        metavar="DIR",
        help="JSON cache of simulated runs (default ~/.cache/hybridfd/simulate)",
    )
    parser.add_argument(
        "--simulate-driver", default=str(smpi.DRIVER_IN_CHECKOUT), metavar="PATH", help="the SMPI hybridfd-bench"
    )
    parser.add_argument("--team-sync", type=float, default=TEAM_SYNC_SECONDS, help="seconds per team synchronisation")
    parser.add_argument(
        "--placement",
        choices=PLACEMENTS,
        default="packed",
        help="simulated: where the flat approaches' ranks sit (hybridfd.simulate.placement; bluegene-p: where "
        "Blue Gene/P's MPI_Cart_create puts them); default packed, rank r on slot r",
    )
    parser.add_argument("--large", action="store_true", help=f"allow simulated runs above {LARGE_RANKS} ranks")


def notes(args: Any) -> list[str]:  # noqa: ANN401 - argparse namespace
    """What a simulated experiment's table must say about its numbers."""
    if not getattr(args, "simulate", None):
        return []
    placement = getattr(args, "placement", "packed")
    return [
        f"SIMULATED by SimGrid SMPI on {args.simulate} (docs/simulation.md): hybridfd-bench with modelled compute, "
        "results not checked (== flat-original empty)",
        f"flat approaches: one rank per core, placed {placement} (hybridfd.simulate.placement"
        + ("; rank r on slot r, 4 to a node)" if placement == "packed" else ")"),
        f"hybrid-multiple: flat ranks in 4 grid groups per node (GPAW Sect. 7.2), {args.team_sync * 1e6:.1f} us per "
        "apply; hybrid-master-only: one rank per node at the node's rate, "
        f"{args.team_sync * 1e6:.1f} us per batch step; other threaded models not simulated",
    ]


def timing(args: Any) -> str:  # noqa: ANN401 - argparse namespace
    """How an experiment's times were taken, for its title: a simulated run is one
    deterministic apply, a measured one the median of the repeats."""
    if getattr(args, "simulate", None):
        placement = getattr(args, "placement", "packed")
        where = f", flat ranks placed {placement}" if placement != "packed" else ""
        return f"one simulated apply each ({args.simulate}{where})"
    return f"medians of {args.repeats}"


def job_settings(args: Any) -> dict[str, Any]:  # noqa: ANN401 - argparse namespace
    """The ``simulate`` entry of an experiment's job ({} when not simulating). Raises
    ExperimentInputError for ``--placement`` without ``--simulate`` (a measured run's
    ranks sit where the launcher puts them)."""
    from hybridfd.experiments import ExperimentInputError

    placement = getattr(args, "placement", "packed")
    if not getattr(args, "simulate", None):
        if placement != "packed":
            raise ExperimentInputError(f"--placement {placement}: places simulated ranks (needs --simulate)")
        return {}
    settings = {
        "platform": args.simulate,
        "cache": args.simulate_cache,
        "driver": args.simulate_driver,
        "team_sync": args.team_sync,
        "large": args.large,
        "placement": placement,
    }
    return {"simulate": settings}
