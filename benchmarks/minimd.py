"""The MiniMD Lennard-Jones mini-app per particle transport (MPI+OpenSHMEM slides: MPI,
Hybrid-Barrier = rma-fence, Hybrid-Advanced = rma-notify): time per step and the share
spent communicating, as ratios to p2p measured in the same run, medians over repeats.

    .venv/bin/python benchmarks/minimd.py [--ranks 1 2 4] [--cells 20] [--steps 100] [--repeats 3]
    .venv/bin/python benchmarks/minimd.py --weak 12   # fixed 12^3 unit cells per rank, x cut

Runs itself under the launcher once per rank count. The standard LJ melt (FCC, density
0.8442, T 1.44, cutoff 2.5, skin 0.3, dt 0.005, reneighbouring every 20 steps); strong
scaling on cells^3 unit cells (20: 32,000 atoms), or with --weak a box of
(c * ranks, c, c) unit cells on a (ranks, 1, 1) grid. The transports run interleaved on
identical states (their trajectories are bit-identical), each repeat continuing the
run. Writes results/minimd.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def worker(cells: int, weak: int, steps: int, repeats: int) -> None:
    from mpi4py import MPI

    import hybridfd as hf
    from hybridfd import launch

    comm = MPI.COMM_WORLD
    transports = hf.particles.particle_transport_names()
    if weak:
        state = hf.particles.initial_state(cells=(weak * comm.size, weak, weak))
        grid = (comm.size, 1, 1)
    else:
        state = hf.particles.initial_state(cells=cells)
        grid = None
    runs = {t: hf.particles.LennardJones(comm, state, transport=t, grid=grid) for t in transports}
    for md in runs.values():
        md.run(20)  # warm-up: buffers and windows grown, one migration done
    seconds: dict[str, list[float]] = {t: [] for t in transports}
    shares: dict[str, list[float]] = {t: [] for t in transports}
    for _ in range(repeats):
        for transport, md in runs.items():  # interleaved, so load hits all alike
            md.reset_times()
            comm.Barrier()
            start = MPI.Wtime()
            md.run(steps)
            seconds[transport].append(comm.allreduce(MPI.Wtime() - start, op=MPI.MAX) / steps)
            times = md.times
            shares[transport].append(comm.allreduce(times["communication"] / times["total"]) / comm.size)
    p2p = statistics.median(seconds["p2p"])
    rows = [
        {
            "ranks": comm.size,
            "grid": list(runs[transport].grid),
            "atoms": len(state.tags),
            "transport": transport,
            "ms_per_step": statistics.median(seconds[transport]) * 1e3,
            "ratio_to_p2p": statistics.median(seconds[transport]) / p2p,
            "communication_share": statistics.median(shares[transport]),
        }
        for transport in transports
    ]
    if comm.rank == 0:
        launch.report_result(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--cells", type=int, default=20, help="unit cells per axis (strong scaling)")
    parser.add_argument("--weak", type=int, default=0, help="unit cells per axis per rank (weak scaling)")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.cells, args.weak, args.steps, args.repeats)
        return
    from hybridfd import launch

    rows = []
    for ranks in args.ranks:
        argv = [sys.executable, __file__, "--worker", "--cells", str(args.cells), "--weak", str(args.weak)]
        argv += ["--steps", str(args.steps), "--repeats", str(args.repeats)]
        rows += launch.worker_result(launch.run(ranks, argv, timeout=3600))
    print(f"{'ranks':>5} {'grid':<10} {'atoms':>7} {'transport':<11} {'ms/step':>8} {'vs p2p':>7} {'comm':>6}")
    for row in rows:
        grid = "x".join(map(str, row["grid"]))
        print(
            f"{row['ranks']:>5} {grid:<10} {row['atoms']:>7} {row['transport']:<11} {row['ms_per_step']:>8.2f} "
            f"{row['ratio_to_p2p']:>7.2f} {row['communication_share']:>6.1%}"
        )
    (ROOT / "results").mkdir(exist_ok=True)
    name = f"minimd-weak{args.weak}.json" if args.weak else "minimd.json"
    (ROOT / "results" / name).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
