"""The MiniMD Lennard-Jones mini-app under mpiexec: every transport and rank count gives
the 1-rank trajectory bit for bit, atoms are never lost or duplicated, very uneven
messages and emptied regions work, and bad input raises on every rank before any message.

The reference is the same state run on MPI.COMM_SELF (every rank computes it; a few
hundred atoms cost milliseconds), so each rank count compares against 1 rank directly.
"""

from __future__ import annotations

import numpy as np
import pytest
from mpi4py import MPI

import hybridfd as hf

RANKS = (1, 2, 4)

TRANSPORTS = ("p2p", "rma-fence", "rma-notify")


def reference(state: hf.particles.State, steps: int, thermo_every: int) -> tuple[list[dict], hf.particles.State]:
    md = hf.particles.LennardJones(MPI.COMM_SELF, state)
    assert md.grid == (1, 1, 1)
    return md.run(steps, thermo_every), md.gather()


def assert_same_state(got: hf.particles.State, expected: hf.particles.State) -> None:
    np.testing.assert_array_equal(got.tags, expected.tags)
    assert np.array_equal(got.positions, expected.positions), np.abs(got.positions - expected.positions).max()
    assert np.array_equal(got.velocities, expected.velocities), np.abs(got.velocities - expected.velocities).max()


def assert_conserved(md: hf.particles.LennardJones, state: hf.particles.State, steps: int) -> None:
    """The census after every step: all atoms, each once (count and sum of tags)."""
    census = md.census
    assert [step for step, _, _ in census] == list(range(md.step - steps, md.step + 1))
    assert {(atoms, tag_sum) for _, atoms, tag_sum in census} == {(len(state.tags), int(state.tags.sum()))}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_melt_is_bit_identical_to_one_rank(comm, transport):
    """The LJ melt on an uneven box (5 x 4 x 4 cells, 320 atoms) over 50 steps: two
    migrations and rebuilds, thermo every 10 steps. Positions, velocities and every
    thermo value equal the 1-rank run's exactly."""
    state = hf.particles.initial_state(cells=(5, 4, 4))
    expected_thermo, expected = reference(state, 50, 10)
    md = hf.particles.LennardJones(comm, state, transport=transport)
    thermo = md.run(50, thermo_every=10, census=True)
    assert thermo == expected_thermo
    assert [record["step"] for record in thermo] == [0, 10, 20, 30, 40, 50]
    assert_same_state(md.gather(), expected)
    assert_conserved(md, state, 50)
    # The melt happened: temperature fell from 1.44 as the lattice disordered.
    assert thermo[0]["temperature"] == pytest.approx(1.44, rel=1e-12)
    assert thermo[-1]["temperature"] < 1.0


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_explicit_grid_and_continued_run(comm, transport):
    """A process grid given by hand (all ranks along y), and a run continued in two
    parts (20 + 25 steps) equals one 45-step run of 1 rank."""
    state = hf.particles.initial_state(cells=(4, 3 * comm.size + 1, 4), temperature=1.0, seed=5)
    expected_thermo, expected = reference(state, 45, 0)
    md = hf.particles.LennardJones(comm, state, transport=transport, grid=(1, comm.size, 1))
    assert md.grid == (1, comm.size, 1)
    first = md.run(20)
    second = md.run(25)
    assert first[0] == expected_thermo[0] and second[-1] == expected_thermo[-1]
    assert second[0]["step"] == first[-1]["step"] == 20
    assert_same_state(md.gather(), expected)
    # Atoms crossed region faces, the periodic one included, one region at a time: the
    # short way round (3 regions up would be 1 down).
    assert md.migration_hops == ((0, 1, 0) if comm.size > 1 else (0, 0, 0))


def crowded_slab(drift: float) -> hf.particles.State:
    """An FCC slab filling the lowest quarter of the box along x (vacuum above it), every
    atom drifting along +x at `drift`: the atoms crowd into one or two ranks' regions,
    which move across the box and leave the others empty; border and migration messages
    range from nothing to every atom at once."""
    slab = hf.particles.initial_state(cells=(2, 4, 4), temperature=0.5, seed=11)
    velocities = slab.velocities.copy()
    velocities[:, 0] += drift
    box = slab.box * np.array([4.0, 1.0, 1.0])
    return hf.particles.State(box, slab.positions, velocities, slab.tags)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_crowded_drifting_slab(comm, transport):
    """Drift 40: 4 length units per 20 steps, so on 4 ranks (regions 3.36 long) atoms hop
    two regions between migrations. Bit-identical to 1 rank, census conserved; on more
    than one rank one rank holds every atom while another holds none, and a region that
    held atoms empties; on 4 ranks one rank sends no border atoms while another does."""
    state = crowded_slab(drift=40.0)
    expected_thermo, expected = reference(state, 60, 20)
    md = hf.particles.LennardJones(comm, state, transport=transport)
    owned = [comm.allgather(md.owned_atoms)]
    largest = [comm.allgather(md.largest_border_message)]
    hops = []
    thermo = []
    for _ in range(3):
        thermo += md.run(20, thermo_every=20, census=True)[1:]
        assert_conserved(md, state, 20)
        owned.append(comm.allgather(md.owned_atoms))
        largest.append(comm.allgather(md.largest_border_message))
        hops.append(md.migration_hops)
    assert thermo == expected_thermo[1:]
    assert_same_state(md.gather(), expected)
    if comm.size > 1:
        assert md.grid[0] == comm.size  # the long axis is cut
        assert max(owned[0]) == len(state.tags) and min(owned[0]) == 0, owned
        emptied = [rank for rank in range(comm.size) if owned[0][rank] > 0 and min(o[rank] for o in owned[1:]) == 0]
        assert emptied, owned
    if comm.size >= 4:
        assert any(min(sizes) == 0 and max(sizes) > 0 for sizes in largest), largest
        assert max(h[0] for h in hops) == 2, hops  # atoms crossed two regions between migrations


def test_transports_agree_with_each_other_in_one_run(comm):
    """All three transports side by side on one state: the same census and state."""
    state = hf.particles.initial_state(cells=4, seed=3)
    states = []
    for transport in TRANSPORTS:
        md = hf.particles.LennardJones(comm, state, transport=transport)
        md.run(21)
        states.append(md.gather())
    for other in states[1:]:
        assert_same_state(other, states[0])


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_steady_state_steps_allocate_nothing(comm, transport):
    """Between rebuilds a step allocates no C++ memory (the run's list of two thermo
    records is the one allocation); rebuilds grow buffers only when they must."""
    md = hf.particles.LennardJones(comm, hf.particles.initial_state(cells=4), transport=transport)
    md.run(40)
    assert md._core.run_counting_allocations(19) == 1


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"transport": "persistent"}, r"transport 'persistent' moves grid faces only.*p2p, rma-fence, rma-notify"),
        ({"transport": "partitioned"}, r"transport 'partitioned' moves grid faces only"),
        ({"transport": "neighbor"}, r"transport 'neighbor' moves grid faces only"),
        (
            {"transport": "carrier-pigeon"},
            r"unknown transport 'carrier-pigeon'; particle transports: p2p, rma-fence, rma-n",
        ),
        ({"cutoff": -2.5}, r"cutoff must be positive and finite, got -2.5"),
        ({"skin": -0.1}, r"skin must be non-negative and finite, got -0.1"),
        ({"dt": 0.0}, r"dt must be positive and finite, got 0"),
        ({"reneighbor_every": 0}, r"reneighbor_every must be at least 1, got 0"),
        ({"grid": (1, 1, 0)}, r"process grid \(1, 1, 0\) has a non-positive entry"),
    ],
)
def test_bad_arguments_raise_on_every_rank(comm, arguments, message):
    state = hf.particles.initial_state(cells=4)
    with pytest.raises(ValueError, match=message):
        hf.particles.LennardJones(comm, state, **arguments)


def test_region_thinner_than_cutoff_plus_skin(comm):
    """A box whose regions would be thinner than cutoff + skin (2.8): named with the
    grid and the most parts each axis allows, on every rank."""
    small = hf.particles.initial_state(cells=(1, 4, 4))  # 1.68 along x
    with pytest.raises(ValueError, match=r"shorter than cutoff \+ skin = 2.8 along x"):
        hf.particles.LennardJones(comm, small)
    thin = hf.particles.initial_state(cells=(3 * comm.size // 2, 4, 4)) if comm.size > 1 else None  # 2.52 per rank
    if thin is not None:
        with pytest.raises(ValueError, match=rf"process grid \({comm.size}, 1, 1\) gives each rank a region"):
            hf.particles.LennardJones(comm, thin, grid=(comm.size, 1, 1))
    with pytest.raises(ValueError, match=rf"has {2 * comm.size} processes but the communicator has {comm.size}"):
        hf.particles.LennardJones(comm, hf.particles.initial_state(cells=8), grid=(2 * comm.size, 1, 1))


def test_bad_value_on_one_rank_raises_everywhere(comm):
    """Only the last rank passes a negative cutoff: every rank raises, naming it, and a
    valid run afterwards works (nothing was left in flight)."""
    state = hf.particles.initial_state(cells=4)
    bad_rank = comm.size - 1
    cutoff = -1.0 if comm.rank == bad_rank else 2.5
    with pytest.raises(ValueError, match=rf"rank {bad_rank}: cutoff must be positive and finite, got -1"):
        hf.particles.LennardJones(comm, state, cutoff=cutoff)
    broken = state._replace(positions=state.positions[:-1]) if comm.rank == 0 else state
    with pytest.raises(ValueError, match=r"rank 0: state.positions must have shape \(256, 3\)"):
        hf.particles.LennardJones(comm, broken)
    md = hf.particles.LennardJones(comm, state)
    assert md.run(1)[-1]["step"] == 1


# Bad or differing on one rank only: every rank raises, naming the values (it hung before).
@pytest.mark.parametrize(
    ("bad", "error", "match"),
    [
        ({"cutoff": "x"}, TypeError, "cutoff must be a number, got 'x'"),
        ({"reneighbor_every": 2**40}, TypeError, "reneighbor_every must be an integer of C int range"),
        ({"cutoff": 2.0}, ValueError, "particle setting must be the same on every rank, got .*cutoff 2,"),
        (
            {"transport": "rma-fence"},
            ValueError,
            "particle setting must be the same on every rank, got .*transport rma-fence",
        ),
    ],
)
def test_setting_bad_or_differing_on_one_rank(comm, bad, error, match):
    if comm.size == 1 and error is ValueError:
        pytest.skip("needs two ranks to differ")  # the 2- and 4-rank runs cover it
    with pytest.raises(error, match=match):
        hf.particles.LennardJones(comm, hf.particles.initial_state(4), **(bad if comm.rank == comm.size - 1 else {}))


def test_run_differing_on_one_rank(comm):
    lj = hf.particles.LennardJones(comm, hf.particles.initial_state(4))
    last = comm.size - 1
    with pytest.raises(TypeError, match=r"steps must be a 64-bit integer, got 2.5"):
        lj.run(2.5 if comm.rank == last else 2)
    if comm.size > 1:  # with one rank nothing differs
        with pytest.raises(
            ValueError, match=rf"steps, thermo_every and census must be the same .*rank {last}: steps 3"
        ):
            lj.run(3 if comm.rank == last else 2)
    assert lj.run(2)[-1]["step"] == 2  # nothing was left in flight
