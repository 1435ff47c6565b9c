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
- :func:`bluegene_p` (placement ``bluegene-p``): what Blue Gene/P's MPI_Cart_create
  does in virtual mode with a process grid of all the partition's cores, at any size:
  :func:`bluegene_cart_map`, its "nofold" match, where that finds one, else XYZT.

What BG/P's code does, read in IBM's MPICH2 for BG/P (src/comm/topo/, IBM 2007-2008, in
a public copy of the sources): ``MPID_Cart_map`` (mpid_cart_map.c)
takes the communicator's physical box from the nodes' coordinates
(mpidi_physical_cart.c: T, Z, Y, X extents, T the node's cores) and tries
``MPIDI_Cart_map_nofold``, then ``MPIDI_Cart_map_fold``; if both fail it calls MPICH's
``MPIR_Cart_map`` (no reordering). Neither looks at ``periods`` nor at whether the
partition's links wrap: **below 512 nodes, where the partition is a mesh (1,024 cores =
256 nodes, 4x8x8), BG/P reorders exactly as on a torus**, whenever the grid matches. So
at 1,024 cores the driver's 16x8x8 grid is matched (the node's 4 cores along the 16);
each neighbour is then in the node or one hop away, except across the periodic wrap,
which on a mesh crosses the whole axis. For a grid of as many ranks as the partition has
cores, nofold's "exact inclusion" (a grid smaller than the partition) does not apply and
it embeds T into one spatial axis (X, then Y, then Z: the first that matches), sorts
both the grid's and the box's three extents by size (a stable bubble sort, decreasing)
and pairs them; the fold (mpidi_cart_map_fold.c) halves one grid axis for 2 cores per
node, which leaves twice the grid points the nodes have, and fails. With the driver's
grids (``automatic_grid``) that is: 1,024 cores 16x8x8 matched; 2,048 (16x16x8 on 8x8x8)
and 4,096 (16x16x16 on 8x8x16) not (a 2x2x1 block would be needed), so XYZT; 8,192
(32x16x16 on 8x16x16) matched; 16,384 (32x32x16 on 16x16x16) not, so XYZT.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from hybridfd.mapping.topology import Topology

PLACEMENTS = ("packed", "torus-matched", "xyzt", "bluegene-p")


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
    onto the partition: only by embedding the node's cores into one axis ("nofold"; its
    "fold" halves an axis for 2 cores per node and cannot place a grid of as many ranks
    as the partition has cores in virtual mode): :func:`bluegene_cart_map` finds a match."""
    return bluegene_cart_map(grid, topology) is not None


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


def _sorted_decreasing(dims: Sequence[int]) -> list[int]:
    """``MPIDI_Cart_dims_sort``: the axes by decreasing extent, ties in their order (a
    bubble sort that swaps only a smaller before a larger)."""
    return sorted(range(len(dims)), key=lambda a: -dims[a])


def bluegene_cart_map(grid: Sequence[int], topology: Topology) -> np.ndarray | None:
    """``slots[p]`` for position p of ``grid`` (C order) as Blue Gene/P's MPI_Cart_create
    places it in virtual mode ("nofold", mpidi_cart_map_nofold.c: the node's cores T
    embedded into one spatial axis), or None where BG/P's code finds no such match and
    does not reorder. ``grid`` fills the partition's cores (the fold then fails: module
    docstring)."""
    grid = tuple(int(g) for g in grid)
    if int(np.prod(grid)) != topology.cores:
        raise ValueError(f"process grid {grid} does not fill the {topology.cores} cores of {topology.dims}")
    axes = [a for a in range(len(grid)) if grid[a] > 1]  # MPIDI_VirtualCart_init drops extents of 1
    virtual = [grid[a] for a in axes]
    if len(virtual) < 2:
        raise ValueError(f"process grid {grid}: BG/P maps 1D grids by its snake map, not modelled here")
    cores = topology.cores_per_node
    # BG/P's spatial axes in its order Z, Y, X (coord[1..3]); hybridfd's dims are X, Y, Z.
    spatial = [topology.dims[2], topology.dims[1], topology.dims[0]]
    nd = len(virtual)
    for embed in (2, 1, 0):  # T into X, then Y, then Z (its loop over i = 3, 2, 1)
        physical = list(spatial)
        physical[embed] *= cores
        # try_permute_match sorts only the first nd of the physical extents.
        vir_perm, phy_perm = _sorted_decreasing(virtual), _sorted_decreasing(physical[:nd])
        if all(virtual[v] <= physical[p] for v, p in zip(vir_perm, phy_perm, strict=True)):
            break
    else:
        return None
    if embed >= nd:  # the rank coordinates below come from the first nd physical axes only
        return None
    slot = np.arange(topology.cores, dtype=np.int64)
    node, t = slot // cores, slot % cores
    x, y, z = topology.node_coords(node).T
    temp = [z, y, x]
    temp[embed] = temp[embed] * cores + t
    position = [np.zeros_like(slot) for _ in grid]
    for v, p in zip(vir_perm, phy_perm, strict=True):
        position[axes[v]] = temp[p]
    rank = np.ravel_multi_index(position, grid)  # MPIDI_Cart_map_coord_to_rank: C order
    slots = np.empty_like(slot)
    slots[rank] = slot
    return slots


def bluegene_p(grid: Sequence[int], topology: Topology) -> np.ndarray:
    """``slots[p]`` where Blue Gene/P's MPI_Cart_create puts position p of ``grid``:
    :func:`bluegene_cart_map` where it matches, else the default order, :func:`xyzt`."""
    matched = bluegene_cart_map(grid, topology)
    return matched if matched is not None else xyzt(int(np.prod(grid)), topology)


def rank_slots(name: str, grid: Sequence[int], topology: Topology) -> tuple[int, ...] | None:
    """The ``rank_slots`` of placement ``name`` (None: packed, the topology's default)."""
    if name == "packed":
        return None
    if name == "torus-matched":
        return tuple(int(s) for s in torus_matched(grid, topology))
    if name == "xyzt":
        return tuple(int(s) for s in xyzt(int(np.prod(grid)), topology))
    if name == "bluegene-p":
        return tuple(int(s) for s in bluegene_p(grid, topology))
    raise ValueError(f"unknown placement {name!r}; known: {', '.join(PLACEMENTS)}")
