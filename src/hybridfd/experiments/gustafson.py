"""Gustafson graph: one grid per core (GPAW journal Sect. 7.2, Fig. 7.3).

The number of grids grows with the number of cores (G = cores), so the computation per
core stays constant while the communication per node grows: cutting each grid into more
boxes adds surface. Left: the measured time per apply of every approach (from the
operator's registry, ``--batches`` searches the best batch as the paper did) on the core
counts this machine has. Right: the communication volume per node, computed exactly from
the decomposition (the same automatic process grid and uneven splits the Operator uses),
so it is valid at any scale: the paper's 192^3 grids up to 16384 cores, nodes of 4 cores
(Blue Gene/P), one rank per core (flat, virtual mode) vs one rank per node (hybrid).

Volume per node = bytes of halo messages whose sender and receiver are on different
nodes, summed over the node's ranks, averaged over nodes, per apply of all G grids;
ranks are packed onto nodes in Cartesian rank order, or, simulated with a
``--placement``, one rank per core sits where that placement puts it (the nodes the
timed flat runs used). A periodic axis of one box exchanges with itself by a copy and
counts nothing.
"""

from __future__ import annotations

import argparse
import itertools
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hybridfd._argtypes import positive_int
from hybridfd.experiments import ExperimentInputError, Outcome, check_ranks
from hybridfd.experiments._stencil import (
    BASELINE,
    add_problem_arguments,
    add_threads_argument,
    core_counts,
    run_all,
)
from hybridfd.experiments._stencil import worker as worker
from hybridfd.experiments.scalability import best_per_approach, variants
from hybridfd.simulate.experiments import job_settings
from hybridfd.simulate.experiments import notes as simulation_notes
from hybridfd.simulate.experiments import timing as simulation_timing
from hybridfd.simulate.lines import line_all

NAME = "gustafson"
#: Core counts simulated by default (--simulate): they finish within minutes here
#: (docs/simulation.md; with 256 the default took about 30 minutes on a loaded machine);
#: larger ones with --cores, above 4,096 ranks with --large.
SIMULATED_CORES = [4, 16, 64]
SUMMARY = "one grid per core: time, and exact communication volume per node (GPAW Fig. 7.3)"

#: Core counts of the volume panel by default: the paper's range.
VOLUME_CORES = [4, 16, 64, 256, 1024, 4096, 16384]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cores",
        type=positive_int,
        nargs="+",
        help="core counts (default 1 2; simulated: 4 16 64)",
    )
    parser.add_argument(
        "--batches", type=positive_int, nargs="+", default=[], metavar="B", help="batch sizes to search per approach"
    )
    parser.add_argument(
        "--cores-per-node", type=positive_int, default=4, metavar="K", help="cores per node of the volume (default 4)"
    )
    parser.add_argument(
        "--volume-cores",
        type=positive_int,
        nargs="+",
        default=VOLUME_CORES,
        metavar="C",
        help="core counts of the exact volume (default 4 .. 16384)",
    )
    parser.add_argument("--radius", type=positive_int, default=2, help="stencil radius (default 2: 13 points)")
    parser.add_argument(
        "--merge",
        type=Path,
        metavar="JSON",
        help="a saved gustafson result of the same problem: keep its timed rows at the core counts this run "
        "does not time (to add a core count without re-running, e.g. re-simulating, the others)",
    )
    parser.add_argument(
        "--line-from",
        type=positive_int,
        metavar="C",
        help="simulated: at C cores and more, each approach's point is its line T(G) = a + b G through three small "
        "grid counts (hybridfd.simulate.lines, Fig. 7.4's lines) at G = cores, not a simulation of G grids "
        "(rows marked 'line'; rows of --merge at those core counts are kept beside them)",
    )
    add_threads_argument(parser)
    add_problem_arguments(parser, shape=192)


def internode_bytes_per_node(
    shape: tuple[int, int, int],
    ranks: int,
    ranks_per_node: int,
    radius: int,
    itemsize: int,
    slots: Sequence[int] | None = None,
) -> tuple[float, int, int]:
    """Halo bytes per grid crossing node boundaries: (mean per node, max per node, all ranks'
    messages to other ranks), for the automatic process grid of ``ranks`` boxes of a
    periodic ``shape``, ``ranks_per_node`` to a node: rank r on node r // ranks_per_node
    (packed, in Cartesian rank order), or, with ``slots`` (a placement's slot per rank,
    hybridfd.simulate.placement.rank_slots), on node slots[r] // ranks_per_node."""
    from hybridfd.decomposition import automatic_grid, split_axis

    grid = automatic_grid(shape, ranks)
    extents = [[split_axis(shape[a], grid[a], p)[1] for p in range(grid[a])] for a in range(3)]
    node = np.arange(ranks) if slots is None else np.asarray(slots, dtype=np.int64)
    node = node // ranks_per_node
    nodes = -(-ranks // ranks_per_node) if slots is None else int(node.max()) + 1
    per_node = np.zeros(nodes, dtype=np.int64)
    between_ranks = 0
    for coords in itertools.product(*(range(p) for p in grid)):
        rank = (coords[0] * grid[1] + coords[1]) * grid[2] + coords[2]  # MPI Cartesian order: z fastest
        box = [extents[a][coords[a]] for a in range(3)]
        for axis in range(3):
            if grid[axis] == 1:
                continue  # a periodic axis of one box: a local copy
            face = radius * int(np.prod([box[b] for b in range(3) if b != axis])) * itemsize
            for step in (-1, 1):
                neighbour = list(coords)
                neighbour[axis] = (coords[axis] + step) % grid[axis]
                other = (neighbour[0] * grid[1] + neighbour[1]) * grid[2] + neighbour[2]
                between_ranks += face
                if node[other] != node[rank]:
                    per_node[node[rank]] += face
    return float(per_node.mean()), int(per_node.max()), between_ranks


def flat_slots(args: argparse.Namespace, shape: tuple[int, int, int], cores: int) -> tuple[int, ...] | None:
    """Where a simulated run's ``--placement`` puts the flat ranks of ``cores`` cores
    (None: packed, rank r on slot r), so that the volume per node counts the nodes the
    timed runs used."""
    placement = getattr(args, "placement", "packed")
    if not getattr(args, "simulate", None) or placement == "packed":
        return None
    from hybridfd.decomposition import automatic_grid
    from hybridfd.mapping.topology import Topology
    from hybridfd.simulate.placement import rank_slots

    topology = Topology.preset(args.simulate, cores)
    return rank_slots(placement, automatic_grid(shape, cores), topology)


#: Parameters a merged result must share with this run: they decide what a timed row means.
SAME_PROBLEM = ("shape", "dtype", "radius", "batches", "simulate")
#: Parameters a saved result may lack, with the value such a result ran with.
ADDED_PARAMETERS = {"placement": "packed"}


def merged_rows(
    args: argparse.Namespace, cores: list[int], line_cores: list[int]
) -> tuple[list[dict[str, Any]], list[str]]:
    """The timed rows of the saved result ``args.merge`` at core counts not in ``cores``
    (simulated directly now) and, at ``line_cores``, its direct rows (which stand beside
    the new line rows), and the note that says where they come from (([], []) without
    ``--merge``). A row saved before rows were marked is a direct one."""
    from hybridfd import results

    if args.merge is None:
        return [], []
    try:
        saved = results.load(args.merge)
    except results.ResultError as error:
        raise ExperimentInputError(f"--merge: {error}") from None
    if (saved["command"], saved["name"]) != ("bench", NAME):
        raise ExperimentInputError(f"--merge {args.merge}: a {saved['command']} {saved['name']} result, not {NAME}")
    same = SAME_PROBLEM + (("team_sync", "placement") if args.simulate else ("threads",))
    theirs = {**ADDED_PARAMETERS, **saved["parameters"]}
    differ = [
        f"--{k.replace('_', '-')} {theirs.get(k)} there, {getattr(args, k)} here"
        for k in same
        if theirs.get(k) != getattr(args, k)
    ]
    if differ:
        raise ExperimentInputError(f"--merge {args.merge}: another problem ({'; '.join(differ)})")
    kept = [
        dict(r, source=r.get("source", "direct"))
        for r in saved["rows"]
        if r["kind"] == "measured"
        and r["cores"] not in cores
        and not (r["cores"] in line_cores and r.get("source") == "line")
    ]
    if not kept:
        return [], []
    counts = sorted({r["cores"] for r in kept})
    revision = saved["environment"].get("git_revision") or "unknown"
    note = (
        f"rows at {', '.join(map(str, counts))} cores from {args.merge} (created {saved['created']}, "
        f"git {revision[:12]}), not re-run"
    )
    return kept, [note]


def run(args: argparse.Namespace) -> Outcome:
    cores = core_counts(args, [1, 2], SIMULATED_CORES)
    volume_cores = check_ranks("--volume-cores", args.volume_cores)
    bad = [c for c in volume_cores if c % args.cores_per_node]
    if bad:
        raise ExperimentInputError(
            f"--volume-cores {' '.join(map(str, bad))}: not a multiple of --cores-per-node {args.cores_per_node}"
        )
    shape = (args.shape,) * 3
    itemsize = np.dtype(args.dtype).itemsize
    if args.line_from and not args.simulate:
        raise ExperimentInputError("--line-from: lines are of simulated runs (--simulate)")
    line_cores = [c for c in cores if args.line_from and c >= args.line_from]
    direct_cores = [c for c in cores if c not in line_cores]
    rows, merge_notes = merged_rows(args, direct_cores, line_cores)
    for c in cores:
        job = {"shape": args.shape, "dtype": args.dtype, "grids": c, "repeats": args.repeats, "radius": args.radius}
        job.update(job_settings(args))
        job["variants"] = variants(sorted(set(args.batches)))
        if c in line_cores:
            measured = line_all(c, job, args.timeout)
        else:
            measured = run_all(NAME, c, args.threads, job, args.timeout)
        for v in best_per_approach(measured):
            _, _, between = internode_bytes_per_node(shape, v["ranks"], v["ranks"], args.radius, itemsize)
            rows.append(
                {
                    "kind": "measured",
                    "cores": c,
                    "grids": c,
                    "ranks_x_threads": f"{v['ranks']} x {v['threads']}",
                    "process_grid": v["process_grid"],
                    "approach": v["config"]["approach"],
                    "batch": v["config"]["batch"],
                    "ms": 1e3 * v["median_seconds"],
                    "halo_mb_between_ranks": c * between / 1e6,
                    "flat_kb_per_node": None,
                    "hybrid_kb_per_node": None,
                    "bit_identical_to_flat_original": v["bit_identical_to_flat_original"],
                    "config": v["config"],
                    # direct: G = cores grids simulated (or measured); line: T(G) of v["line"] at G = cores
                    "source": "line" if "line" in v else "direct",
                    **({"line": v["line"]} if "line" in v else {}),
                }
            )
    # stable: merged and new core counts in order, approaches as timed, direct before line
    rows.sort(
        key=lambda r: (r["cores"], r["source"] == "line")
    )  # stable: merged and new core counts in order, approaches as timed
    k = args.cores_per_node
    for c in volume_cores:
        slots = flat_slots(args, shape, c)
        flat_mean, _, _ = internode_bytes_per_node(shape, c, k, args.radius, itemsize, slots)
        hybrid_mean, _, _ = internode_bytes_per_node(shape, c // k, 1, args.radius, itemsize)
        rows.append(
            {
                "kind": "exact",
                "cores": c,
                "grids": c,
                "ranks_x_threads": None,
                "process_grid": None,
                "approach": None,
                "batch": None,
                "ms": None,
                "halo_mb_between_ranks": None,
                "flat_kb_per_node": c * flat_mean / 1e3,
                "hybrid_kb_per_node": c * hybrid_mean / 1e3,
                "bit_identical_to_flat_original": None,
                "source": None,
            }
        )
    columns = [
        {"key": "kind", "title": "kind"},
        {"key": "cores", "title": "cores=grids"},
        {"key": "ranks_x_threads", "title": "ranks x thr."},
        {"key": "process_grid", "title": "grid"},
        {"key": "approach", "title": "approach"},
        {"key": "batch", "title": "b"},
        {"key": "ms", "title": "ms/apply", "format": ".2f"},
        {"key": "source", "title": "from"},
        {"key": "halo_mb_between_ranks", "title": "halo MB", "format": ".2f"},
        {"key": "flat_kb_per_node", "title": "KB/node rank/core", "format": ",.0f"},
        {"key": "hybrid_kb_per_node", "title": "KB/node rank/node", "format": ",.0f"},
        {"key": "bit_identical_to_flat_original", "title": "== flat-orig."},
    ]
    # The paper's example (Sect. 7.2): one 192^3 grid on 1024 nodes of 4 cores.
    paper_flat, _, _ = internode_bytes_per_node((192, 192, 192), 4096, 4, 2, 8)
    paper_hybrid, _, _ = internode_bytes_per_node((192, 192, 192), 1024, 1, 2, 8)
    notes = [
        f"measured: flat approaches one rank per core, threaded ones ranks of up to {args.threads} threads; "
        "halo MB = all halo messages between distinct ranks per apply (exact)",
        f"exact volume: {args.shape}^3 {args.dtype}, radius {args.radius}, G = cores grids, {k} cores per node, "
        f"mean over nodes per apply; one rank per core placed {getattr(args, 'placement', 'packed')}",
        f"the paper's example, one 192^3 float64 grid on 1024 nodes: one rank per core sends "
        f"{paper_flat / 1e3:.1f} KB per node, one rank per node {paper_hybrid / 1e3:.1f} KB: "
        f"{(paper_flat - paper_hybrid) / 1e3:.1f} KB more by this count (packed ranks); the paper says about "
        "140 KB more without stating how it counts",
    ]
    title = f"gustafson: one {args.shape}^3 {args.dtype} grid per core, {simulation_timing(args)}"
    if BASELINE not in {r["approach"] for r in rows if r["kind"] == "measured"}:
        raise ExperimentInputError(f"the approach registry has no {BASELINE}")
    if line_cores:
        notes.append(
            f"from {args.line_from} cores on, 'line' rows are T(G) = a + b G at G = cores, the line through two of "
            "three small grid counts (hybridfd.simulate.lines; each row's JSON holds its points and how far the "
            "line misses the third); 'direct' rows simulate all G grids"
        )
    notes += simulation_notes(args) + merge_notes
    return Outcome(title, columns, rows, notes)


def plot(result: dict[str, Any], path: Path) -> None:
    from hybridfd.experiments._plot import figure, save

    rows = result["rows"]
    measured = [r for r in rows if r["kind"] == "measured"]
    volume = [r for r in rows if r["kind"] == "exact"]
    fig, (left, right) = figure(panels=2, width=4.5)
    for approach in dict.fromkeys(r["approach"] for r in measured):
        mine = [r for r in measured if r["approach"] == approach and r.get("source", "direct") == "direct"]
        from_line = [r for r in measured if r["approach"] == approach and r.get("source") == "line"]
        drawn = left.plot([r["cores"] for r in mine], [r["ms"] for r in mine], marker="o", label=approach)
        if from_line:  # the same colour, open markers, dashed: not simulated with G grids
            colour = drawn[0].get_color()
            left.plot([r["cores"] for r in from_line], [r["ms"] for r in from_line], color=colour, marker="o",
                      markerfacecolor="none", linestyle="--")  # fmt: skip
    if any(r.get("source") == "line" for r in measured):
        left.plot([], [], color="grey", marker="o", markerfacecolor="none", linestyle="--", label="from the line")
    counts = sorted({r["cores"] for r in measured})
    if len(counts) > 1 and counts[-1] >= 16 * counts[0]:  # e.g. simulated 4 .. 1,024: spread them out
        left.set_xscale("log", base=2)
    left.set_xticks(counts)
    left.set_xticklabels([str(c) for c in counts], fontsize=7)
    left.set_xlabel("cores (= grids)")
    simulated = result["parameters"].get("simulate")
    left.set_ylabel(f"ms per apply ({'simulated on ' + simulated if simulated else 'measured'})")
    left.legend(fontsize=8)
    cores = [r["cores"] for r in volume]
    right.plot(cores, [r["flat_kb_per_node"] / 1e3 for r in volume], marker="o", label="one rank per core")
    right.plot(cores, [r["hybrid_kb_per_node"] / 1e3 for r in volume], marker="s", label="one rank per node")
    right.set_xscale("log", base=2)
    right.set_xlabel("cores (= grids)")
    right.set_ylabel("inter-node MB per node per apply (exact)")
    right.legend(fontsize=8)
    fig.suptitle(textwrap.fill(result["title"], 110), fontsize=9)  # a simulated title runs long
    save(fig, path)
