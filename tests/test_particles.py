"""The MiniMD Lennard-Jones mini-app on one process: the initial state, forces, energy
and pressure against a numpy reference over all pairs, energy conservation over 1,000
steps, and bad input to initial_state. (Multi-rank: tests/mpi/test_particles.py.)"""

from __future__ import annotations

import numpy as np
import pytest
from mpi4py import MPI

import hybridfd as hf


def test_initial_state_is_the_lj_melt_start():
    state = hf.particles.initial_state(cells=(3, 4, 5), density=0.8442, temperature=1.44, seed=87287)
    atoms = 4 * 3 * 4 * 5
    lattice = (4 / 0.8442) ** (1 / 3)
    np.testing.assert_allclose(state.box, np.array([3, 4, 5]) * lattice, rtol=1e-15)
    assert state.positions.shape == state.velocities.shape == (atoms, 3)
    np.testing.assert_array_equal(state.tags, np.arange(1, atoms + 1))
    assert state.positions.min() >= 0 and np.all(state.positions < state.box)
    # Every lattice site once: no two atoms closer than the FCC nearest-neighbour distance.
    separation = state.positions[:, None, :] - state.positions[None, :, :]
    separation -= state.box * np.round(separation / state.box)
    distances = np.sqrt((separation**2).sum(-1)) + np.eye(atoms) * 10
    assert distances.min() == pytest.approx(lattice / np.sqrt(2), rel=1e-12)
    np.testing.assert_allclose(state.velocities.sum(axis=0), 0, atol=1e-12)
    temperature = (state.velocities**2).sum() / (3 * atoms - 3)
    assert temperature == pytest.approx(1.44, rel=1e-14)
    again = hf.particles.initial_state(cells=(3, 4, 5), seed=87287)
    np.testing.assert_array_equal(again.velocities, state.velocities)
    assert not np.array_equal(hf.particles.initial_state(cells=(3, 4, 5), seed=1).velocities, state.velocities)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"density": -0.8}, r"density must be positive and finite, got -0.8"),
        ({"density": 0.0}, r"density must be positive and finite, got 0.0"),
        ({"temperature": -1.0}, r"temperature must be non-negative and finite, got -1.0"),
        ({"cells": 0}, r"cells must be at least 1 along every axis, got 0"),
        ({"cells": (4, 0, 4)}, r"cells must be at least 1 along every axis, got \(4, 0, 4\)"),
        ({"cells": (4, 4)}, r"cells must be an integer or 3 integers, got \(4, 4\)"),
    ],
)
def test_initial_state_rejects_bad_values(arguments, message):
    with pytest.raises(ValueError, match=message):
        hf.particles.initial_state(**arguments)


def test_particle_transports_are_the_registry_s():
    names = hf.particles.particle_transport_names()
    assert names == ["p2p", "rma-fence", "rma-notify"]
    assert set(names) <= set(hf.transport_names())


def pair_terms(state: hf.particles.State, cutoff: float) -> tuple[np.ndarray, float, float]:
    """Forces, potential energy and virial over all pairs by minimum image (the box is
    wider than twice the cutoff), in numpy."""
    separation = state.positions[:, None, :] - state.positions[None, :, :]
    separation -= state.box * np.round(separation / state.box)
    r2 = (separation**2).sum(-1)
    np.fill_diagonal(r2, np.inf)
    inside = r2 < cutoff**2
    r6inv = np.where(inside, 1 / r2**3, 0.0)
    fpair = np.where(inside, r6inv * (48 * r6inv - 24) / r2, 0.0)
    forces = (separation * fpair[..., None]).sum(axis=1)
    energy = 0.5 * np.where(inside, 4 * r6inv * (r6inv - 1), 0.0).sum()
    virial = 0.5 * (np.where(inside, r2, 0.0) * fpair).sum()
    return forces, energy, virial


def perturbed_state() -> hf.particles.State:
    state = hf.particles.initial_state(cells=4, temperature=0.7, seed=2)
    shaken = state.positions + np.random.default_rng(9).uniform(-0.1, 0.1, state.positions.shape)
    return state._replace(positions=shaken % state.box)


def test_thermo_and_forces_match_all_pairs_in_numpy():
    """Potential energy and pressure at step 0, and the forces recovered from the first
    half-kick (x1 = x0 + dt (v0 + dt/2 f0)), against numpy over all pairs. One rank, so
    every ghost is a periodic image of an owned atom."""
    state = perturbed_state()
    md = hf.particles.LennardJones(MPI.COMM_SELF, state, dt=0.001)
    forces, energy, virial = pair_terms(state, 2.5)
    atoms = len(state.tags)
    record = md.run(1)
    start = record[0]
    assert start["potential_energy"] == pytest.approx(energy / atoms, rel=1e-12)
    kinetic = (state.velocities**2).sum()
    assert start["pressure"] == pytest.approx((kinetic + virial) / (3 * np.prod(state.box)), rel=1e-12)
    assert start["total_energy"] == pytest.approx((energy + 0.5 * kinetic) / atoms, rel=1e-12)
    after = md.gather()
    half_kick = (after.positions - state.positions) / 0.001
    recovered = (half_kick - state.velocities) / 0.0005
    assert np.abs(forces).max() > 10  # a real test: the shaken lattice is far from equilibrium
    np.testing.assert_allclose(recovered, forces, atol=2e-7 * np.abs(forces).max())


def test_energy_is_conserved_over_1000_steps():
    """Velocity Verlet at dt 0.005 conserves total energy up to the jumps of the
    truncated (unshifted) potential: each pair crossing r = 2.5 changes the energy by
    4 (2.5^-12 - 2.5^-6) = -0.0163, 6e-5 per atom here (256 atoms). Measured: total
    energy per atom stays within 0.26 % of its start while the potential energy per atom
    moves by 20 % (melting) and fluctuates by 0.055; the bounds (0.5 %, and total-energy
    fluctuations under a tenth of the potential energy's) leave room for that and would
    catch a wrong force, a lost ghost or a kick out of order, which drift by percents."""
    md = hf.particles.LennardJones(MPI.COMM_SELF, hf.particles.initial_state(cells=4))
    thermo = md.run(1000, thermo_every=10)
    total = np.array([record["total_energy"] for record in thermo])
    potential = np.array([record["potential_energy"] for record in thermo])
    assert len(total) == 101
    assert np.abs(total - total[0]).max() < 5e-3 * abs(total[0])
    assert total[10:].std() < 0.1 * potential[10:].std()
    assert potential[-1] > potential[0] + 0.5  # it melted


def test_a_run_on_comm_self_keeps_every_atom():
    state = hf.particles.initial_state(cells=4)
    md = hf.particles.LennardJones(MPI.COMM_SELF, state, reneighbor_every=5)
    md.run(12, census=True)
    assert {(atoms, tags) for _, atoms, tags in md.census} == {(256, int(state.tags.sum()))}
    assert md.owned_atoms == 256 and md.ghost_atoms > 0
    assert md.neighbour_pairs > 256 * 50  # about 78 partners within 2.8 at density 0.8442
    gathered = md.gather()
    assert np.all(gathered.positions >= -0.1) and np.all(gathered.positions < gathered.box + 0.1)
