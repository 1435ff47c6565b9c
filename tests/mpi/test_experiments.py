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


def test_profile_traces_every_rank_and_writes_chrome_traces(comm, tmp_path):
    import json
    from pathlib import Path

    from hybridfd.experiments import profile
    from hybridfd.experiments._stencil import variant

    directory = comm.bcast(str(tmp_path), root=0)
    params = {
        "shape": 12,
        "dtype": "complex128",
        "grids": 3,
        "applies": 2,
        "chrome_directory": directory,
        "variants": [variant("flat-original"), variant("flat-optimized")],
    }
    numbers = profile.worker(comm, params)
    if comm.rank != 0:
        assert numbers is None
        return
    for found in numbers["variants"]:
        assert found["bit_identical_to_flat_original"]
        assert [(lane["rank"], lane["thread"]) for lane in found["lanes"]] == [(r, 0) for r in range(comm.size)]
        for lane in found["lanes"]:
            assert lane["dropped"] == 0 and lane["kind"].count("apply") == (2 if lane["thread"] == 0 else 0)
            assert 0 < lane["communication"] + lane["computation"] <= 1 + 1e-9
        chrome = json.loads(Path(found["chrome_trace"]).read_text())
        assert {e["pid"] for e in chrome["traceEvents"] if e["ph"] == "X"} == set(range(comm.size))
