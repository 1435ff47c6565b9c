"""Metrics on tiny tori and meshes, computed by hand; and the patterns' bytes from the halo plan's faces."""

from __future__ import annotations

import numpy as np
import pytest

from hybridfd.mapping import CommPattern, Topology, cannon_pattern, evaluate, stencil_pattern
from hybridfd.mapping.metrics import hop_vectors, link_count, link_loads


def pattern(src, dst, nbytes, grid) -> CommPattern:
    return CommPattern(grid, np.array(src), np.array(dst), np.array(nbytes), "test")


def test_ring_of_four_with_wrap():
    # Cannon on a 1x4 grid: p -> p+1 (mod 4), 10 bytes each; one core per node on a 4-node ring.
    ring = Topology((4, 1, 1), 1, wrap=(True, True, True))
    m = evaluate(cannon_pattern((1, 4), 10), ring, np.arange(4))
    assert m.total_bytes == 40 and m.off_node_bytes == 40
    assert m.hop_bytes == 40 and m.hop_bytes_per_direction == (40, 0, 0)
    # Each message uses the + link of its source node; 8 directed links on the ring.
    assert m.max_link_load == 10 and m.mean_link_load == 40 / 8
    assert m.dilation == 1 and m.mean_dilation == 1.0


def test_line_of_four_without_wrap():
    # On a mesh the message 3 -> 0 goes back over three links, which the others also use.
    line = Topology((4, 1, 1), 1, wrap=(False, False, False))
    m = evaluate(cannon_pattern((1, 4), 10), line, np.arange(4))
    assert m.hop_bytes == 10 * 3 + 30 and m.dilation == 3
    assert m.max_link_load == 10  # + links carry 10 each, - links 10 each
    assert link_count(line).tolist() == [6, 0, 0]
    assert m.mean_link_load == 60 / 6
    # Map position 3 to node 1 and 1 to node 3: messages 0->3, 3->2, 2->1, 1->0 in node terms.
    m2 = evaluate(cannon_pattern((1, 4), 10), line, np.array([0, 3, 2, 1]))
    loads = link_loads(line, np.array([0, 3, 2, 1]), np.array([3, 2, 1, 0]), np.full(4, 10.0))
    assert loads[0 * 6 + 1] == 10 and loads[1 * 6 + 1] == 10 and loads[2 * 6 + 1] == 10  # 0->3 over + links
    assert loads[3 * 6 + 0] == 10 and loads[2 * 6 + 0] == 10 and loads[1 * 6 + 0] == 10  # the rest over - links
    assert m2.hop_bytes == 60 and m2.max_link_load == 10


def test_half_way_round_goes_the_positive_way_but_from_the_middle_to_zero():
    """SimGrid's TORUS cluster's rule (TorusZone::get_local_route), so that the mapping's
    routes are the simulated torus's."""
    ring = Topology((4, 1, 1), 1)
    hops = hop_vectors(ring, np.array([0, 2, 1, 3, 1]), np.array([2, 0, 0, 1, 3]))
    assert hops[:, 0].tolist() == [2, -2, -1, 2, 2]
    pair = Topology((2, 1, 1), 1)  # on two nodes: up from 0, down from 1, as on a line
    assert hop_vectors(pair, np.array([0, 1]), np.array([1, 0]))[:, 0].tolist() == [1, -1]


def test_dimension_order_routing_on_a_2x2x2_torus():
    torus = Topology((2, 2, 2), 1)
    # Node 0 (0,0,0) to node 7 (1,1,1): an X link from node 0, a Y link from node 1, a Z link from node 3.
    loads = link_loads(torus, np.array([0]), np.array([7]), np.array([5.0]))
    assert np.flatnonzero(loads).tolist() == [0 * 6 + 0 * 2 + 1, 1 * 6 + 1 * 2 + 1, 3 * 6 + 2 * 2 + 1]
    assert (loads[loads > 0] == 5).all()
    m = evaluate(pattern([0, 1], [1, 0], [5, 7], (2,)), torus, np.array([0, 7]))
    assert m.hop_bytes == 3 * 12 and m.hop_bytes_per_direction == (12, 12, 12) and m.dilation == 3


def test_messages_inside_a_node_cross_no_link():
    topo = Topology((2, 1, 1), 2, wrap=(False, False, False))
    m = evaluate(cannon_pattern((1, 4), 10), topo, np.arange(4))
    # 0->1 and 2->3 stay on a node; 1->2 and 3->0 cross the one link each way.
    assert m.off_node_bytes == 20 and m.hop_bytes == 20 and m.max_link_load == 10
    assert m.mean_link_load == 20 / 2


def test_link_cost_weighs_directions():
    topo = Topology((2, 2, 1), 1, wrap=(False, False, False), link_bandwidth=(2.0, 1.0, 1.0))
    m = evaluate(pattern([0, 0], [1, 2], [10, 10], (4,)), topo, np.arange(4))
    assert m.hop_bytes_per_direction == (10, 10, 0)
    # Y links are half as fast: a byte over Y costs two bytes over X.
    assert m.weighted_hop_bytes == 10 + 2 * 10
    assert m.max_link_cost == 20


def test_stencil_faces_are_the_halo_plans():
    # 10 points over 3 boxes: 4, 3, 3. Radius 2, complex128 (16 bytes), 3 grids.
    p = stencil_pattern((10, 6, 8), (3, 2, 1), periodic=(True, False, True), radius=2, itemsize=16, grids=3)
    per_point = 2 * 16 * 3
    src, dst, nbytes = p.src.tolist(), p.dst.tolist(), p.nbytes.tolist()
    messages = dict(zip(zip(src, dst, strict=True), nbytes, strict=True))
    # Position 0 is box (0, 0, 0) with extent (4, 3, 8); its x faces are 3*8 points.
    assert messages[(0, 2)] == 3 * 8 * per_point  # x+ neighbour (1, 0, 0)
    assert messages[(0, 4)] == 3 * 8 * per_point  # x- neighbour wraps to (2, 0, 0)
    assert messages[(0, 1)] == 4 * 8 * per_point  # y+ neighbour (0, 1, 0)
    assert messages[(2, 3)] == 3 * 8 * per_point  # box (1, 0, 0) has extent (3, 3, 8)
    # y is not periodic: no message from y=0 downwards; z has one box: a copy, no message.
    assert (1, 0) in messages and all(s != d for s, d in zip(src, dst, strict=True))
    assert len(src) == 6 * 2 + 6 * 1  # x: two per box; y: one per box (an edge each)


def test_cannon_pattern_sends_right_and_up():
    p = cannon_pattern((2, 3), 8)
    pairs = sorted(zip(p.src.tolist(), p.dst.tolist(), strict=True))
    assert (0, 1) in pairs and (2, 0) in pairs and (0, 3) in pairs and (3, 0) in pairs
    assert len(pairs) == 12 and (p.nbytes == 8).all()


def test_stencil_pattern_rejects_a_grid_finer_than_the_domain():
    with pytest.raises(ValueError, match="cannot be cut"):
        stencil_pattern((4, 4, 4), (8, 1, 1))
