"""Which links the simulated Blue Gene/P messages cross: the generated platform's routes
against SimGrid's own shortest-path routes (docs/simulation.md, "The 1,024-core mesh").

Below 512 nodes Blue Gene/P is a mesh. hybridfd.simulate.platform writes it node by node
with every route given X, then Y, then Z (Blue Gene/P's deterministic routing, the
routes of hybridfd.mapping.metrics). Until session 7 it left the routes to SimGrid's
shortest-path search (DijkstraCache); shortest paths are not unique on a mesh, and
SimGrid breaks the ties its own way. This script

- prints, per core count, the busiest link of one batch of 8 grids of 192^3 (all six
  directions at once, as the double-buffered schedule sends them) for flat-optimized (one
  rank per core, packed 4 to a node) and hybrid-multiple (four groups of one rank per
  node): X-Y-Z as hybridfd.mapping counts it, on the generated platform's routes as
  SimGrid reads them, and on the shortest-path platform's, beside the compute per batch
  it has to hide behind;
- with ``--simulate APPROACH CORES GRIDS``, simulates one point (not cached) on the
  generated platform (``--routing generated``) or on the former shortest-path platform
  (``--routing shortest-path``: the same hosts and links, neighbour routes only,
  DijkstraCache, in-node messages on SimGrid's default loopback as then).

    nice -n 10 .venv/bin/python benchmarks/simulated_routing.py --cores 256 512 1024 2048
    nice -n 10 .venv/bin/python benchmarks/simulated_routing.py --simulate flat-optimized 1024 1024 \\
        --routing shortest-path
    nice -n 10 .venv/bin/python benchmarks/simulated_routing.py --simulate flat-optimized 1024 32 \\
        --shape 144 --batch 1 --routing shortest-path    # Fig. 7.2's point as it was

The route printer (benchmarks/simgrid_routes.cpp) is built with g++ against libsimgrid
(installed by `make smpi`) on first use.
"""

from __future__ import annotations

import argparse
import collections
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from hybridfd.decomposition import automatic_grid
from hybridfd.experiments._stencil import model_of, variant
from hybridfd.mapping import metrics
from hybridfd.mapping.patterns import stencil_pattern
from hybridfd.mapping.topology import Topology
from hybridfd.simulate import experiments, smpi
from hybridfd.simulate import platform as platforms

SHAPE, BATCH, RADIUS, ITEMSIZE = 192, 8, 2, 8
FLOPS_PER_POINT = 19  # cpp/tools/simulation.hpp: 13-point stencil, float64
ROUTES_SOURCE = Path(__file__).with_name("simgrid_routes.cpp")
ROUTES_BINARY = Path("build") / "smpi" / "simgrid-routes"
MACHINE = platforms.BLUEGENE_P


def route_printer() -> Path:
    """The built route printer (built on first use)."""
    if not ROUTES_BINARY.exists() or ROUTES_BINARY.stat().st_mtime < ROUTES_SOURCE.stat().st_mtime:
        ROUTES_BINARY.parent.mkdir(parents=True, exist_ok=True)
        command = ["g++", "-O1", "-std=c++17", str(ROUTES_SOURCE), "-o", str(ROUTES_BINARY), "-lsimgrid"]
        subprocess.run(command, check=True)
    return ROUTES_BINARY


def simgrid_routes(xml: str, pairs: list[tuple[int, int]]) -> dict[tuple[int, int], list[str]]:
    """SimGrid's route (directed link names) of each node pair on the platform ``xml``."""
    with tempfile.TemporaryDirectory(prefix="hybridfd-routes-") as directory:
        path = Path(directory) / "platform.xml"
        path.write_text(xml)
        text = "".join(f"{a} {b}\n" for a, b in pairs)
        command = [str(route_printer()), str(path), "--log=root.thres:critical"]
        out = subprocess.run(command, input=text, capture_output=True, text=True, check=True).stdout
    routes = {}
    for line in out.splitlines():
        fields = line.split()
        routes[(int(fields[0]), int(fields[1]))] = fields[2:]
    return routes


def shortest_path_xml(topology: Topology, machine: platforms.Machine) -> str:
    """The platform the generator wrote for ``topology`` before session 7: the same hosts
    and links, routes only between neighbours, and SimGrid's shortest-path search
    (DijkstraCache) for the rest; no route of a node to itself (SimGrid 3.32 crashes on
    one in such a zone), so messages within a node take SimGrid's default loopback."""
    xml = platforms.platform_xml(topology, machine)
    if 'routing="Full"' not in xml:
        raise ValueError(f"{topology.describe()}: not a node-by-node platform (a TORUS cluster routes X, Y, Z already)")
    head = xml.partition("    <route ")[0].replace('routing="Full"', 'routing="DijkstraCache"')
    head = "".join(line for line in head.splitlines(keepends=True) if '-local"' not in line)
    # The neighbour routes in the order the former generator wrote them (node, axis; there
    # and back): the order SimGrid's search met the edges in, which may break its ties.
    routes = [
        f'    <route src="node-{node}" dst="node-{neighbour}" symmetrical="NO">'
        f'<link_ctn id="{link}" direction="UP"/></route>\n'
        f'    <route src="node-{neighbour}" dst="node-{node}" symmetrical="NO">'
        f'<link_ctn id="{link}" direction="DOWN"/></route>\n'
        for node, _, neighbour, link in platforms.neighbour_links(topology)
    ]
    return head + "".join(routes) + "  </zone>\n</platform>\n"


def busiest_links(cores: int) -> list[dict]:
    """Busiest link per batch of 8 grids, both routings, for flat-optimized and hybrid-multiple."""
    topology = Topology.preset("bluegene-p", cores)
    per_node = topology.cores_per_node
    bandwidth = topology.link_bandwidth[0] * MACHINE.bandwidth_unit
    generated = platforms.platform_xml(topology, MACHINE)
    shortest = shortest_path_xml(topology, MACHINE) if 'routing="Full"' in generated else generated
    rows = []
    for approach, ranks, groups in (("flat-optimized", cores, 1), ("hybrid-multiple", cores // per_node, per_node)):
        grid = automatic_grid((SHAPE,) * 3, ranks)
        pattern = stencil_pattern((SHAPE,) * 3, grid, radius=RADIUS, itemsize=ITEMSIZE, grids=BATCH)
        # flat: packed, 4 ranks to a node; a hybrid-multiple group: rank i on node i, and
        # the node's four groups send the same pattern at once
        node = np.arange(ranks) * (cores // ranks) // per_node
        src, dst = node[pattern.src], node[pattern.dst]
        nbytes = pattern.nbytes.astype(np.float64) * groups
        dimension_ordered = metrics.link_loads(topology, src, dst, nbytes).max()
        off = src != dst
        pairs = sorted(set(zip(src[off].tolist(), dst[off].tolist(), strict=True)))
        busiest = {}
        for name, xml in (("generated", generated), ("shortest_path", shortest)):
            routes = simgrid_routes(xml, pairs)
            loads: collections.Counter[str] = collections.Counter()
            for a, b, n in zip(src[off].tolist(), dst[off].tolist(), nbytes[off].tolist(), strict=True):
                for link in routes[(a, b)]:
                    loads[link] += n
            busiest[name] = max(loads.values())
        # one core per rank in both models: a hybrid-multiple group's rank computes a node's box
        compute = BATCH * SHAPE**3 / ranks * FLOPS_PER_POINT / MACHINE.core_speed
        rows.append(
            {
                "cores": cores,
                "topology": f"{'x'.join(map(str, topology.dims))} {'torus' if all(topology.wrap) else 'mesh'}",
                "approach": approach,
                "dimension_ordered_ms": 1e3 * dimension_ordered / bandwidth,
                "generated_ms": 1e3 * busiest["generated"] / bandwidth,
                "shortest_path_ms": 1e3 * busiest["shortest_path"] / bandwidth,
                "compute_ms": 1e3 * compute,
            }
        )
    return rows


def simulate(
    approach: str, cores: int, grids: int, routing: str, driver: Path, shape: int = SHAPE, batch: int | None = None
) -> tuple[float, float]:
    """(simulated ms per apply, wall seconds) of one point (``batch`` None: the preset's),
    on the generated platform or the former shortest-path one; not cached."""
    job = {"grids": grids, "shape": shape, "dtype": "float64", "radius": RADIUS, "simulate": {"platform": "bluegene-p"}}
    run = experiments.plan(variant(approach, batch), model_of(approach), cores, job, experiments.TEAM_SYNC_SECONDS)
    if run is None:
        raise ValueError(f"{approach} is not simulated at scale")
    xml = shortest_path_xml(run.topology, MACHINE) if routing == "shortest-path" else None
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="hybridfd-smpi-") as directory:
        record = smpi.run(
            run.ranks, run.topology, MACHINE, run.arguments, directory, driver, timeout=4 * 3600, platform_xml=xml
        )
    return record["rows"][0]["median_ms"], time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cores", type=int, nargs="*", default=[], help="busiest links at these core counts")
    parser.add_argument("--simulate", nargs=3, metavar=("APPROACH", "CORES", "GRIDS"), help="simulate one point")
    parser.add_argument("--routing", choices=("generated", "shortest-path"), default="generated")
    parser.add_argument("--shape", type=int, default=SHAPE, help=f"grids of N^3 to simulate (default {SHAPE})")
    parser.add_argument("--batch", type=int, help="batch to simulate (default: the approach's preset)")
    parser.add_argument("--driver", default=str(smpi.DRIVER_IN_CHECKOUT))
    args = parser.parse_args(argv)
    for cores in args.cores:
        for row in busiest_links(cores):
            print(
                f"{row['cores']:>6} cores ({row['topology']}) {row['approach']:<15} busiest link per batch of {BATCH}: "
                f"X-Y-Z {row['dimension_ordered_ms']:.2f} ms, generated platform {row['generated_ms']:.2f} ms, "
                f"SimGrid's shortest paths {row['shortest_path_ms']:.2f} ms; "
                f"compute {row['compute_ms']:.2f} ms",
                flush=True,
            )
    if args.simulate:
        approach, cores, grids = args.simulate[0], int(args.simulate[1]), int(args.simulate[2])
        ms, wall = simulate(approach, cores, grids, args.routing, Path(args.driver), args.shape, args.batch)
        batch = "preset batch" if args.batch is None else f"batch {args.batch}"
        print(f"{approach} ({batch}) {cores} cores {grids} grids of {args.shape}^3, {args.routing} routes: {ms:.3f} ms")
        print(f"({wall:.0f} s wall)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
