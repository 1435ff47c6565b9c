"""Experiment building blocks against the real decomposition and communicators."""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

import hybridfd as hf
from hybridfd.experiments.cannon import cannon
from hybridfd.experiments.gustafson import internode_bytes_per_node
from hybridfd.experiments.ring import node_layout

RANKS = (4,)


def test_exact_volume_matches_the_decomposition(comm):
    for shape in ((12, 10, 9), (16, 16, 16)):
        dec = hf.Decomposition(hf.Domain(shape), comm)
        extent = dec.box().extent
        mine = 0
        for axis in range(3):
            if dec.grid[axis] == 1:
                continue
            face = 2 * int(np.prod([extent[b] for b in range(3) if b != axis])) * 8
            mine += face * sum(1 for n in dec.neighbours(axis) if n != MPI.PROC_NULL)
        _, _, between = internode_bytes_per_node(shape, comm.size, comm.size, 2, 8)
        assert comm.allreduce(mine) == between
        # Ranks are in MPI's Cartesian order (z fastest), which the count assumes.
        px, py, pz = dec.grid
        x, y, z = dec.coords()
        assert (x * py + y) * pz + z == dec.rank


def test_cannon_runs_on_a_reordered_communicator(comm):
    reordered = comm.Split(0, comm.size - 1 - comm.rank)  # what a mapping hands in
    numbers = cannon(reordered, [64, 1024], work=1, matrix=4, iterations=2, repeats=1)
    if reordered.rank == 0:
        assert int(np.prod(numbers["dims"])) == comm.size
        assert all(t > 0 for t in numbers["seconds_per_iteration"].values())
    else:
        assert numbers is None
    reordered.Free()


def test_ring_nodes_from_shared_memory_and_from_groups(comm):
    node, local, k = node_layout(comm, None)  # one machine: one node
    assert (node, local, k) == (0, comm.rank, comm.size)
    node, local, k = node_layout(comm, 1)
    assert (node, local, k) == (comm.rank, 0, 1)
