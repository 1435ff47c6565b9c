"""Apply under every mapping strategy equals the numpy reference; ranks really move; bad input
raises on every rank. Run under mpiexec by tests/test_mpi_suites.py."""

from __future__ import annotations

import numpy as np
import pytest
from mpi4py import MPI

import hybridfd as hf
from hybridfd.mapping import Topology, reorder_communicator, stencil_pattern, strategy_names

RANKS = (4, 8)

SIZE = MPI.COMM_WORLD.size
# A fake machine of 2-core nodes, so that strategies really permute the ranks.
MULTI_NODE = Topology((2, SIZE // 4, 1), 2, wrap=(True, False, False), name="fake-2-core-nodes")
TOPOLOGIES = {"host": "host", "multi-node": MULTI_NODE}


@pytest.mark.parametrize("topology", TOPOLOGIES)
@pytest.mark.parametrize("strategy", strategy_names())
def test_apply_under_a_mapping_matches_reference(comm, strategy, topology):
    dom = hf.Domain((13, 10, 9), periodic=(True, False, True))
    dec = hf.Decomposition(dom, comm, mapping=strategy, topology=TOPOLOGIES[topology])
    stencil = hf.Stencil.laplace(radius=2, spacing=(0.2, 0.3, 0.25))
    batch = np.random.default_rng(7).standard_normal((3, *dom.shape))
    op = hf.Operator(dec, stencil, approach="flat-optimized")
    out = dec.gather(op.apply(dec.scatter(batch if dec.rank == 0 else None)))
    if dec.rank == 0:
        np.testing.assert_array_equal(out, hf.reference.apply(stencil, batch, periodic=dom.periodic))
    # The rank at position p is the one the mapping put there; its neighbours are the pattern's.
    info = dec.mapping
    assert info.strategy == strategy and info.rank_order[dec.rank] == comm.rank
    pattern = stencil_pattern(dom.shape, dec.grid, dom.periodic)
    for axis in range(3):
        for side, neighbour in zip((-1, 1), dec.neighbours(axis), strict=True):
            coords = list(dec.coords())
            coords[axis] += side
            if dom.periodic[axis]:
                coords[axis] %= dec.grid[axis]
            inside = 0 <= coords[axis] < dec.grid[axis]
            assert neighbour == (dec.comm.Get_cart_rank(coords) if inside else MPI.PROC_NULL)
            if inside and neighbour != dec.rank:
                assert ((pattern.src == dec.rank) & (pattern.dst == neighbour)).any()
    config = op.config["mapping"]
    assert config["strategy"] == strategy and config["hop_bytes"] == dec.mapping_metrics(2).hop_bytes
    assert config["total_bytes"] == 2 * info.metrics.total_bytes  # radius 2 doubles every face


def test_round_robin_on_multi_node_topology_permutes_ranks(comm):
    dom = hf.Domain((16, 16, 16))
    dec = hf.Decomposition(dom, comm, mapping="round-robin", topology=MULTI_NODE)
    assert dec.mapping.reordered
    nodes = SIZE // 2
    # Round-robin deals positions to nodes in turn: position p runs on node p % nodes, core p // nodes.
    expected = [(p % nodes) * 2 + p // nodes for p in range(SIZE)]
    assert list(dec.mapping.rank_order) == expected
    assert dec.rank == expected.index(comm.rank)


def test_no_mapping_keeps_the_communicator_order(comm):
    dec = hf.Decomposition(hf.Domain((16, 16, 16)), comm)
    assert dec.mapping is None and dec.rank == comm.rank
    op = hf.Operator(dec, hf.Stencil.laplace(1, 1.0))
    assert op.config["mapping"] is None


def test_reorder_communicator_for_cannon(comm):
    grid = (2, SIZE // 2)
    reordered, info = reorder_communicator(comm, grid, "hilbert", MULTI_NODE)
    try:
        assert info.rank_order[reordered.rank] == comm.rank
        assert info.mapping.pattern.name == "cannon"
        assert sorted(info.rank_order) == list(range(SIZE))
    finally:
        reordered.Free()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mapping": "spiral"}, "unknown mapping strategy 'spiral'"),
        ({"mapping": "hilbert", "topology": Topology((1, 1, 1), 2, name="tiny")}, "do not fit topology 'tiny'"),
        ({"mapping": "hilbert", "topology": "bgq"}, "unknown topology 'bgq'"),
    ],
)
def test_bad_input_raises_on_every_rank(comm, kwargs, message):
    with pytest.raises(ValueError, match=message):
        hf.Decomposition(hf.Domain((16, 16, 16)), comm, **kwargs)
    comm.Barrier()  # every rank got here: nothing hangs


def test_bad_topology_file_raises_on_every_rank(comm, tmp_path_factory):
    path = None
    if comm.rank == 0:
        path = tmp_path_factory.mktemp("topology") / "negative.toml"
        path.write_text("dims = [2, -2, 1]\ncores_per_node = 4\n")
    path = comm.bcast(path, root=0)
    with pytest.raises(ValueError, match=r"dims\[1\]: -2 is less than the minimum of 1"):
        hf.Decomposition(hf.Domain((16, 16, 16)), comm, mapping="packed", topology=str(path))
