"""Every model x schedule x batch x threads gives results bit-identical to flat-original
and within 1e-12 of the numpy reference (GPAW journal Sect. 6, Fig. 6.1; Rabenseifner and
Wellein 2003, Sect. 2 and 5)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from _cases import batch_of, prepared
from mpi4py import MPI

import hybridfd as hf

RANKS = (1, 2, 4)

GRIDS = 7
THREADS = (1, 2, 3, 4)
BATCHES = (1, 3, GRIDS)
# (dtype, periodic, radius, shape): both dtypes, periodic and not, radius 1..3, uneven and
# even splits; (25, 13, 26) on 4 ranks gives boxes of 13 and 12 x-planes, so 3 or 4
# threads get slabs thinner than the radius 3 reaches.
CASES = [
    ("complex128", (True, True, False), ("general", 2), (25, 13, 26)),
    ("float64", (True, False, True), 2, (25, 13, 26)),
    ("complex128", (False, True, False), 1, (25, 13, 26)),
    ("complex128", (True, True, True), 3, (25, 13, 26)),
    ("float64", (False, False, False), 3, (24, 24, 24)),
]

# Threads and batches change what each transport is handed (per-thread transports,
# message sizes) the same way for every transport: p2p runs all of them; every other
# transport runs every model and schedule with these (a third of p2p's share).
TRANSPORT_THREADS = (1, 3)
TRANSPORT_BATCHES = (1, GRIDS)
CONFIGS = [
    (model, threads, schedule, transport, batch)
    for model, threads, schedule, transport, batch in itertools.product(
        hf.model_names(), THREADS, hf.schedule_names(), hf.transport_names(), BATCHES
    )
    if (model != "flat" or threads == 1)
    and (transport == "p2p" or (threads in TRANSPORT_THREADS and batch in TRANSPORT_BATCHES))
    and model in hf.transport_support(transport)["models"]
    and schedule in hf.transport_support(transport)["schedules"]
]


def supported(model: str, transport: str) -> bool:
    return model in hf.transport_support(transport)["models"]


@pytest.fixture(scope="module")
def cases():
    """Per data case: decomposition, stencil, scattered input, flat-original's output, reference."""
    return prepared(CASES, GRIDS)


def check(dec, out, original, reference) -> None:
    np.testing.assert_array_equal(out, original)
    gathered = dec.gather(out)
    if dec.comm.rank == 0:
        np.testing.assert_allclose(gathered, reference, rtol=0, atol=1e-12 * np.abs(reference).max())


@pytest.mark.parametrize(("model", "threads", "schedule", "transport", "batch"), CONFIGS)
def test_bit_identical_to_flat_original(cases, model, threads, schedule, transport, batch):
    for dec, stencil, local, original, reference in cases:
        op = hf.Operator(
            dec, stencil, "flat-optimized", model=model, threads=threads, schedule=schedule, transport=transport,
            batch=batch, slope=min(1, batch - 1),
        )  # fmt: skip
        assert (op.config["model"], op.config["threads"]) == (model, threads)
        check(dec, op.apply(local), original, reference)


@pytest.mark.parametrize("approach", [a for a in hf.approach_names() if a.startswith("hybrid-")])
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("progress", [0, 1])
def test_hybrid_presets_with_progress(cases, approach, threads, progress):
    for dec, stencil, local, original, reference in cases:
        op = hf.Operator(dec, stencil, approach, threads=threads, progress=progress)
        assert op.config["schedule"] == "double-buffered" and op.config["batch"] == 8
        check(dec, op.apply(local), original, reference)


@pytest.mark.parametrize("master_share", [0.0, 0.25, 1.0])
@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("schedule", hf.schedule_names())
def test_funneled_overlap_any_master_share(cases, master_share, threads, schedule):
    for dec, stencil, local, original, reference in cases:
        op = hf.Operator(
            dec, stencil, "hybrid-funneled-overlap", threads=threads, master_share=master_share, schedule=schedule,
            slope=2,
        )  # fmt: skip
        assert op.config["master_share"] == master_share
        check(dec, op.apply(local), original, reference)


@pytest.mark.parametrize(
    ("model", "transport"),
    [(m, t) for m in hf.model_names() for t in hf.transport_names() if m != "flat" and supported(m, t)],
)
def test_steady_state_apply_allocates_nothing(cases, model, transport):
    dec, stencil, local, _, _ = cases[1]
    op = hf.Operator(dec, stencil, "flat-optimized", model=model, threads=3, transport=transport, batch=3)
    out = np.empty_like(local)
    op.apply(local, out=out)  # the first apply with this G may set up persistent requests
    assert op._core.apply_counting_allocations(local, out, True) == 0


def test_one_operator_reused_with_changing_batch_counts(cases):
    dec, stencil, local, _, _ = cases[0]
    for model in hf.model_names():
        threads = 1 if model == "flat" else 3
        op = hf.Operator(dec, stencil, "flat-optimized", model=model, threads=threads, batch=2)
        for grids in (7, 2, 0, 1, 5):
            many = local[:grids]
            fresh = hf.Operator(dec, stencil, "flat-original")
            np.testing.assert_array_equal(op.apply(many), fresh.apply(many))


def test_config_names_model_threads_and_levels(cases):
    dec, stencil, _, _, _ = cases[0]
    multiple = hf.Operator(dec, stencil, "hybrid-multiple", threads=2).config
    assert multiple["model"] == "multiple" and multiple["threads"] == 2
    assert multiple["thread_level"] == "MPI_THREAD_MULTIPLE"
    assert multiple["mpi_thread_level"] == "MPI_THREAD_MULTIPLE"  # mpi4py's default
    assert "threads on CPUs" in multiple["placement"]
    masteronly = hf.Operator(dec, stencil, "hybrid-master-only", threads=2).config
    assert masteronly["thread_level"] == "MPI_THREAD_FUNNELED"
    flat = hf.Operator(dec, stencil, "flat-optimized").config
    assert (flat["model"], flat["threads"], flat["thread_level"]) == ("flat", 1, "MPI_THREAD_SINGLE")
    assert hf.Operator(dec, stencil, "hybrid-multiple", threads=1).config["thread_level"] == "MPI_THREAD_SINGLE"


@pytest.mark.parametrize("groups", [1, 2, 4])
def test_rank_groups_own_shares_of_the_grids(cases, groups):
    """flat-optimized-grouped: each group decomposes the whole domain over its own ranks
    and computes its share of the grids; together they equal the reference."""
    comm = MPI.COMM_WORLD
    if comm.size % groups:
        with pytest.raises(ValueError, match=rf"groups {groups} must be a positive divisor of the number of ranks"):
            hf.RankGroups(comm, groups)
        return
    _, stencil, _, _, _ = cases[0]
    dtype, periodic, _, shape = CASES[0]
    full = batch_of((GRIDS, *shape), dtype, 0)
    ranks = hf.RankGroups(comm, groups)
    dec = hf.Decomposition(hf.Domain(shape, periodic=periodic, dtype=dtype), ranks.comm)
    mine = full[ranks.grids(GRIDS)]
    out = dec.gather(hf.Operator(dec, stencil, "flat-optimized").apply(dec.scatter(mine)))
    if ranks.comm.rank == 0:
        np.testing.assert_array_equal(out, hf.reference.apply(stencil, mine, periodic=periodic))
    shares = comm.allgather((ranks.index, ranks.grids(GRIDS).start, ranks.grids(GRIDS).stop))
    assert sorted(set(shares)) == [(g, GRIDS * g // groups, GRIDS * (g + 1) // groups) for g in range(groups)]


@pytest.mark.parametrize("model", hf.model_names())
def test_phase_times_add_up(cases, model):
    dec, stencil, local, _, _ = cases[0]
    op = hf.Operator(dec, stencil, "flat-optimized", model=model, threads=1 if model == "flat" else 3, batch=2)
    for _ in range(3):
        op.apply(local)
    times = op.phase_times
    assert times["applies"] == 3
    assert 0 < times["compute_phases"] <= times["total"]
    assert 0 < times["thread_busy"] <= times["compute_phases"] * (1 + 1e-9)
    assert times["communication_phases"] == pytest.approx(times["total"] - times["compute_phases"])
    assert times["idle_in_compute"] == pytest.approx(times["compute_phases"] - times["thread_busy"])
    op.reset_phase_times()
    assert op.phase_times["applies"] == 0 and op.phase_times["total"] == 0


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_large_planes_are_computed_window_by_window(dtype):
    """Planes of 204 x 207 padded points (337 KB, twice that complex): a window is 12
    planes (the minimum 4r; 4 MiB holds fewer with their ghost planes), so one or two
    threads walk their 31-plane slab in several windows, the last one shorter; x is cut
    over the ranks so that windows meet the x faces."""
    comm = MPI.COMM_WORLD
    shape, periodic, radius = (31 * comm.size, 198, 201), (True, False, True), 3
    stencil = hf.Stencil.from_coefficients(np.random.default_rng(7).uniform(-1, 1, 1 + 6 * radius))
    dec = hf.Decomposition(hf.Domain(shape, periodic=periodic, dtype=dtype), comm, grid=(comm.size, 1, 1))
    full = batch_of((2, *shape), dtype, 7)
    local = dec.scatter(full if comm.rank == 0 else None)
    original = hf.Operator(dec, stencil, "flat-original").apply(local)
    gathered = dec.gather(original)
    if comm.rank == 0:
        reference = hf.reference.apply(stencil, full, periodic=periodic)
        np.testing.assert_allclose(gathered, reference, rtol=0, atol=1e-12 * np.abs(reference).max())
    for model, threads in [("flat", 1), ("multiple", 2), ("masteronly", 3), ("funneled-overlap", 2)]:
        for schedule in hf.schedule_names():
            op = hf.Operator(dec, stencil, "flat-optimized", model=model, threads=threads, schedule=schedule, batch=2)
            np.testing.assert_array_equal(op.apply(local), original)


@pytest.mark.parametrize("transport", hf.transport_names())
def test_unsupported_model_is_refused_on_every_rank(cases, transport):
    """A transport declares its models and schedules; any other is refused on every rank,
    naming what it supports, before any message."""
    dec, stencil, _, _, _ = cases[0]
    support = hf.transport_support(transport)
    assert set(support["models"]) <= set(hf.model_names()) and support["schedules"]
    listed = ", ".join(support["models"])
    for model in set(hf.model_names()) - set(support["models"]):
        message = rf"transport '{transport}' does not support model '{model}'.*supports the models {listed} with"
        with pytest.raises(ValueError, match=message):
            hf.Operator(dec, stencil, "flat-optimized", model=model, threads=2, transport=transport)


def test_partitioned_threads_with_uneven_shares_of_the_grids(cases):
    """One partition per thread: 3 threads, G = 1, 2, 4, 5, 7 (some threads have fewer
    batches, or none, and stand in with empty partitions), repeated on one Operator."""
    for dec, stencil, local, original, _ in cases:
        op = hf.Operator(dec, stencil, "hybrid-multiple", threads=3, transport="partitioned", batch=2, slope=1)
        for grids in (7, 1, 5, 2, 0, 4, 7):
            np.testing.assert_array_equal(op.apply(local[:grids]), original[:grids])
