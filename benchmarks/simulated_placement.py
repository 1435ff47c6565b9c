"""Fig. 7.2's flat-optimized against hybrid-multiple (the paper saw no difference) under
other rank placements than packed Cartesian order (docs/simulation.md, "Fig. 7.2
simulated"): one approach of the Fig. 7.2 job (32 grids of 144^3) on
Blue Gene/P, its ranks placed by each named strategy of hybridfd.mapping (the mapping
module's own strategies, evaluated on the job's halo pattern), simulated by SMPI; prints
the simulated time beside the mapping's metrics (off-node bytes, hop-bytes, the busiest
link's bytes). ``bluegene-p`` among the strategies is not a mapping strategy but Blue
Gene/P's own MPI_Cart_create placement (hybridfd.simulate.placement), set beside them.
Each row records the per-message CPU cost it was simulated with (``message_overhead_s``;
a row without it was simulated with no such cost).

    nice -n 10 .venv/bin/python benchmarks/simulated_placement.py --cores 1024 \
        --strategies packed hilbert recursive-bisection bluegene-p
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

from hybridfd.decomposition import automatic_grid
from hybridfd.experiments._stencil import variant
from hybridfd.mapping.metrics import evaluate
from hybridfd.mapping.patterns import stencil_pattern
from hybridfd.mapping.strategies import compute_mapping, strategy_names
from hybridfd.mapping.topology import Topology
from hybridfd.perfmodel.store import cache_dir
from hybridfd.simulate import experiments, smpi
from hybridfd.simulate.placement import bluegene_p

GRIDS, SHAPE = 32, 144


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cores", type=int, default=1024)
    parser.add_argument("--approach", default="flat-optimized")
    parser.add_argument(
        "--batch", type=int, default=1, help="the Fig. 7.2 left panel's batch 1 (default); 0: the approach's preset"
    )
    parser.add_argument("--grids", type=int, default=GRIDS, help=f"grids per apply (default {GRIDS}, Fig. 7.2)")
    parser.add_argument("--shape", type=int, default=SHAPE, help=f"grids of N^3 (default {SHAPE})")
    parser.add_argument(
        "--strategies", nargs="+", default=["packed", "hilbert"], choices=[*strategy_names(), "bluegene-p"]
    )
    parser.add_argument("--cache", default=str(cache_dir() / "simulate"))
    parser.add_argument("--driver", default=str(smpi.DRIVER_IN_CHECKOUT))
    parser.add_argument("-o", "--output", help="JSON file of the rows")
    args = parser.parse_args(argv)
    job = {
        "grids": args.grids,
        "shape": args.shape,
        "dtype": "float64",
        "radius": 2,
        "simulate": {"platform": "bluegene-p"},
    }
    run = experiments.plan(variant(args.approach, args.batch), "flat", args.cores, job, experiments.TEAM_SYNC_SECONDS)
    if run is None:
        raise SystemExit(f"{args.approach} on {args.cores} cores is not simulated")
    topology = Topology.preset("bluegene-p", args.cores)
    grid = automatic_grid((args.shape,) * 3, run.ranks)
    # One batch step's halo messages (a batch of b grids sends b grids' faces at once;
    # the presets' batch is 8).
    pattern = stencil_pattern((args.shape,) * 3, grid, radius=2, itemsize=8, grids=args.batch or 8)
    rows = []
    machine = experiments.MACHINES["bluegene-p"]
    for strategy in args.strategies:
        if strategy == "bluegene-p":
            slots = bluegene_p(grid, topology)
            metrics = evaluate(pattern, topology, slots)
        else:
            mapping = compute_mapping(strategy, pattern, topology)
            slots, metrics = mapping.slots, mapping.metrics
        placed = dataclasses.replace(run, topology=dataclasses.replace(topology, rank_slots=tuple(map(int, slots))))
        start = time.perf_counter()
        row = experiments.simulate(placed, machine, Path(args.cache), Path(args.driver), 3600)
        if list(row["process_grid"]) != list(grid):
            raise RuntimeError(f"the driver cut {row['process_grid']}, the mapping assumed {grid}")
        result = {
            "strategy": strategy,
            "approach": args.approach,
            "batch": args.batch or "preset",
            "grids": args.grids,
            "shape": args.shape,
            "cores": args.cores,
            "process_grid": list(grid),
            "ms": row["median_ms"],
            "off_node_bytes": metrics.off_node_bytes,
            "hop_bytes": metrics.hop_bytes,
            "max_link_load": metrics.max_link_load,
            "message_overhead_s": machine.message_overhead,
            "wall_seconds": time.perf_counter() - start,
        }
        rows.append(result)
        print(json.dumps(result), flush=True)
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        path = Path(args.output)
        earlier = json.loads(path.read_text())["rows"] if path.exists() else []
        path.write_text(json.dumps({"rows": earlier + rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
