"""The LJ mini-app on 8 ranks, a 2 x 2 x 2 process grid (every region has neighbours
on all sides, edges and corners reached only through the staged border exchange): every
transport gives the 1-rank trajectory bit for bit. One small test, as 8 ranks
oversubscribe CI's cores."""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

import hybridfd as hf

RANKS = (8,)


def test_two_by_two_by_two_is_bit_identical_to_one_rank(comm):
    state = hf.particles.initial_state(cells=4, seed=8)
    single = hf.particles.LennardJones(MPI.COMM_SELF, state)
    expected_thermo = single.run(25, thermo_every=5)
    expected = single.gather()
    for transport in hf.particles.particle_transport_names():
        md = hf.particles.LennardJones(comm, state, transport=transport)
        assert md.grid == (2, 2, 2)
        assert md.run(25, thermo_every=5, census=True) == expected_thermo
        assert {(atoms, tags) for _, atoms, tags in md.census} == {(256, int(state.tags.sum()))}
        got = md.gather()
        assert np.array_equal(got.positions, expected.positions)
        assert np.array_equal(got.velocities, expected.velocities)
