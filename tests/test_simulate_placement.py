"""Placements of the flat approaches' Cartesian process grid on the Blue Gene/P torus
(hybridfd.simulate.placement): the torus-matched one has every neighbour in the node or one
hop away, BG/P's own reordering is recognised where its code finds it, XYZT is BG/P's
default order."""

from __future__ import annotations

import numpy as np
import pytest

from hybridfd.decomposition import automatic_grid
from hybridfd.mapping.metrics import evaluate
from hybridfd.mapping.patterns import stencil_pattern
from hybridfd.mapping.topology import Topology
from hybridfd.simulate import placement


def test_torus_matched_by_hand() -> None:
    # A 4x2x1 process grid on 2x1x1 nodes of 4 cores. Two matches: the grid's x on the
    # torus' x with a 2x2x1 block, or the grid's y on the torus' x with the node's 4 cores
    # along the grid's x (4x1x1); the block on one axis is preferred, as BG/P's "nofold".
    # Positions in C order: (x, y) = (0,0) (0,1) (1,0) (1,1) ...; y is the node, x the core.
    slots = placement.torus_matched((4, 2, 1), Topology(dims=(2, 1, 1), cores_per_node=4))
    assert slots.tolist() == [0, 4, 1, 5, 2, 6, 3, 7]
    # A 4x4x1 grid on 2x2x1 nodes matches only with a 2x2x1 block: node (x // 2, y // 2),
    # core (x % 2) * 2 + y % 2.
    slots = placement.torus_matched((4, 4, 1), Topology(dims=(2, 2, 1), cores_per_node=4))
    x, y = np.indices((4, 4)).reshape(2, -1)
    assert slots.tolist() == ((x // 2 + 2 * (y // 2)) * 4 + (x % 2) * 2 + y % 2).tolist()


@pytest.mark.parametrize(("cores", "grid", "block_axes"), [(8192, (32, 16, 16), 1), (16384, (32, 32, 16), 2)])
def test_torus_matched_puts_every_neighbour_one_hop_away(cores: int, grid: tuple, block_axes: int) -> None:
    topology = Topology.preset("bluegene-p", cores)
    slots = placement.torus_matched(grid, topology)
    assert np.unique(slots).size == cores
    metrics = evaluate(stencil_pattern((192,) * 3, grid, radius=2), topology, slots)
    assert metrics.dilation == 1
    # Off-node messages each cross one link: hop-bytes equal the off-node bytes.
    assert metrics.hop_bytes == metrics.off_node_bytes
    block = placement._blocks(grid, topology)[0][1]
    assert sum(b > 1 for b in block) == block_axes
    # BG/P's MPI_Cart_create finds the block on one axis only (its "nofold").
    assert placement.bluegene_reorders(grid, topology) is (block_axes == 1)


def test_a_grid_that_is_not_the_torus_times_a_block_is_refused() -> None:
    with pytest.raises(ValueError, match="not the node grid"):
        placement.torus_matched((128, 8, 8), Topology.preset("bluegene-p", 8192))
    with pytest.raises(ValueError, match="does not fill"):
        placement.torus_matched((16, 16, 16), Topology.preset("bluegene-p", 8192))


def test_xyzt_is_bluegene_default_order() -> None:
    topology = Topology.preset("bluegene-p", 8192)
    slots = placement.xyzt(8192, topology)
    nodes, cores = slots // 4, slots % 4
    assert nodes[:3].tolist() == [0, 1, 2] and cores[:3].tolist() == [0, 0, 0]
    assert topology.node_coords(nodes[8]).tolist() == [0, 1, 0]  # x has 8 nodes
    assert nodes[2048] == 0 and cores[2048] == 1
    assert np.unique(slots).size == 8192


def test_rank_slots_names() -> None:
    topology = Topology.preset("bluegene-p", 8192)
    assert placement.rank_slots("packed", (32, 16, 16), topology) is None
    assert len(placement.rank_slots("torus-matched", (32, 16, 16), topology)) == 8192
    with pytest.raises(ValueError, match="unknown placement"):
        placement.rank_slots("snake", (32, 16, 16), topology)


def test_bluegene_cart_map_by_hand() -> None:
    # A 4x2x2 grid on 2x2x1 nodes of 4 cores (BG/P's axes Z, Y, X = 1, 2, 2). BG/P tries
    # the node's cores T in X (extents 1, 2, 8), then in Y (1, 8, 2): neither holds 4, 2,
    # 2; then in Z (4, 2, 2), which matches, ties kept in BG/P's order: the grid's axes
    # are (Z * 4 + t, Y, X), rank = t * 4 + y * 2 + x on node x + 2 y.
    topology = Topology(dims=(2, 2, 1), cores_per_node=4)
    slots = placement.bluegene_cart_map((4, 2, 2), topology)
    t, y, x = np.indices((4, 2, 2)).reshape(3, -1)
    assert slots.tolist() == ((x + 2 * y) * 4 + t).tolist()
    assert placement.bluegene_reorders((4, 2, 2), topology)


def test_bluegene_cart_map_pairs_axes_as_bluegene_does() -> None:
    # 8,192 cores: 32x16x16 on 8x16x16 nodes. T goes into X (8 x 4 = 32, tried first);
    # BG/P's extents Z, Y, X*4 = 16, 16, 32 sorted by a stable bubble sort pair the grid's
    # second axis with Z and its third with Y (torus_matched pairs them the other way
    # round: the same links by the torus' symmetry, other slots).
    topology = Topology.preset("bluegene-p", 8192)
    grid = (32, 16, 16)
    slots = placement.bluegene_cart_map(grid, topology)
    coords = topology.node_coords(slots // 4)
    rank = np.ravel_multi_index
    assert coords[rank((0, 0, 1), grid)].tolist() == [0, 1, 0]  # third axis: Y
    assert coords[rank((0, 1, 0), grid)].tolist() == [0, 0, 1]  # second axis: Z
    assert coords[rank((4, 0, 0), grid)].tolist() == [1, 0, 0]  # first: X, 4 cores a node
    assert (slots[[rank((c, 0, 0), grid) for c in range(4)]] % 4).tolist() == [0, 1, 2, 3]
    assert not np.array_equal(slots, placement.torus_matched(grid, topology))


@pytest.mark.parametrize(
    ("cores", "grid", "matched"),
    [
        (1024, (16, 8, 8), True),  # 4x8x8 mesh: BG/P's map ignores periods and wrap
        (2048, (16, 16, 8), False),  # 8x8x8: would need a 2x2x1 block
        (4096, (16, 16, 16), False),  # 8x8x16
        (8192, (32, 16, 16), True),  # 8x16x16: 4 cores along X
        (16384, (32, 32, 16), False),  # 16x16x16
    ],
)
def test_bluegene_p_at_the_driver_grids(cores: int, grid: tuple, matched: bool) -> None:
    topology = Topology.preset("bluegene-p", cores)
    assert automatic_grid((192,) * 3, cores) == grid  # the process grid hybridfd-bench cuts
    assert placement.bluegene_reorders(grid, topology) is matched
    slots = np.asarray(placement.rank_slots("bluegene-p", grid, topology))
    assert np.unique(slots).size == cores
    if not matched:
        assert slots.tolist() == placement.xyzt(cores, topology).tolist()
        return
    assert slots.tolist() == placement.bluegene_cart_map(grid, topology).tolist()
    # Every neighbour that is not across the process grid's periodic wrap is in the node or
    # one hop away (on the mesh too); across the wrap, one hop on a torus, the whole axis on
    # the mesh.
    nodes = topology.node_coords(slots // 4).reshape(*grid, 3)
    for axis in range(3):
        step = np.abs(np.diff(nodes, axis=axis)).sum(axis=-1)
        assert step.max() == 1
    metrics = evaluate(stencil_pattern((192,) * 3, grid, radius=2), topology, slots)
    assert metrics.dilation == (1 if all(topology.wrap) else max(topology.dims) - 1)
