"""The halo exchange on its own (hf.Halo) against the mpi4py code a user would write for it
(per grid and per neighbour, Isend/Irecv of packed faces, edges and corners), side by
side in one run: time per exchange, medians of paired rounds, and the ratio.

    .venv/bin/python benchmarks/halo_exchange.py [--ranks 2 4] [--rounds 7]

Runs itself under the launcher once per rank count: 64 grids of 48^3 float64 per rank
(x cut into one box per rank, every axis periodic), ghost widths 2 on every axis with
edges and corners (26 neighbour blocks). Both fill the same ghosts: checked bit for bit
before timing. Writes results/halo_exchange.json.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
EDGE = 48
GRIDS = 64
WIDTH = 2
# (label, approach, options): the presets and a batch the size of the whole exchange.
CONFIGS = [
    ("flat-original", "flat-original", {}),
    ("flat-optimized", "flat-optimized", {}),
    ("flat-optimized, batch 64", "flat-optimized", {"batch": 64, "slope": 0}),
]


def plain_mpi4py(comm, padded: np.ndarray, neighbours: dict) -> None:  # noqa: ANN001 - an mpi4py communicator
    """What a user writes: for each grid, each direction packs its send block, posts an
    Irecv and an Isend, waits for all, then unpacks the received blocks into the ghosts."""
    from mpi4py import MPI

    w = WIDTH
    for grid in padded:
        requests, received = [], []
        for tag, (direction, (source, target)) in enumerate(neighbours.items()):
            send = tuple(slice(n - 2 * w, n - w) if d > 0 else slice(w, 2 * w) if d < 0 else slice(w, n - w)
                         for d, n in zip(direction, grid.shape, strict=True))  # fmt: skip
            ghost = tuple(slice(n - w, n) if d < 0 else slice(0, w) if d > 0 else slice(w, n - w)
                          for d, n in zip(direction, grid.shape, strict=True))  # fmt: skip
            buffer = np.empty(grid[ghost].shape)
            requests.append(comm.Irecv(buffer, source=source, tag=tag))
            requests.append(comm.Isend(np.ascontiguousarray(grid[send]), dest=target, tag=tag))
            received.append((ghost, buffer))
        MPI.Request.Waitall(requests)
        for ghost, buffer in received:
            grid[ghost] = buffer


def worker(rounds: int) -> None:
    from mpi4py import MPI

    import hybridfd as hf

    comm = MPI.COMM_WORLD
    dec = hf.Decomposition(hf.Domain((EDGE * comm.size, EDGE, EDGE), periodic=True), comm, grid=(comm.size, 1, 1))
    cart = dec.comm
    # Per direction of travel d: data goes to the neighbour at +d and comes from the one
    # at -d, filling the ghosts on the -d side.
    neighbours = {}
    for direction in itertools.product((-1, 0, 1), repeat=3):
        if direction == (0, 0, 0):
            continue
        coords = cart.Get_coords(cart.rank)
        target = cart.Get_cart_rank([c + d for c, d in zip(coords, direction, strict=True)])
        source = cart.Get_cart_rank([c - d for c, d in zip(coords, direction, strict=True)])
        neighbours[direction] = (source, target)
    halos = {label: hf.Halo(dec, (WIDTH,) * 3, True, approach, **options) for label, approach, options in CONFIGS}
    first = next(iter(halos.values()))
    a = first.empty(GRIDS)
    first.interior(a)[...] = np.random.default_rng(comm.rank).standard_normal(dec.local_shape(GRIDS))
    b = a.copy()
    plain_mpi4py(cart, b, neighbours)
    for halo in halos.values():
        assert np.array_equal(halo.exchange(a.copy()), b), "hybridfd and mpi4py filled different ghosts"
    times: dict[str, list[float]] = {label: [] for label in ["mpi4py", *halos]}
    runs = {"mpi4py": lambda: plain_mpi4py(cart, b, neighbours)}
    runs.update({label: (lambda halo=halo: halo.exchange(a)) for label, halo in halos.items()})
    for run in runs.values():
        run()  # warm-up
    for _ in range(rounds):
        for label, run in runs.items():  # interleaved: load hits all alike
            comm.Barrier()
            start = time.perf_counter()
            run()
            times[label].append(comm.allreduce(time.perf_counter() - start, op=MPI.MAX))
    plain = times["mpi4py"]
    rows = [
        {
            "ranks": comm.size,
            "method": label,
            "ms_per_exchange": statistics.median(values) * 1e3,
            "speedup_over_mpi4py": statistics.median(p / v for p, v in zip(plain, values, strict=True)),
        }
        for label, values in times.items()
    ]
    if comm.rank == 0:
        print(json.dumps(rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.rounds)
        return
    from hybridfd import launch

    rows = []
    for ranks in args.ranks:
        argv = [sys.executable, __file__, "--worker", "--rounds", str(args.rounds)]
        result = launch.run(ranks, argv, timeout=1800)
        if result.returncode != 0 or result.timed_out:
            sys.exit(f"{ranks} ranks failed:\n{result.output}")
        rows += json.loads([line for line in result.output.splitlines() if line.startswith("[")][-1])
    print(f"{'ranks':>5} {'method':<26} {'ms/exchange':>11} {'x mpi4py':>8}")
    for row in rows:
        print(
            f"{row['ranks']:>5} {row['method']:<26} {row['ms_per_exchange']:>11.2f} {row['speedup_over_mpi4py']:>8.2f}"
        )
    (ROOT / "results").mkdir(exist_ok=True)
    (ROOT / "results" / "halo_exchange.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
