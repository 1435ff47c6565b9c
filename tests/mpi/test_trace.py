"""The Tracer under mpiexec: every kind of event appears, events nest per thread (no
overlapping siblings, everything within its rank's apply spans), batch numbers run in
order, a tiny buffer counts what it drops, tracing off records nothing, and the Chrome
trace JSON reads back with the same structure (GPAW journal Sect. 7.1, Fig. 7.1)."""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pytest
from mpi4py import MPI

import hybridfd as hf
from hybridfd.trace import COMMUNICATION, COMPUTATION, KINDS, Trace

RANKS = (1, 2, 4)

GRIDS = 16
STENCIL = hf.Stencil.laplace(2, 0.2)

# (approach, options): every model and schedule; flat-optimized with progress is the one
# configuration that also tests messages in flight between grids.
CONFIGS = [
    ("flat-original", {}),
    ("flat-optimized", {"progress": 1}),
    ("flat-optimized", {"schedule": "overlap", "batch": 4, "slope": 0}),
    ("hybrid-multiple", {"threads": 2}),
    ("hybrid-master-only", {"threads": 2}),
    ("hybrid-master-only-threaded-comm", {"threads": 2}),
    ("hybrid-funneled-overlap", {"threads": 2}),
]


def problem(comm: MPI.Comm, dtype: str = "float64") -> tuple[hf.Decomposition, np.ndarray]:
    dec = hf.Decomposition(hf.Domain((20, 18, 16), periodic=(True, False, True), dtype=dtype), comm)
    a = np.random.default_rng(comm.rank).standard_normal(dec.local_shape(GRIDS))
    return dec, a if dtype == "float64" else a + 1j * a


def traced(
    comm: MPI.Comm,
    approach: str,
    options: dict,
    applies: int = 2,
    dtype: str = "float64",
    phases: np.ndarray | None = None,
    **trace: int,
) -> tuple[Trace | None, dict]:
    dec, a = problem(comm, dtype)
    op = hf.Operator(dec, STENCIL, approach, **options)
    op.start_trace(**trace)
    out = np.empty_like(a)
    for _ in range(applies):
        op.apply(a, out=out, phases=phases)
    return op.trace(), op.config


def nesting_problems(events: list[dict]) -> list[str]:
    """What is wrong with the nesting of Chrome "X" events (one rank's, all threads):
    siblings on one thread overlap, an event lies outside every apply of its rank, or
    batch numbers within an apply do not run 0, 1, 2, ... in order."""
    found = []
    applies = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e["name"] == "apply")
    if not applies:
        return ["no apply span"]
    for (_, end), (start, _) in zip(applies, applies[1:], strict=False):
        if start < end:
            found.append(f"applies overlap: one ends at {end}, the next starts at {start}")
    by_thread = defaultdict(list)
    for e in events:
        if e["name"] != "apply":
            by_thread[e["tid"]].append(e)
    starts = np.array([s for s, _ in applies])
    for thread, mine in by_thread.items():
        mine.sort(key=lambda e: e["ts"])
        for before, after in zip(mine, mine[1:], strict=False):
            if before["ts"] + before["dur"] > after["ts"] + 1e-3:  # the JSON rounds to ns
                found.append(f"thread {thread}: {before} overlaps {after}")
        packed: dict[int, set[int]] = defaultdict(set)
        for e in mine:
            k = int(np.searchsorted(starts, e["ts"], side="right")) - 1
            if k < 0 or e["ts"] + e["dur"] > applies[k][1] + 1e-3:
                found.append(f"thread {thread}: {e} outside every apply")
                continue
            if e["name"] == "pack":
                batches = packed[k]
                batch = e["args"]["batch"]
                if batch not in batches and batch != len(batches):
                    found.append(f"thread {thread}: batch {batch} packed after batches {sorted(batches)}")
                batches.add(batch)
        for e in mine:
            if e["name"] in ("unpack", "compute") and e["args"]["batch"] < 0:
                found.append(f"thread {thread}: {e} has no batch")
    return found


@pytest.mark.parametrize(("approach", "options"), CONFIGS)
def test_events_nest_per_thread_and_every_thread_computes(comm, approach, options, tmp_path_factory):
    trace, config = traced(comm, approach, options)
    if comm.rank != 0:
        assert trace is None
        return
    assert trace.dropped == 0
    threads = config["threads"]
    assert sorted((lane.rank, lane.thread) for lane in trace.lanes) == [
        (r, t) for r in range(comm.size) for t in range(threads)
    ]
    for lane in trace.lanes:
        communication_thread = config["model"] == "funneled-overlap" and lane.thread == 0  # master_share 0
        assert lane.of("compute").any() != communication_thread, (lane.rank, lane.thread)
        # The stencil reads ghosts where they arrived; only Bloch phases need an unpack.
        assert not lane.of("unpack").any(), (lane.rank, lane.thread)
        assert np.all(lane.end >= lane.start)
    for rank in range(comm.size):
        assert len(trace.applies(rank)) == 2
    path = trace.save_chrome(tmp_path_factory.mktemp("trace") / "trace.json")
    loaded = json.loads(path.read_text())  # what Perfetto reads
    complete = [e for e in loaded["traceEvents"] if e["ph"] == "X"]
    assert len(complete) == sum(lane.kind.size for lane in trace.lanes)
    assert {e["name"] for e in complete} <= set(KINDS)
    assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in complete)
    for rank in range(comm.size):
        problems = nesting_problems([e for e in complete if e["pid"] == rank])
        assert not problems, problems[:5]
    named = {(e["pid"], e.get("tid"), e["args"].get("name")) for e in loaded["traceEvents"] if e["ph"] == "M"}
    assert (0, None, "rank 0") in named and (0, 0, "thread 0") in named


def test_every_kind_appears_on_every_rank_and_fractions_add_up(comm):
    # Bloch phases: the one case with an unpack (received faces multiplied by their phase).
    phases = np.exp(1j * np.array([[-0.3, 0.3], [0.0, 0.0], [-0.7, 0.7]]))
    trace, _ = traced(comm, "flat-optimized", {"progress": 1}, dtype="complex128", phases=phases)
    if comm.rank != 0:
        return
    for rank in range(comm.size):
        kinds = {KINDS[k] for lane in trace.lanes if lane.rank == rank for k in lane.kind}
        assert kinds == set(KINDS), (rank, set(KINDS) - kinds)
    for row in trace.fractions():
        parts = [row[k] for k in (*COMMUNICATION, *COMPUTATION)]
        assert all(0 <= p <= 1 for p in parts)
        assert sum(parts) <= 1 + 1e-9 and sum(parts) + row["other"] == pytest.approx(1.0)
        assert row["communication"] > 0 and row["computation"] > 0 and row["traced_ms"] > 0


def test_batches_numbered_in_order_as_the_batch_shape_says(comm):
    # 16 grids, batch 8, slope 1 (geometric): batches of 4, 8, then the 4 left.
    trace, config = traced(comm, "flat-optimized", {"batch": 8, "slope": 1}, applies=1)
    if comm.rank != 0:
        return
    assert (config["batch"], config["slope"]) == (8, 1)
    for lane in trace.lanes:
        assert lane.batch[lane.of("pack")].tolist() == [0, 1, 2]
        assert lane.batch[lane.of("wait")].tolist() == [0, 1, 2]
        computed = lane.batch[lane.of("compute")].tolist()
        assert computed == sorted(computed) and computed.count(0) == 4 and computed.count(1) == 8
        assert lane.batch[lane.of("apply")].tolist() == [-1]


def test_a_tiny_buffer_counts_what_it_drops(comm):
    full, _ = traced(comm, "flat-original", {}, applies=1)
    tiny, _ = traced(comm, "flat-original", {}, applies=1, events_per_thread=5)
    if comm.rank != 0:
        return
    for whole, small in zip(full.lanes, tiny.lanes, strict=True):
        assert small.kind.size == 5
        assert small.dropped == whole.kind.size - 5 > 0
        assert small.kind.tolist() == whole.kind[:5].tolist()  # the first events are kept
    assert tiny.dropped == full.dropped + sum(lane.kind.size - 5 for lane in full.lanes)


def test_tracing_off_records_nothing_and_changes_no_result(comm):
    dec, a = problem(comm, "complex128")
    expected = hf.Operator(dec, STENCIL, "flat-original").apply(a)
    op = hf.Operator(dec, STENCIL, "hybrid-master-only", threads=2)
    assert not op.tracing
    op.apply(a)
    never = op.trace()
    op.start_trace()
    assert op.tracing
    assert np.array_equal(op.apply(a), expected)  # bit-identical while traced
    op.stop_trace()
    op.apply(a)
    stopped = op.trace()
    if comm.rank == 0:
        assert never.lanes == []  # never started: no buffers at all
        # The traced apply only, not the one after stop_trace.
        assert [len(stopped.applies(rank)) for rank in range(comm.size)] == [1] * comm.size


def test_trace_at_construction_and_clock_offsets(comm):
    dec, a = problem(comm)
    op = hf.Operator(dec, STENCIL, "flat-optimized", trace=True)
    assert op.tracing
    op.apply(a)
    trace = op.trace(root=comm.size - 1)
    if comm.rank != comm.size - 1:
        assert trace is None
        return
    assert trace.clock_uncertainty[0] == 0.0 and all(0 <= u < 0.01 for u in trace.clock_uncertainty)
    # One machine, one clock: the measured offsets put every rank's apply within the same
    # collective window (each apply starts with an allreduce over all ranks).
    starts = [trace.applies(rank)[0, 0] for rank in range(comm.size)]
    ends = [trace.applies(rank)[0, 1] for rank in range(comm.size)]
    assert max(starts) < min(ends)


def test_root_is_a_rank_of_the_given_communicator(comm):
    # A layout in reverse rank order: rank r of comm is Cartesian rank size - 1 - r.
    last = comm.size - 1
    splits = ((*range(0, 20, 20 // comm.size), 20), (0, 18), (0, 16))
    layout = hf.Layout(splits, [(last - rank, 0, 0) for rank in range(comm.size)])
    dec = hf.Decomposition(hf.Domain((20, 18, 16)), comm, layout=layout)
    assert dec.rank == last - comm.rank
    op = hf.Operator(dec, STENCIL, "flat-original", trace=True)
    op.apply(dec.zeros(GRIDS))
    for root in (0, last):
        trace = op.trace(root=root)
        assert (trace is None) == (comm.rank != root)
        if trace is not None:
            assert sorted({lane.rank for lane in trace.lanes}) == list(range(comm.size))
    with pytest.raises(ValueError, match=rf"^rank {last}: root {comm.size} must be a rank of the communicator"):
        op.trace(root=comm.size if comm.rank == last else 0)


@pytest.mark.parametrize("events", [0, -3, 2.5, "many", True])
def test_bad_buffer_size_raises_on_every_rank(comm, events):
    dec, _ = problem(comm)
    op = hf.Operator(dec, STENCIL, "flat-original")
    # One rank alone with the bad value still raises on all.
    given = events if comm.rank == comm.size - 1 else 100
    with pytest.raises(ValueError, match="events_per_thread|events per thread"):
        op.start_trace(given)
    assert not op.tracing


@pytest.mark.parametrize("approach", ["flat-original", "flat-optimized"])
def test_message_counts_are_the_halo_plans(comm, approach):
    """Each post records its messages to other ranks: six faces per batch for a star
    stencil, plus edges and corners for a stencil that reads them, none to a rank that is
    its own neighbour or to no one."""
    dec = hf.Decomposition(hf.Domain((12, 12, 12), periodic=True, dtype="float64"), comm)
    diagonal = hf.Stencil.from_offsets([(0, 0, 0), (1, 1, 1), (-1, -1, -1), (1, 0, 0)], [1.0, 2.0, 2.0, 3.0])
    a = np.ones(dec.local_shape(GRIDS))
    for stencil in (STENCIL, diagonal):
        op = hf.Operator(dec, stencil, approach, trace=True)
        op.apply(a)
        trace = op.trace()
        plan = hf.Halo.for_stencil(dec, stencil).messages
        assert len(plan) == (6 if stencil is STENCIL else 14)  # diagonal: every direction of (1, 1, 1)'s signs
        remote = comm.gather(sum(1 for _, neighbour, _ in plan if neighbour not in (MPI.PROC_NULL, dec.rank)))
        if comm.rank == 0:
            for rank in range(comm.size):
                lane = next(lane for lane in trace.lanes if lane.rank == rank and lane.thread == 0)
                batches = len(set(lane.batch[lane.of("post")].tolist()))
                assert trace.messages(rank) == remote[rank] * batches
