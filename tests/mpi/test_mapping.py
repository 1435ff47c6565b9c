"""Apply under every mapping strategy equals the numpy reference; ranks really move; bad input
raises on every rank. Run under mpiexec by tests/test_mpi_suites.py."""

from __future__ import annotations

import numpy as np
import pytest
from _cases import general_stencil
from mpi4py import MPI

import hybridfd as hf
from hybridfd.mapping import Topology, reorder_communicator, stencil_pattern, strategy_names

RANKS = (4, 8)

SIZE = MPI.COMM_WORLD.size
# A fake machine of 2-core nodes, so that strategies really permute the ranks.
MULTI_NODE = Topology((2, SIZE // 4, 1), 2, wrap=(True, False, False), name="fake-2-core-nodes")
TOPOLOGIES = {"host": "host", "multi-node": MULTI_NODE}
# The same machine with the first and last rank trading cores: on it every strategy but
# packed (which keeps the order by definition) renumbers the ranks of 9x20x7.
SWAPPED = Topology(
    (2, SIZE // 4, 1),
    2,
    wrap=(True, False, False),
    name="fake-2-core-nodes-swapped",
    rank_slots=(SIZE - 1, *range(1, SIZE - 1), 0),
)
REORDERING = [strategy for strategy in strategy_names() if strategy != "packed"]


@pytest.mark.parametrize("topology", TOPOLOGIES)
@pytest.mark.parametrize("strategy", strategy_names())
def test_apply_under_a_mapping_matches_reference(comm, strategy, topology):
    dom = hf.Domain((13, 10, 9), periodic=(True, False, True))
    dec = hf.Decomposition(dom, comm, mapping=strategy, topology=TOPOLOGIES[topology])
    stencil = hf.Stencil.laplace(radius=2, spacing=(0.2, 0.3, 0.25))
    batch = np.random.default_rng(7).standard_normal((3, *dom.shape))
    op = hf.Operator(dec, stencil, approach="flat-optimized")
    out = dec.gather(op.apply(dec.scatter(batch if comm.rank == 0 else None)))
    if comm.rank == 0:
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
    # A general stencil's edge and corner blocks go to the mapped diagonal neighbours.
    general = general_stencil(seed=2, reach=2)
    out = dec.gather(
        hf.Operator(dec, general, approach="flat-optimized").apply(dec.scatter(batch if comm.rank == 0 else None))
    )
    if comm.rank == 0:
        np.testing.assert_array_equal(out, hf.reference.apply(general, batch, periodic=dom.periodic))


def test_round_robin_on_multi_node_topology_permutes_ranks(comm):
    dom = hf.Domain((16, 16, 16))
    dec = hf.Decomposition(dom, comm, mapping="round-robin", topology=MULTI_NODE)
    assert dec.mapping.reordered
    nodes = SIZE // 2
    # Round-robin deals positions to nodes in turn: position p runs on node p % nodes, core p // nodes.
    expected = [(p % nodes) * 2 + p // nodes for p in range(SIZE)]
    assert list(dec.mapping.rank_order) == expected
    assert dec.rank == expected.index(comm.rank)


def renumbered(comm: MPI.Comm, strategy: str) -> tuple[hf.Decomposition, list[int]]:
    """A decomposition of 9x20x7 under ``strategy`` on SWAPPED, and the ranks of ``comm``
    whose Cartesian rank differs, checked to be some (or the tests below prove nothing)."""
    dec = hf.Decomposition(hf.Domain((9, 20, 7)), comm, mapping=strategy, topology=SWAPPED)
    cartesian = comm.allgather(dec.rank)
    moved = [rank for rank in range(SIZE) if cartesian[rank] != rank]
    assert dec.mapping.reordered and moved, cartesian
    return dec, moved


@pytest.mark.parametrize("strategy", REORDERING)
def test_roots_are_ranks_of_the_given_communicator(comm, strategy):
    dec, moved = renumbered(comm, strategy)
    for root in sorted({0, moved[0], SIZE - 1}):
        # Every rank holds different data: the root's, and only the root's, is scattered.
        mine = np.random.default_rng(comm.rank).standard_normal((2, 9, 20, 7))
        expected = np.random.default_rng(root).standard_normal((2, 9, 20, 7))
        local = dec.scatter(mine, root=root)
        np.testing.assert_array_equal(local, expected[(slice(None), *dec.box().slices())])
        back = dec.gather(local, root=root)
        assert (back is None) == (comm.rank != root)
        if comm.rank == root:
            assert back.tobytes() == mine.tobytes()
        single = dec.gather(dec.scatter(mine[1] if comm.rank == root else None, root=root), root=root)
        if comm.rank == root:
            assert single.tobytes() == mine[1].tobytes()


@pytest.mark.parametrize("strategy", ["greedy", "round-robin"])
def test_errors_name_ranks_of_the_given_communicator(comm, strategy):
    dec, moved = renumbered(comm, strategy)
    root = moved[0]
    with pytest.raises(
        TypeError, match=rf"^rank {root}: scatter needs a numpy.ndarray on the root rank, got NoneType$"
    ):
        dec.scatter(dec.zeros() if comm.rank != root else None, root=root)
    with pytest.raises(ValueError, match=rf"^rank {root}: gather: array has shape \(5, 5, 5\)"):
        dec.gather(np.zeros((5, 5, 5)) if comm.rank == root else dec.zeros(), root=root)
    last = SIZE - 1
    with pytest.raises(ValueError, match=rf"^rank {root}: root {SIZE} must be a rank of the communicator"):
        dec.scatter(np.zeros((9, 20, 7)), root=SIZE if comm.rank == root else 0)
    with pytest.raises(
        ValueError, match=rf"root must be the same on every rank, got 0 on rank 0, .*{last} on rank {last}$"
    ):
        dec.scatter(np.zeros((9, 20, 7)), root=last if comm.rank == last else 0)
    with pytest.raises(ValueError, match=rf"ranks 0-{last - 1}: root 0, .*; rank {last}: root {last}, "):
        dec.gather(dec.zeros(), root=last if comm.rank == last else 0)


def rank_list(ranks: list[int]) -> str:
    """Ranks as errors list them: "rank 3" or "ranks 0-2, 5"."""
    runs: list[list[int]] = []
    for rank in ranks:
        if runs and rank == runs[-1][-1] + 1:
            runs[-1].append(rank)
        else:
            runs.append([rank])
    text = ", ".join(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)
    return f"{'rank' if len(ranks) == 1 else 'ranks'} {text}"


def on_every_rank(odd: int, value: object, others: object) -> str:
    """ "<value> on rank <r>" for every rank of the communicator, ``value`` on rank ``odd``."""
    return ", ".join(f"{value if rank == odd else others} on rank {rank}" for rank in range(SIZE))


@pytest.mark.parametrize("strategy", ["greedy", "round-robin"])
def test_apply_and_trace_errors_name_ranks_of_the_given_communicator(comm, strategy):
    """The core's agreements on the arrays, G and the trace buffers, and the Python checks
    that meet them there, name ranks of comm, not of the renumbered dec.comm."""
    dec, moved = renumbered(comm, strategy)
    odd = moved[0]
    mine = comm.rank == odd
    op = hf.Operator(dec, hf.Stencil.laplace(1, 1.0), approach="flat-optimized")
    good = dec.zeros(1)
    with pytest.raises(ValueError, match=rf"^rank {odd}: input array has shape \(1, 1, 1, 1\); this rank's box"):
        op.apply(np.zeros((1, 1, 1, 1)) if mine else good)
    got = on_every_rank(odd, 2, 1)
    with pytest.raises(ValueError, match=rf"^the number of grids G must be the same on every rank, got {got}$"):
        op.apply(dec.zeros(2) if mine else good)
    with pytest.raises(TypeError, match=rf"^rank {odd}: input array has dtype float32; the domain's dtype"):
        op.apply(good.astype(np.float32) if mine else good)
    huge, got = 2**62, on_every_rank(odd, 2**62, 8)
    with pytest.raises(
        ValueError,
        match=rf"^rank {odd}: events per thread {huge} for \d+ threads need more than .*; "
        rf"the events per thread must be the same on every rank, got {got}$",
    ):
        op.start_trace(huge if mine else 8)
    with pytest.raises(ValueError, match=rf"^rank {odd}: events_per_thread 0 must be a positive int"):
        op.start_trace(0 if mine else 8)
    np.testing.assert_array_equal(op.apply(good), good)  # nothing was left half done


@pytest.mark.parametrize("strategy", ["greedy", "round-robin"])
def test_operator_setting_errors_name_ranks_of_the_given_communicator(comm, strategy):
    dec, moved = renumbered(comm, strategy)
    odd = moved[0]
    mine = comm.rank == odd
    with pytest.raises(ValueError, match=rf"^rank {odd}: .*'no-such-schedule'"):
        hf.Operator(
            dec, hf.Stencil.laplace(1, 1.0), approach="flat-optimized", schedule="no-such-schedule" if mine else None
        )
    others = rank_list([rank for rank in range(SIZE) if rank != odd])
    prefix = "the operator setting must be the same on every rank, got "
    # A setting only the core compares (the coefficients), and "auto", which Python agrees on.
    for spacing, approach in ((2.0, "flat-optimized"), (1.0, "auto")):
        with pytest.raises(ValueError, match=f"^{prefix}") as raised:
            hf.Operator(
                dec, hf.Stencil.laplace(1, spacing if mine else 1.0), approach=approach if mine else "flat-optimized"
            )
        groups = str(raised.value).removeprefix(prefix)
        first, second = (f"rank {odd}: ", f"; {others}: ") if odd == 0 else (f"{others}: ", f"; rank {odd}: ")
        assert groups.startswith(first) and second in groups, groups
        if approach == "auto":
            assert f"rank {odd}: approach auto" in groups, groups


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
