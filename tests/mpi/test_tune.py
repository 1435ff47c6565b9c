"""approach="auto" under mpiexec: results equal the reference, the cache is used the second
time, and every rank makes the same choice even when their timings disagree."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import hybridfd as hf
from hybridfd import tune

RANKS = (2,)


@pytest.fixture
def directory(comm) -> Iterator[Path]:
    # Only rank 0 reads and writes the cache and calibration; the others get its path
    # so that every rank passes the same options.
    path = Path(comm.bcast(tempfile.mkdtemp(prefix="hybridfd-tune-") if comm.rank == 0 else None, root=0))
    yield path
    comm.Barrier()
    if comm.rank == 0:
        shutil.rmtree(path)


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_auto_matches_the_reference_then_comes_from_the_cache(comm, dtype, directory):
    shape, periodic, grids = (16, 12, 10), (True, False, True), 6
    dom = hf.Domain(shape, periodic=periodic, dtype=dtype)
    dec = hf.Decomposition(dom, comm)
    stencil = hf.Stencil.laplace(2, 0.25)
    rng = np.random.default_rng(7)
    batch = rng.standard_normal((grids, *shape))
    if dtype == "complex128":
        batch = batch + 1j * rng.standard_normal(batch.shape)
    options = {"cache": directory / "tune.json", "calibration": directory / "calibration.json", "budget": 3.0}

    op = hf.Operator(dec, stencil, approach="auto", threads=2, tune_options=options)
    assert op.config["approach_source"] is None  # tunes at the first applies
    local = dec.scatter(batch if comm.rank == 0 else None)
    reference_op = hf.Operator(dec, stencil, approach="flat-original")
    flat = dec.gather(reference_op.apply(local))
    if comm.rank == 0:
        expected = hf.reference.apply(stencil, batch, periodic=periodic)
        np.testing.assert_allclose(flat, expected, rtol=0, atol=1e-12 * np.abs(expected).max())
    for _ in range(100):  # the trials run on the applies' own grids until one setting wins
        out = dec.gather(op.apply(local))
        if comm.rank == 0:
            # Whatever setting computed them, the results are bit-identical to flat-original.
            np.testing.assert_array_equal(out, flat)
        if op.config["approach_source"] is not None:
            break
    config = op.config
    assert config["approach_source"] == "tuner"
    assert config["approach"] in hf.approach_names()
    assert config["tuning"]["trials"]

    again = hf.Operator(dec, stencil, approach="auto", threads=2, grids=grids, tune_options=options)
    assert again.config["approach_source"] == "cache"
    assert again.config["tuning"]["cache_status"] == "hit"
    for key in ("model", "schedule", "transport", "batch", "slope", "threads"):
        assert again.config[key] == config[key]
    # Every rank reports the same choice.
    assert comm.allgather(again.config["batch"]) == [config["batch"]] * comm.size
    again_out = dec.gather(again.apply(local))
    if comm.rank == 0:
        np.testing.assert_array_equal(again_out, flat)


@pytest.mark.parametrize("grid", [(2, 1, 1), (1, 2, 1), (1, 1, 2)])
@pytest.mark.parametrize("periodic", [(True, True, True), (False, True, False), (False, False, False)])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_the_slowest_problem_is_known_without_a_gather(comm, grid, periodic, dtype):
    # The tuner's rank 0 computes the pace-setting rank's problem from the cuts alone;
    # it is the largest of every rank's own problem_of (uneven cuts: 9 points in two).
    from hybridfd.perfmodel import problem_of, slowest_problem

    dec = hf.Decomposition(hf.Domain((9, 8, 7), periodic=periodic, dtype=dtype), comm, grid=grid)
    problems = comm.allgather(problem_of(dec, 2, 64))
    expected = max(problems, key=lambda p: (p.points, p.bytes_per_grid, p.messages_per_batch))
    assert slowest_problem(dec, 2, 64) == expected
    split = comm.Split(comm.rank)  # one rank: periodic faces are its own
    try:
        alone = hf.Decomposition(hf.Domain((9, 8, 7), periodic=periodic, dtype=dtype), split)
        assert slowest_problem(alone, 2, 64) == problem_of(alone, 2, 64)
    finally:
        split.Free()


def test_all_ranks_agree_when_their_timings_differ(comm):
    candidates = tune.candidates(
        32, 1, models=["flat"], schedules=hf.schedule_names(), transport="p2p", approaches=tune.presets()
    )
    ranked = tune.rank(candidates, lambda c: float(c.batch))
    shortlist = [tune.Entrant(c, p) for c, p in tune.shortlist(ranked, 6)[:6]]

    def cost(c: tune.Candidate) -> float:
        # Each rank's own timings favour another batch size.
        favourite = 2 ** (comm.rank % 6)
        return abs(c.batch - favourite) + 0.01 * c.slope

    steps = tune.tournament(comm, shortlist, ("p2p", "persistent"), tune.UNLIMITED)
    request = next(steps)
    try:
        while True:
            request = steps.send(cost(request[0]))
    except StopIteration as end:
        winner, raced = end.value
    winners = comm.allgather((winner.candidate, [e.candidate for e in raced]))
    assert all(w == winners[0] for w in winners)
    # The slowest rank's time decides: batch b costs max over ranks |b - 2^rank|.
    seconds = comm.bcast(winner.seconds() if comm.rank == 0 else None, root=0)
    best = max(abs(winner.candidate.batch - 2 ** (r % 6)) + 0.01 * winner.candidate.slope for r in range(comm.size))
    assert seconds == best
    if comm.rank == 0:
        assert seconds == min(e.seconds() for e in raced if e.samples)


def test_all_ranks_race_the_same_transports_when_their_models_differ(comm):
    # Rank 0's transport_share decides for every rank (here only rank 0's says the
    # transports can matter), so every rank builds the same variants in the same order.
    candidates = tune.candidates(
        16, 1, models=["flat"], schedules=["double-buffered"], transport="p2p", approaches=tune.presets()
    )
    shortlist = [tune.Entrant(c, p) for c, p in tune.rank(candidates, lambda c: float(c.batch))[:2]]
    share = 1.0 if comm.rank == 0 else 0.0
    steps = tune.tournament(comm, shortlist, ("p2p", "persistent"), tune.UNLIMITED, transport_share=lambda c: share)
    requests = []
    try:
        request = next(steps)
        while True:
            requests.append(request)
            request = steps.send(float(request[0].batch) + (request[0].transport == "persistent"))
    except StopIteration as end:
        winner, raced = end.value
    everyone = comm.allgather(([e.candidate for e in raced], requests, winner.candidate))
    assert all(mine == everyone[0] for mine in everyone)
    assert {e.candidate.transport for e in raced} == {"p2p", "persistent"}
    assert winner.candidate.transport == "p2p"


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_auto_tunes_on_the_job_grids_across_applies(comm, dtype, directory):
    # Chunks of 2 grids and applies of 5: the tuning runs over several applies (the last
    # grid of each a chunk of its own, its time scaled to two grids'), every output is
    # the reference's, and the grids the trials computed are counted. The budget admits
    # the whole shortlist (the default one, 5 % of a job of 1,000 such tiny grids, would
    # admit no trial beyond the model's choice).
    shape, periodic, grids = (12, 10, 8), (False, True, True), 5
    dec = hf.Decomposition(hf.Domain(shape, periodic=periodic, dtype=dtype), comm)
    stencil = hf.Stencil.laplace(2, 0.3)
    options = {
        "cache": False,
        "calibration": directory / "calibration.json",
        "trials": 3,
        "trial_grids": 2,
        "budget": 60.0,
    }
    op = hf.Operator(dec, stencil, approach="auto", threads=1, tune_options=options)
    reference_op = hf.Operator(dec, stencil, approach="flat-original")
    rng = np.random.default_rng(comm.rank)
    applies = 0
    while op.config["approach_source"] is None:
        a = rng.standard_normal(dec.local_shape(grids))
        if dtype == "complex128":
            a = a + 1j * rng.standard_normal(a.shape)
        np.testing.assert_array_equal(op.apply(a), reference_op.apply(a))
        applies += 1
        assert applies < 100
    assert applies > 1
    tuning = op.config["tuning"]
    # The apply in which the tuning ended gave its rest to the winner.
    assert (applies - 1) * grids < tuning["grids_applied"] <= applies * grids
    assert tuning["overhead_seconds"] is not None
    assert comm.allgather(op.config["approach"]) == [op.config["approach"]] * comm.size
    # One grid (3-D array) once tuned, and a 3-D first apply of a new auto Operator.
    single = rng.standard_normal(dec.local_shape(1))[0].astype(dtype)
    np.testing.assert_array_equal(op.apply(single), reference_op.apply(single))
    fresh = hf.Operator(dec, stencil, approach="auto", threads=1, tune_options={**options, "trials": 1})
    while fresh.config["approach_source"] is None:
        np.testing.assert_array_equal(fresh.apply(single), reference_op.apply(single))


def test_auto_refuses_settings_it_chooses_itself_on_every_rank(comm):
    dec = hf.Decomposition(hf.Domain((8, 8, 8)), comm)
    with pytest.raises(ValueError, match="approach='auto' chooses .* but batch, slope were given"):
        hf.Operator(dec, hf.Stencil.laplace(1, 1.0), approach="auto", batch=4, slope=1)
    with pytest.raises(ValueError, match="grids 0 must be a positive int"):
        hf.Operator(dec, hf.Stencil.laplace(1, 1.0), approach="auto", grids=0)
    with pytest.raises(ValueError, match="grids and tune_options apply to approach='auto' only"):
        hf.Operator(dec, hf.Stencil.laplace(1, 1.0), approach="flat-original", grids=4)


def test_tuning_for_different_grids_raises_on_every_rank(comm):
    dec = hf.Decomposition(hf.Domain((8, 8, 8)), comm)
    with pytest.raises(ValueError, match="the grids must be the same on every rank"):
        tune.tune(dec, hf.Stencil.laplace(1, 1.0), comm.rank + 1, cache=False)


def test_differing_grids_are_named_by_the_ranks_of_the_given_communicator(comm):
    # A layout in reverse rank order: rank r of comm is Cartesian rank 1 - r.
    layout = hf.Layout(((0, 4, 8), (0, 8), (0, 8)), [(1 - rank, 0, 0) for rank in range(2)])
    dec = hf.Decomposition(hf.Domain((8, 8, 8)), comm, layout=layout)
    assert dec.rank == 1 - comm.rank
    with pytest.raises(ValueError, match=r"the grids must be the same on every rank, got 1 on rank 0, 2 on rank 1$"):
        tune.tune(dec, hf.Stencil.laplace(1, 1.0), comm.rank + 1, cache=False)


def test_later_applies_smaller_than_a_chunk_still_finish_the_tuning(comm, directory):
    # Tuned for G = 4 (chunks of 4 grids), then applied to 2 grids at a time: each such
    # apply is a chunk of its own, so the races go on and end.
    dec = hf.Decomposition(hf.Domain((12, 10, 8)), comm)
    stencil = hf.Stencil.laplace(2, 0.3)
    options = {"cache": False, "calibration": directory / "calibration.json", "trials": 2, "budget": 60.0}
    op = hf.Operator(dec, stencil, approach="auto", threads=1, tune_options=options)
    reference_op = hf.Operator(dec, stencil, approach="flat-original")
    rng = np.random.default_rng(comm.rank)
    a = rng.standard_normal(dec.local_shape(4))
    np.testing.assert_array_equal(op.apply(a), reference_op.apply(a))
    for _ in range(200):
        if op.config["approach_source"] is not None:
            break
        b = rng.standard_normal(dec.local_shape(2))
        np.testing.assert_array_equal(op.apply(b), reference_op.apply(b))
    assert op.config["approach_source"] == "tuner"


def test_a_different_grid_count_while_tuning_raises_on_every_rank(comm, directory):
    dec = hf.Decomposition(hf.Domain((12, 10, 8)), comm)
    stencil = hf.Stencil.laplace(2, 0.3)
    options = {"cache": False, "calibration": directory / "calibration.json", "budget": 60.0}
    op = hf.Operator(dec, stencil, approach="auto", threads=1, tune_options=options)
    op.apply(np.zeros(dec.local_shape(4)))
    assert op.config["approach_source"] is None  # still tuning
    with pytest.raises(ValueError, match="must be the same on every rank"):
        op.apply(np.zeros(dec.local_shape(2 + comm.rank)))


def test_more_grids_than_tuned_for_are_tuned_for_anew(comm, directory):
    # Tuned for one grid (every batch one grid), then applied to 6: tuned again on those,
    # for G = 6; then 3 grids run on that choice, with no third tuning. Every output is
    # the reference's.
    dec = hf.Decomposition(hf.Domain((12, 10, 8)), comm)
    stencil = hf.Stencil.laplace(2, 0.3)
    options = {"cache": False, "calibration": directory / "calibration.json", "trials": 2, "budget": 60.0}
    op = hf.Operator(dec, stencil, approach="auto", threads=1, grids=1, tune_options=options)
    assert op.config["tuning"]["grids"] == 1 and op.config["batch"] == 1
    reference_op = hf.Operator(dec, stencil, approach="flat-original")
    rng = np.random.default_rng(comm.rank)
    a = rng.standard_normal(dec.local_shape(6))
    np.testing.assert_array_equal(op.apply(a), reference_op.apply(a))
    for _ in range(200):  # the tuning may span applies
        if op.config["approach_source"] is not None:
            break
        assert op.config["tuning"] == "under way, for G = 6"
        np.testing.assert_array_equal(op.apply(a), reference_op.apply(a))
    tuning = op.config["tuning"]
    assert tuning["grids"] == 6 and op.config["approach_source"] == "tuner"
    assert comm.allgather(op.config["batch"]) == [op.config["batch"]] * comm.size
    fewer = rng.standard_normal(dec.local_shape(3))
    np.testing.assert_array_equal(op.apply(fewer), reference_op.apply(fewer))
    assert op.config["tuning"] == tuning


def test_more_grids_than_tuned_for_on_one_rank_raises_on_every_rank(comm, directory):
    # Rank 0 alone asks for more grids than the choice was made for, so it alone would
    # tune again: it meets the others' agreement on G in their applies, and all raise.
    dec = hf.Decomposition(hf.Domain((12, 10, 8)), comm)
    options = {"cache": False, "calibration": directory / "calibration.json", "trials": 1, "budget": 0.0}
    op = hf.Operator(dec, hf.Stencil.laplace(2, 0.3), approach="auto", threads=1, grids=4, tune_options=options)
    with pytest.raises(ValueError, match="must be the same on every rank"):
        op.apply(np.zeros(dec.local_shape(8 if comm.rank == 0 else 2)))
    # Nothing was torn down: the same G everywhere still runs on the choice.
    op.apply(np.zeros(dec.local_shape(2)))
    assert op.config["tuning"]["grids"] == 4


def test_all_ranks_admit_the_same_entrants_when_their_budgets_differ(comm):
    # Rank 0's budget decides who joins and how long the race runs (here only rank 0's
    # affords any trial beyond the model's choice): every rank makes the same requests.
    candidates = tune.candidates(
        16, 1, models=["flat"], schedules=["double-buffered"], transport="p2p", approaches=tune.presets()
    )
    shortlist = [tune.Entrant(c, float(c.batch)) for c, _ in tune.rank(candidates, lambda c: float(c.batch))[:4]]
    budget = tune.UNLIMITED if comm.rank == 0 else tune.Budget(0.0)
    steps = tune.race(comm, shortlist, budget)
    requests = []
    try:
        request = next(steps)
        while True:
            requests.append(request)
            request = steps.send(float(request[0].batch) * (1 + 0.1 * comm.rank))
    except StopIteration as end:
        winner = end.value
    everyone = comm.allgather((requests, winner.candidate))
    assert all(mine == everyone[0] for mine in everyone)
    assert len({c for c, _ in requests}) == 4


def test_a_budgeted_tuning_agrees_on_every_rank(comm, directory):
    # The default budget (5 % of a 1,000-grid job by the model), a zero one and a large
    # one: whatever each rank's clock says, every rank reports the same choice, trials,
    # time and race (rank 0 alone decides whether the budget pays for one: the first
    # two cannot on this box, the model's pick is taken without a chunk timed).
    dec = hf.Decomposition(hf.Domain((16, 12, 10)), comm)
    stencil = hf.Stencil.laplace(2, 0.3)
    for budget in (None, 0.0, 60.0):
        options = {"cache": False, "calibration": directory / "calibration.json", "budget": budget}
        decision = tune.tune(dec, stencil, 8, threads=1, **options)
        mine = (
            decision.candidate,
            [t.candidate for t in decision.trials],
            decision.tuning_seconds,
            decision.parts,
            decision.source,
            decision.race,
        )
        assert all(other == mine for other in comm.allgather(mine))
        if budget == 60.0:
            assert decision.source == "tuner" and decision.trials and decision.race.startswith("raced: ")
        else:
            assert (decision.source, decision.trials) == ("model", [])
            assert decision.race.startswith("none: ")


def test_the_tuner_s_costs_are_rank_0_s_on_every_rank(comm):
    from hybridfd.perfmodel import calibrate

    measured = calibrate.tuner_costs(comm, repeats=2, rounds=3)
    assert all(other == measured for other in comm.allgather(measured))
    assert 0 <= measured[0] < 0.1 and 0 < measured[1] < 1.0


def test_the_calibrated_compute_time_is_the_slowest_rank_s(comm, monkeypatch):
    # A collective apply goes at its slowest rank's pace, which the model predicts: the
    # calibration keeps the largest C any rank measured, and every rank gets it.
    from hybridfd.perfmodel import calibrate

    monkeypatch.setattr(calibrate, "compute_per_point", lambda dtype, n, repeats: 1e-9 * (3 - comm.rank))
    monkeypatch.setattr(calibrate, "pingpong", lambda comm, sizes, repeats: [2e-6 + s / 1e10 for s in sizes])
    entry = calibrate.calibrate(comm, sizes=calibrate.SIZES[:4], subgrids=(8,), dtypes=("float64",), repeats=1)
    assert entry["compute_per_point"]["float64"]["8"] == pytest.approx(3e-9)
    assert all(other == entry["compute_per_point"] for other in comm.allgather(entry["compute_per_point"]))
