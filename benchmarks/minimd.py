"""The MiniMD Lennard-Jones mini-app per particle transport (MPI+OpenSHMEM slides: MPI,
Hybrid-Barrier = rma-fence, Hybrid-Advanced = rma-notify): time per step and the share
spent communicating, as ratios to p2p measured in the same run, medians over repeats,
beside LAMMPS's own time per step on the same input and ranks.

    .venv/bin/python benchmarks/minimd.py [--ranks 1 2 4] [--cells 20] [--steps 100] [--repeats 3]
        [--plot results/minimd.png]
    .venv/bin/python benchmarks/minimd.py --weak 12   # fixed 12^3 unit cells per rank, x cut
    .venv/bin/python benchmarks/minimd.py --agreement [--steps 100] [--lammps-ranks 2]

Runs itself under the launcher once per rank count. The standard LJ melt (FCC, density
0.8442, T 1.44, cutoff 2.5, skin 0.3, dt 0.005, reneighbouring every 20 steps); strong
scaling on cells^3 unit cells (20: 32,000 atoms), or with --weak a box of
(c * ranks, c, c) unit cells on a (ranks, 1, 1) grid. The transports run interleaved on
identical states (their trajectories are bit-identical), each repeat continuing the
run. Writes results/minimd.json.

LAMMPS (the peer of `make peers-lammps`, benchmarks/peers/lammps_lj.py; left out with a
message when absent) runs right after hybridfd at each rank count, `--repeats` times, each
a fresh `in.lj` run of --steps steps from the same initial state on the same number of
ranks under the same launcher (its own process grid; weak: its box is the same
(c * ranks, c, c) cells). Its time per step is its "Loop time" (barrier to barrier, setup
excluded) over the steps; its communication share is its "Comm" row (average over ranks,
which also includes waiting for the slowest neighbour) over the loop time. Its rows have
transport "lammps" and the ratio to p2p at the same rank count.

`--agreement` prints instead the thermo table of the 32,000-atom melt, hybridfd (1 rank)
beside LAMMPS, every step up to 10 and then every 10.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

from peers import lammps_lj  # numpy only at import; it launches the LAMMPS peer

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


def lammps_rows(ranks: int, cells: tuple[int, int, int], steps: int, repeats: int, p2p_ms: float) -> list[dict]:
    """LAMMPS on the same melt and ranks, ``repeats`` fresh runs, as one row like hybridfd's."""
    state = lammps_lj.reference_state(cells)  # == hf.particles.initial_state(cells) bit for bit
    runs = [lammps_lj.launch(ranks, state, steps, thermo_every=steps) for _ in range(repeats)]
    seconds = statistics.median(run["seconds_per_step"] for run in runs)
    return [
        {
            "ranks": ranks,
            "grid": runs[0]["grid"],
            "atoms": runs[0]["atoms"],
            "transport": "lammps",
            "ms_per_step": seconds * 1e3,
            "ratio_to_p2p": seconds * 1e3 / p2p_ms,
            "communication_share": statistics.median(run["breakdown"]["Comm"] / run["loop_seconds"] for run in runs),
            "ms_per_step_runs": [run["seconds_per_step"] * 1e3 for run in runs],
        }
    ]


def agreement(steps: int, lammps_ranks: int, cells: int) -> None:
    """The thermo of both codes from the same state, as a markdown table (LAMMPS's values
    as it prints them, hybridfd's at the same %.8g) and the largest relative difference."""
    from mpi4py import MPI

    import hybridfd as hf

    state = hf.particles.initial_state(cells=cells)
    first = min(10, steps)
    theirs = lammps_lj.launch(lammps_ranks, state, steps, thermo_every=10, every_step_until=first)
    md = hf.particles.LennardJones(MPI.COMM_SELF, state)
    ours = md.run(first, thermo_every=1)
    ours += md.run(steps - first, thermo_every=10)[1:] if steps > first else []
    fields = lammps_lj.THERMO_FIELDS
    print("| step | " + " | ".join(f"{f} LAMMPS | hybridfd" for f in fields) + " | largest relative difference |")
    print("| --- " * (2 + 2 * len(fields)) + "|")
    for record, printed, full in zip(ours, theirs["thermo_printed"], theirs["thermo"], strict=True):
        if not record["step"] == printed["step"] == full["step"]:
            raise RuntimeError(f"thermo steps differ: {record['step']}, {printed['step']}, {full['step']}")
        difference = max(abs(record[f] - full[f]) / abs(full[f]) for f in fields)
        columns = " | ".join(f"{printed[f]:.8g} | {record[f]:.8g}" for f in fields)
        print(f"| {record['step']} | {columns} | {difference:.1e} |")


def plot(path: Path, rows: list[dict], title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6, 4))
    for code in dict.fromkeys(row["transport"] for row in rows):
        mine = [row for row in rows if row["transport"] == code]
        style = "--" if code == "lammps" else "-"
        axis.plot([r["ranks"] for r in mine], [r["ms_per_step"] for r in mine], style, marker="o", label=code)
    axis.set_xticks(sorted({row["ranks"] for row in rows}))
    axis.set_xlabel("ranks (2 cores: 4 ranks are oversubscribed)")
    axis.set_ylabel("ms per step (median)")
    axis.set_ylim(bottom=0)
    axis.set_title(title)
    axis.legend()
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--cells", type=int, default=20, help="unit cells per axis (strong scaling)")
    parser.add_argument("--weak", type=int, default=0, help="unit cells per axis per rank (weak scaling)")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--plot", type=Path, help="write a figure of ms per step against ranks here")
    parser.add_argument("--agreement", action="store_true", help="thermo of hybridfd beside LAMMPS's, then exit")
    parser.add_argument("--lammps-ranks", type=int, default=2, help="LAMMPS's ranks for --agreement")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.cells, args.weak, args.steps, args.repeats)
        return
    if args.agreement:
        agreement(args.steps, args.lammps_ranks, args.cells)
        return
    from hybridfd import launch

    with_lammps = (lammps_lj.PEER / "bin" / "python").exists()
    if not with_lammps:
        print(f"no LAMMPS peer at {lammps_lj.PEER} (make peers-lammps): hybridfd's transports only")
    loads = [os.getloadavg()[0]]
    rows = []
    for ranks in args.ranks:
        argv = [sys.executable, __file__, "--worker", "--cells", str(args.cells), "--weak", str(args.weak)]
        argv += ["--steps", str(args.steps), "--repeats", str(args.repeats)]
        rows += launch.worker_result(launch.run(ranks, argv, timeout=3600))
        if with_lammps:
            cells = (args.weak * ranks, args.weak, args.weak) if args.weak else (args.cells,) * 3
            p2p_ms = next(r["ms_per_step"] for r in rows if r["ranks"] == ranks and r["transport"] == "p2p")
            rows += lammps_rows(ranks, cells, args.steps, args.repeats, p2p_ms)
        loads.append(os.getloadavg()[0])
    print(f"load average (1 min) before and after each rank count: {loads}")
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
    if args.plot:
        atoms = f"{4 * args.weak**3:,} atoms per rank" if args.weak else f"{4 * args.cells**3:,} atoms"
        plot(args.plot, rows, f"LJ melt, {atoms}, {args.steps} steps")


if __name__ == "__main__":
    main()
