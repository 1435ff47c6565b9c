"""Strategies: every one returns a permutation of the occupied slots; the heuristic never loses
to its initial mapping; small cases checked by hand; bad input names the value."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hybridfd.mapping import Topology, cannon_pattern, compute_mapping, stencil_pattern, strategy_names
from hybridfd.mapping.metrics import weighted_hop_bytes

topologies = st.builds(
    Topology,
    dims=st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 3)),
    cores_per_node=st.integers(1, 4),
    wrap=st.tuples(st.booleans(), st.booleans(), st.booleans()),
    link_bandwidth=st.tuples(st.sampled_from([1.0, 1.3]), st.sampled_from([1.0, 1.3]), st.sampled_from([1.0, 1.3])),
)


@st.composite
def problems(draw):
    """A topology, and a 2D (Cannon) or 3D (stencil) grid with at most as many processes as cores."""
    topology = draw(topologies)
    if draw(st.booleans()):
        grid = draw(st.tuples(st.integers(1, 6), st.integers(1, 6), st.integers(1, 4)))
        pattern = stencil_pattern((24, 24, 24), grid, draw(st.tuples(*[st.booleans()] * 3)), radius=2)
    else:
        pattern = cannon_pattern(draw(st.tuples(st.integers(1, 8), st.integers(1, 8))), 100)
    if pattern.processes > topology.cores:
        topology = Topology(topology.dims, -(-pattern.processes // topology.nodes), topology.wrap)
    return pattern, topology


@settings(deadline=None, max_examples=60)
@given(problems(), st.sampled_from(strategy_names()))
def test_every_strategy_returns_a_permutation_of_the_occupied_slots(problem, strategy):
    pattern, topology = problem
    mapping = compute_mapping(strategy, pattern, topology)
    assert mapping.slots.shape == (pattern.processes,)
    assert np.array_equal(np.sort(mapping.slots), topology.occupied_slots(pattern.processes))
    ranks = mapping.rank_of_position()
    assert np.array_equal(np.sort(ranks), np.arange(pattern.processes))


@settings(deadline=None, max_examples=60)
@given(problems())
def test_the_heuristic_never_returns_a_mapping_worse_than_its_initial_one(problem):
    pattern, topology = problem
    initial = compute_mapping("packed", pattern, topology)
    heuristic = compute_mapping("cp2k-heuristic", pattern, topology)
    assert weighted_hop_bytes(pattern, topology, heuristic.slots) <= weighted_hop_bytes(
        pattern, topology, initial.slots
    )
    if heuristic.details["kept"] == "hilbert":
        assert (
            heuristic.details["hilbert_weighted_hop_bytes"][heuristic.details["direction_order"]]
            < (heuristic.details["initial_weighted_hop_bytes"])
        )
    else:
        assert np.array_equal(heuristic.slots, initial.slots)


def test_packed_round_robin_and_folded_by_hand():
    topology = Topology((3, 1, 1), 2)
    pattern = cannon_pattern((2, 3))
    assert compute_mapping("packed", pattern, topology).slots.tolist() == [0, 1, 2, 3, 4, 5]
    # Round-robin: one core of each node per round: nodes 0, 1, 2, then 0, 1, 2 again.
    assert compute_mapping("round-robin", pattern, topology).slots.tolist() == [0, 2, 4, 1, 3, 5]
    # Folded: the second round walks the nodes backwards.
    assert compute_mapping("folded", pattern, topology).slots.tolist() == [0, 2, 4, 5, 3, 1]


def test_hilbert_lays_the_curve_along_the_node_order():
    topology = Topology((2, 2, 1), 1)
    pattern = cannon_pattern((2, 2))
    # Curve through the 2x2 grid: (0,0), (0,1), (1,1), (1,0) = positions 0, 1, 3, 2.
    # Node order XYZ: nodes 0, 1, 2, 3; YXZ: nodes 0, 2, 1, 3.
    assert compute_mapping("hilbert", pattern, topology).slots.tolist() == [0, 1, 3, 2]
    from hybridfd.mapping.strategies import hilbert

    slots, details = hilbert(pattern, topology, "YXZ")
    assert slots.tolist() == [0, 2, 3, 1] and details == {"direction_order": "YXZ"}
    with pytest.raises(ValueError, match="'XXY' must be a permutation of XYZ"):
        hilbert(pattern, topology, "XXY")


def test_the_heuristic_prefers_the_direction_order_with_cheap_links():
    # Y links are slow: the Hilbert curve laid along a node order that keeps traffic off Y wins.
    topology = Topology((4, 4, 1), 4, link_bandwidth=(1.3, 1.0, 1.3))
    pattern = cannon_pattern((8, 8), 1000)
    mapping = compute_mapping("cp2k-heuristic", pattern, topology)
    scores = mapping.details["hilbert_weighted_hop_bytes"]
    assert set(scores) == {"XYZ", "YXZ"}  # Z has one node: orders differing only there are one
    assert mapping.details["kept"] in ("hilbert", "packed")
    best = min(scores.values())
    assert weighted_hop_bytes(pattern, topology, mapping.slots) == min(
        best, mapping.details["initial_weighted_hop_bytes"]
    )


def test_graph_strategies_fill_every_node_exactly():
    topology = Topology((3, 2, 1), 4, wrap=(False, False, False))
    pattern = stencil_pattern((30, 30, 30), (4, 3, 2), radius=1)
    for strategy in ("greedy", "recursive-bisection", "metis"):
        nodes = compute_mapping(strategy, pattern, topology).nodes
        assert np.bincount(nodes, minlength=6).tolist() == [4] * 6, strategy


def test_graph_strategies_keep_neighbours_on_a_node_when_they_can():
    # 2 nodes of 8 cores, a 4x4 grid: the best cut splits it into two 2x4 halves (8 messages cross).
    topology = Topology((2, 1, 1), 8, wrap=(False, False, False))
    pattern = cannon_pattern((4, 4), 1)
    for strategy in ("greedy", "recursive-bisection", "metis"):
        mapping = compute_mapping(strategy, pattern, topology)
        assert mapping.metrics.off_node_bytes == 8, strategy


def test_partial_topologies_use_only_the_occupied_slots():
    # Six ranks on a host-like topology whose second node has only two ranks.
    topology = Topology((2, 1, 1), 4, rank_slots=(0, 1, 2, 3, 4, 5))
    pattern = cannon_pattern((2, 3))
    for strategy in strategy_names():
        slots = compute_mapping(strategy, pattern, topology).slots
        assert sorted(slots.tolist()) == [0, 1, 2, 3, 4, 5], strategy


def test_bad_input_names_the_value():
    pattern = stencil_pattern((32, 32, 32), (4, 4, 4))
    with pytest.raises(ValueError, match="unknown mapping strategy 'spiral'; known strategies: packed"):
        compute_mapping("spiral", pattern, Topology((4, 4, 4), 1))
    with pytest.raises(ValueError, match="64 processes do not fit topology 'small': it has only 32 cores"):
        compute_mapping("hilbert", pattern, Topology((2, 2, 2), 4, name="small"))
