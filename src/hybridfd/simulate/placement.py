"""Where Blue Gene/P would have put the flat approaches' ranks (GPAW journal Sect. 3.1:
"BGP supports the MPI_Cart_create function, which tells BGP to reorder the MPI ranks in
order to match the torus network. We make use of this function in all the following").

The simulation places rank r on slot r ("packed": nodes filled one after another, 4 ranks
to a node in virtual mode). Two other placements of a Cartesian process grid (C order:
the last axis fastest, as MPI_Cart_create and the driver number it), both as rank slots
for :class:`hybridfd.mapping.Topology`'s ``rank_slots``:

- :func:`torus_matched`: the process grid as the node grid times a block of
  ``cores_per_node`` ranks per node, each process-grid axis on one torus axis. Every
  neighbour is in the node or one hop away (dilation 1), the wrap of a periodic axis
  included. With the block on one axis (4x1x1) this is what Blue Gene/P's MPI_Cart_create
  does in virtual mode ("nofold": it embeds the node's T dimension into one of the torus
  axes and permutes the axes to match; IBM's MPICH2 for BG/P,
  src/comm/topo/mpidi_cart_map_nofold.c). With the block on two axes (2x2x1, needed for
  32x32x16 ranks on a 16x16x16 torus) BG/P's own code finds no match and does not
  reorder (:func:`bluegene_reorders`); the placement is then what a user's own mapping
  file (BG_MAPPING) could give, not BG/P's default.
- :func:`xyzt`: Blue Gene/P's default rank order without a reordering (BG_MAPPING
  "XYZT": rank r on node (r mod X, r/X mod Y, r/XY mod Z), core r / nodes): consecutive
  ranks on neighbouring nodes, the node's cores in the slowest digit.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from hybridfd.mapping.topology import Topology

PLACEMENTS = ("packed", "torus-matched", "xyzt")


def _blocks(grid: Sequence[int], topology: Topology) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Every (axis permutation, block) with grid[a] = dims[perm[a]] * block[a] and the
    block's ranks one node's cores; blocks on fewer axes first (BG/P's T on one axis)."""
    found = []
    for perm in itertools.permutations(range(3)):
        dims = [topology.dims[perm[a]] for a in range(3)]
        if any(g % d for g, d in zip(grid, dims, strict=True)):
            continue
        block = tuple(g // d for g, d in zip(grid, dims, strict=True))
        if int(np.prod(block)) == topology.cores_per_node:
            found.append((perm, block))
    return sorted(found, key=lambda pb: (sum(b > 1 for b in pb[1]), pb))


def bluegene_reorders(grid: Sequence[int], topology: Topology) -> bool:
    """Whether Blue Gene/P's MPI_Cart_create in virtual mode maps this full-partition grid
    onto the torus: only by embedding the node's cores into one axis ("nofold"; its
    "fold" halves an axis for 2 cores per node and cannot place a grid of as many ranks
    as the partition has cores in virtual mode)."""
    return any(sum(b > 1 for b in block) <= 1 for _, block in _blocks(grid, topology))


def torus_matched(grid: Sequence[int], topology: Topology) -> np.ndarray:
    """``slots[p]`` for position p of ``grid`` (C order): node = position // block on the
    matched torus axes, core = the position's index inside its block (C order)."""
    grid = tuple(int(g) for g in grid)
    if int(np.prod(grid)) != topology.cores:
        raise ValueError(f"process grid {grid} does not fill the {topology.cores} cores of {topology.dims}")
    blocks = _blocks(grid, topology)
    if not blocks:
        raise ValueError(f"process grid {grid} is not the node grid {topology.dims} times one node's block")
    perm, block = blocks[0]
    position = np.indices(grid).reshape(3, -1)
    node_coords = np.empty_like(position)
    for a in range(3):
        node_coords[perm[a]] = position[a] // block[a]
    inner = position % np.asarray(block)[:, None]
    core = (inner[0] * block[1] + inner[1]) * block[2] + inner[2]
    nodes = topology.node_ids(node_coords.T)
    return nodes * topology.cores_per_node + core


def xyzt(ranks: int, topology: Topology) -> np.ndarray:
    """``slots[r]`` of Blue Gene/P's default XYZT order for ``ranks`` = all the cores."""
    if ranks != topology.cores:
        raise ValueError(f"XYZT fills the partition: {ranks} ranks on {topology.cores} cores")
    rank = np.arange(ranks, dtype=np.int64)
    return (rank % topology.nodes) * topology.cores_per_node + rank // topology.nodes


def rank_slots(name: str, grid: Sequence[int], topology: Topology) -> tuple[int, ...] | None:
    """The ``rank_slots`` of placement ``name`` (None: packed, the topology's default)."""
    if name == "packed":
        return None
    if name == "torus-matched":
        return tuple(int(s) for s in torus_matched(grid, topology))
    if name == "xyzt":
        return tuple(int(s) for s in xyzt(int(np.prod(grid)), topology))
    raise ValueError(f"unknown placement {name!r}; known: {', '.join(PLACEMENTS)}")
