"""The tuner on one rank: ranking and choice on synthetic costs, the cache's round trip and
its corrupt, stale and foreign entries, the calibration file, and both command lines."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from mpi4py import MPI

import hybridfd as hf
from hybridfd import tune
from hybridfd.perfmodel import Costs, Problem, calibrate, predict_all
from hybridfd.perfmodel.store import StoreProblem, host_name

REGISTRIES = {
    "model": hf.model_names(),
    "schedule": hf.schedule_names(),
    "transport": hf.transport_names(),
    "approach": hf.approach_names(),
}


def pool(grids: int = 32, threads: int = 2) -> list[tune.Candidate]:
    return tune.candidates(
        grids,
        threads,
        models=hf.model_names(),
        schedules=hf.schedule_names(),
        transport="p2p",
        approaches=tune.presets(),
    )


def synthetic(c: tune.Candidate) -> float:
    """A cost with one minimum: double-buffered flat, batch 8, slope 2, on persistent."""
    cost = abs(c.batch.bit_length() - 4) + abs(c.slope - 2) + (c.model != "flat") + (c.schedule != "double-buffered")
    return cost + (0.0 if c.transport == "persistent" else 0.5)


def test_candidates_come_from_the_registries() -> None:
    candidates = pool()
    assert {c.model for c in candidates} == set(hf.model_names())
    assert {c.schedule for c in candidates} == set(hf.schedule_names())
    assert {c.batch for c in candidates} == {1, 2, 4, 8, 16, 32}
    assert all(c.threads == 1 for c in candidates if c.model == "flat")
    assert all(c.threads == 2 for c in candidates if c.model != "flat")
    assert all(c.slope == 0 for c in candidates if c.schedule in ("serial-dims", "all-dims"))
    assert max(c.slope for c in candidates) == 3
    assert all(c.approach in hf.approach_names() for c in candidates)
    assert len(set(candidates)) == len(candidates)


def test_presets_match_the_operators_the_core_builds() -> None:
    # presets() reads the core's table without building anything; an Operator of each
    # approach (threads=2 where threaded, as an MPI thread level may allow) resolves to
    # the same model and schedule.
    table = tune.presets()
    assert set(table) == set(hf.approach_names())
    dec = hf.Decomposition(hf.Domain(shape=(4, 4, 4)), MPI.COMM_SELF)
    stencil = hf.Stencil.laplace(1, 1.0)
    built = 0
    for name, (model, schedule) in table.items():
        try:
            config = hf.Operator(dec, stencil, name, threads=None if model == "flat" else 2).config
        except ValueError:
            continue  # a model this MPI's thread level cannot run
        assert (config["model"], config["schedule"]) == (model, schedule)
        built += 1
    assert built >= 2  # at least the flat presets


NEVER = tune.UNLIMITED  # a budget that is never spent
SPENT = tune.Budget(0.0)  # a budget spent before the race


def drive(steps, cost) -> tuple[object, list[tune.Request]]:
    """Run a race or tournament coroutine to its end, answering each request with
    ``cost(candidate)``; return its result and the requests it made."""
    requests = []
    try:
        request = next(steps)
        while True:
            requests.append(request)
            request = steps.send(cost(request[0]))
    except StopIteration as end:
        return end.value, requests


def entrants(ranked, count: int) -> list[tune.Entrant]:
    return [tune.Entrant(c, p) for c, p in tune.shortlist(ranked, count)[:count]]


def test_picks_the_known_best_of_a_synthetic_cost() -> None:
    # The model's ranking is the cost blurred by a small error that keeps the best among
    # the first trials; the measured cost is exact; the transport comes from trials.
    ranked = tune.rank(pool(), lambda c: synthetic(c) + 0.3 * (c.batch == 16))
    shortlist = entrants(ranked, 4)
    (winner, raced), requests = drive(tune.tournament(MPI.COMM_SELF, shortlist, hf.transport_names(), NEVER), synthetic)
    c = winner.candidate
    assert (c.model, c.schedule, c.batch, c.slope, c.transport) == ("flat", "double-buffered", 8, 2, "persistent")
    assert winner.seconds() == 0.0
    # The shortlist's first chunks are timed; each transport variant (warm_up) gets one
    # untimed chunk first, so its transport's lazy setup is not held against it.
    assert sum(timed for _, timed in requests) == sum(len(e.samples) for e in raced)
    assert [c for c, timed in requests if not timed] == [e.candidate for e in raced[4:]]
    assert all(e.samples for e in raced)
    variants = raced[4:]
    assert {e.candidate.transport for e in variants} == {
        t
        for t in hf.transport_names()
        if t != "p2p"
        and "flat" in hf.transport_support(t)["models"]
        and "double-buffered" in hf.transport_support(t)["schedules"]
    }


def test_overlap_xy_is_raced_only_where_z_sends_messages() -> None:
    face = 24 * 24 * 2 * 8
    x_cut = Problem(64, 24**3, 6 * face, 20 * 24 * 24, self_bytes_per_grid=4 * face)
    z_cut = Problem(64, 24**3, 6 * face, 24 * 24 * 20, self_bytes_per_grid=4 * face, z_bytes_per_grid=2 * face)
    assert "overlap-xy" in hf.schedule_names()
    assert tune.distinct_schedules(x_cut, hf.schedule_names()) == tuple(
        s for s in hf.schedule_names() if s != "overlap-xy"
    )
    assert tune.distinct_schedules(z_cut, hf.schedule_names()) == tuple(hf.schedule_names())


def test_the_plan_ranks_the_pool_as_predict_ranks_each_candidate() -> None:
    # plan() predicts the pool in one predict_all; ranked one candidate at a time with the
    # scalar predict (tests/test_perfmodel_formula.py: the documented formula, row by
    # row), the order and the seconds are the same, and so is the plan's shortlist.
    costs = Costs(
        latency=2e-6,
        bandwidth=2e10,
        compute_per_point=1.8e-9,
        pack_per_byte=1.3e-10,
        sync=7e-6,
        cores=4,
        ranks_per_host=2,
        per_message=4e-7,
    )
    face = 24 * 24 * 2 * 8
    whole = Problem(64, 24**3, 6 * face, 20**3, messages_per_batch=4, self_bytes_per_grid=4 * face)
    plan = tune.plan(costs, whole, 3, REGISTRIES, trials=4, trial_grids=None, budget=None, job_grids=1000)
    schedules = tune.distinct_schedules(whole, REGISTRIES["schedule"])
    pool = tune.candidate_pool(plan.chunk, 3, tuple(REGISTRIES["model"]), schedules, "p2p")
    assert len({c.threads for c in pool.candidates}) == 3  # flat's 1, then 2 and 3
    problem = Problem(**{**whole.__dict__, "grids": plan.chunk})

    def one(c: tune.Candidate) -> float:
        return tune.predicted(costs, problem, c)

    alone = tune.rank(list(pool.candidates), one)
    together = list(tune.ranked(pool.candidates, predict_all(costs, problem, pool.settings), pool.batch, pool.slope))
    assert [c for c, _ in together] == [c for c, _ in alone]
    assert [p for _, p in together] == pytest.approx([p for _, p in alone], rel=1e-14)
    expected = tune.shortlist(alone, 4)[:4]
    assert [c for c, _ in plan.shortlist] == [c for c, _ in expected]
    assert [p for _, p in plan.shortlist] == pytest.approx([p for _, p in expected], rel=1e-14)


def test_ties_go_to_the_larger_batch_then_the_smaller_slope() -> None:
    candidates = [c for c in pool(8, 1) if c.schedule == "double-buffered"]
    order = [(c.batch, c.slope) for c, _ in tune.rank(candidates, lambda c: 1.0)]
    assert order == sorted(order, key=lambda bn: (-bn[0], bn[1]))


def test_race_drops_the_clearly_beaten_then_stops_when_no_one_is_close() -> None:
    # Exact costs 1.00, 1.05, 1.10, 1.50, 2.00, ...: the first runs alone and admits the
    # rest; after one chunk each no noise is measured yet, so only those beyond
    # FIRST_MARGIN (15 %) of the leader drop; the second chunks measure no noise at all,
    # so the 2 % floor drops 1.05 and 1.10.
    ranked = tune.rank(pool(), synthetic)
    field = entrants(ranked, 6)
    base = [1.0, 1.05, 1.10, 1.5, 2.0, 3.0]
    order = {e.candidate: i for i, e in enumerate(field)}
    retired: list[tune.Candidate] = []
    winner, requests = drive(tune.race(MPI.COMM_SELF, field, NEVER, retired.append), lambda c: base[order[c]])
    assert [order[c] for c, timed in requests if timed] == [0, 1, 2, 3, 4, 5, 0, 1, 2]
    assert all(timed for _, timed in requests)  # no warm-up on the shortlist
    assert winner is field[0]
    assert [len(e.samples) for e in field] == [2, 2, 2, 1, 1, 1]
    # Each loser is retired once, in the order the rounds dropped them.
    assert [order[c] for c in retired] == [3, 4, 5, 1, 2]


def noisy(base: dict, spread: float):
    """A cost that alternates base x (1 + spread) and base x (1 - spread) per candidate."""
    calls: dict = {}

    def cost(c: tune.Candidate) -> float:
        calls[c] = calls.get(c, 0) + 1
        return base[c] * (1 + spread * (-1) ** calls[c])

    return cost


def test_entrants_within_the_measured_noise_are_tied_after_two_chunks() -> None:
    # 5 % apart but a noise of 10 % between chunks: neither is clearly beaten, so the
    # race ends after two chunks each (tied) and takes the faster, rather than
    # spending more chunks on a difference the noise hides.
    field = entrants(tune.rank(pool(), synthetic), 3)
    a, b, c = (e.candidate for e in field)
    cost = noisy({a: 1.05, b: 1.0, c: 2.0}, 0.10)
    winner, requests = drive(tune.race(MPI.COMM_SELF, field, NEVER), lambda x: cost(x))
    assert winner.candidate == b
    assert winner.seconds() == pytest.approx(0.9)  # its fastest chunk
    assert len(requests) == 2 + 2 + 1 and all(timed for _, timed in requests)
    assert tune.chunk_noise(field) == pytest.approx(0.10)
    assert tune.race_margin(tune.chunk_noise(field)) == pytest.approx(0.30)


def test_an_outlier_chunk_does_not_decide() -> None:
    # B is 5 % faster, but its second timed chunk was slowed 3x (a rank descheduled):
    # the huge spread ties A and B, and B's fastest chunk counts.
    field = entrants(tune.rank(pool(), synthetic), 2)
    a, b = (e.candidate for e in field)
    samples = {a: iter([1.05, 1.05]), b: iter([1.0, 3.0])}
    winner, _ = drive(tune.race(MPI.COMM_SELF, field, NEVER), lambda x: next(samples[x]))
    assert winner.candidate == b  # a median of (1.0, 3.0) would have picked A


def test_chunk_noise_and_margin_by_hand() -> None:
    field = entrants(tune.rank(pool(), synthetic), 3)
    assert tune.chunk_noise(field) is None  # no samples
    field[0].samples = [1.0]
    assert tune.chunk_noise(field) is None  # one sample says nothing about noise
    assert tune.race_margin(None) == tune.FIRST_MARGIN
    field[0].samples = [1.0, 1.2, 1.1]  # median 1.1: deviations 1/11, 1/11, 0
    field[1].samples = [2.0, 2.0]  # deviations 0, 0
    assert tune.chunk_noise(field) == pytest.approx(0.0)
    field[1].samples = [2.0, 2.4]  # median 2.2: deviations 1/11, 1/11
    assert tune.chunk_noise(field) == pytest.approx(1 / 11)
    assert tune.race_margin(1 / 11) == pytest.approx(3 / 11)
    assert tune.race_margin(0.001) == tune.MIN_MARGIN


def test_verdict_on_a_spent_budget_keeps_the_leader_only() -> None:
    field = entrants(tune.rank(pool(), synthetic), 3)
    for entrant, value in zip(field, (3.0, 1.0, 1.01), strict=True):
        entrant.samples = [value]
    assert tune.verdict(field, (), NEVER) == [1, 2]
    # Another round would lose 0.01 s (the follower's loss on this one): more than is left.
    assert tune.verdict(field, (), SPENT) == [1]
    assert tune.verdict(field, (), tune.Budget(0.011)) == [1, 2]
    field[0].refused, field[0].samples = True, []
    assert tune.verdict(field, (), NEVER) == [1, 2]


def test_the_tournament_races_the_survivor_on_the_other_transports() -> None:
    # A 1.0 alone, then B 0.95, C 1.2, D 1.3: C and D are beyond 15 % of B and drop.
    # Then A 1.8, B 1.5: the spread between chunks (about 25 %) ties A and B, so B
    # (fastest chunk 0.95) wins the first race. B needs no new chunk to admit its
    # persistent variant; the noise measured keeps the variant (1.05 against 0.95) in for
    # a second chunk; then the two are tied and B, the faster, wins.
    field = entrants(tune.rank(pool(), synthetic), 4)
    a, b, c, d = (e.candidate for e in field)
    persistent = tune.Candidate(**{**b.options(), "transport": "persistent"})
    samples = {a: [1.0, 1.8], b: [0.95, 1.5], c: [1.2], d: [1.3], persistent: [1.05, 1.6]}
    taken = {k: 0 for k in samples}

    def cost(candidate: tune.Candidate, timed: bool) -> float:
        if not timed:
            assert candidate == persistent  # only the transport variant warms up
            return 0.0
        if taken[candidate] == len(samples[candidate]):
            raise AssertionError(f"{candidate.label()} measured after it was dropped")
        value = samples[candidate][taken[candidate]]
        taken[candidate] += 1
        return value

    steps = tune.tournament(MPI.COMM_SELF, field, ("p2p", "persistent"), NEVER)
    try:
        request = next(steps)
        while True:
            request = steps.send(cost(*request))
    except StopIteration as end:
        winner, raced = end.value
    assert [e.candidate for e in raced] == [a, b, c, d, persistent]
    assert winner.candidate == b
    assert taken == {a: 2, b: 2, c: 1, d: 1, persistent: 2}
    assert tune.leader(MPI.COMM_SELF, raced) is winner


def test_transports_are_raced_only_when_the_model_says_they_can_matter() -> None:
    # transport_share is the model's share of the survivor's time a transport can
    # change; below MIN_MARGIN no transport variant is built.
    ranked = tune.rank(pool(), synthetic)
    for share, raced_transports in ((tune.MIN_MARGIN / 2, False), (tune.MIN_MARGIN, True)):
        field = entrants(ranked, 4)
        (winner, raced), requests = drive(
            tune.tournament(MPI.COMM_SELF, field, hf.transport_names(), NEVER, transport_share=lambda c, s=share: s),
            synthetic,
        )
        assert (len(raced) > len(field)) == raced_transports
        assert {r[0].transport for r in requests} == (
            {t for t in hf.transport_names() if "flat" in hf.transport_support(t)["models"]}
            if raced_transports
            else {"p2p"}
        )


def test_refused_candidates_are_skipped() -> None:
    ranked = tune.rank(pool(8), synthetic)
    field = entrants(ranked, 3)
    refused = field[0].candidate

    def cost(c: tune.Candidate) -> float | None:
        return None if c == refused else synthetic(c)

    _, requests = drive(tune.race(MPI.COMM_SELF, field, NEVER), cost)
    assert requests.count((refused, True)) == 1 and not field[0].samples
    assert field[0].refused and field[0].trial().measured is None and field[0].trial().note == "refused"
    assert tune.leader(MPI.COMM_SELF, field) is not field[0]


def test_nothing_runnable_leaves_no_winner() -> None:
    field = entrants(tune.rank(pool(2), synthetic), 2)
    (winner, raced), _ = drive(tune.tournament(MPI.COMM_SELF, field, hf.transport_names(), NEVER), lambda c: None)
    assert winner is None and all(e.refused for e in raced)


def test_a_spent_budget_leaves_the_model_s_choice_measured_once() -> None:
    field = entrants(tune.rank(pool(), synthetic), 6)
    winner, requests = drive(tune.race(MPI.COMM_SELF, field, SPENT), synthetic)
    assert requests == [(field[0].candidate, True)] and winner is field[0]


def test_admission_by_hand() -> None:
    # 1.0 s budget, 0.2 spent, Operators at 0.1 s, no round cost; the first's chunk
    # measured 1.0 s. Admitting anyone sets aside the first's tie-break chunk (0.15);
    # each entrant costs its Operator and, per chunk, its predicted excess and
    # FIRST_MARGIN of the chunk: 0.1 + 2 x 0.15, 0.1 + 2 x 0.25, then 0.1 + 0.65 (one
    # chunk: the model puts it beyond the margin).
    c = pool()
    first = tune.Entrant(c[0], 1.0, samples=[1.0])
    waiting = [tune.Entrant(c[1], 1.0), tune.Entrant(c[2], 1.1), tune.Entrant(c[3], 1.5)]
    assert tune.Budget(1.0, lambda: 0.2, build=0.1).admits(first, waiting) == 1
    assert tune.Budget(1.3, lambda: 0.2, build=0.1).admits(first, waiting) == 1
    assert tune.Budget(1.36, lambda: 0.2, build=0.1).admits(first, waiting) == 2
    assert tune.Budget(1.0, lambda: 0.2, build=0.1).admits(first, waiting[2:]) == 0
    assert tune.Budget(1.21, lambda: 0.2, build=0.1).admits(first, waiting[2:]) == 1  # alone it fits
    assert tune.Budget(0.74, lambda: 0.2, build=0.1).admits(first, waiting) == 0
    assert NEVER.admits(first, waiting) == 3
    # Before the first's chunk is timed, the model's prediction stands for it.
    assert tune.Budget(0.56, build=0.1).admits(tune.Entrant(c[0], 1.0), waiting) == 1


def test_admission_charges_operators_and_rounds_by_hand() -> None:
    # 0.2 s spent; Operators at 0.1 s, rounds at 0.05 s; the first's chunk measured 1.0 s.
    # An admission first sets aside what it adds to the race: MIN_SAMPLES rounds and the
    # first's tie-break chunk, FIRST_MARGIN of a chunk off its fastest (0.25). Each
    # entrant costs its Operator, MIN_SAMPLES rounds for its chunks' collectives, and
    # per chunk it runs its predicted excess plus FIRST_MARGIN of the chunk: two chunks
    # while the model puts it within FIRST_MARGIN (0.5 and 0.7 here), else one (0.85),
    # and its warm-up chunk, if any, on top (0.65).
    c = pool()
    first = tune.Entrant(c[0], 1.0, samples=[1.0])
    waiting = [tune.Entrant(c[1], 1.0), tune.Entrant(c[2], 1.1), tune.Entrant(c[3], 1.5)]

    def budget(seconds: float, round: float = 0.05) -> tune.Budget:
        return tune.Budget(seconds, lambda: 0.2, build=0.1, round=round)

    assert budget(0.2).race_cost(1.0) == pytest.approx(0.25)
    costs = [budget(0.2).entrant_cost(first, 1.0, e) for e in waiting]
    assert costs == pytest.approx([0.5, 0.7, 0.85])
    assert budget(0.2).entrant_cost(first, 1.0, tune.Entrant(c[1], 1.0, warm_up=True)) == pytest.approx(0.65)
    assert budget(0.94).admits(first, waiting) == 0
    assert budget(0.96).admits(first, waiting) == 1
    assert budget(1.64).admits(first, waiting) == 1
    assert budget(1.66).admits(first, waiting) == 2
    assert budget(2.49).admits(first, waiting) == 2
    assert budget(2.51).admits(first, waiting) == 3
    # Without the rounds' collectives the same budget would admit more.
    assert budget(1.36, round=0.0).admits(first, waiting) == 2
    # Before any chunk: the cheapest race is the first's round, the closing broadcast,
    # what an admission adds and the shortlist's second (with the model's 1.0 s chunk),
    # or, alone on the shortlist, a transport variant predicted alike.
    assert budget(0.2).race_estimate([first, *waiting[1:]]) == pytest.approx(0.1 + 0.25 + 0.7)
    assert budget(0.2).race_estimate([first]) == pytest.approx(0.1 + 0.25 + 0.5)
    assert budget(1.26).affords_race([first, *waiting[1:]])
    assert not budget(1.24).affords_race([first, *waiting[1:]])
    assert not budget(math.inf).affords_race([])


def test_another_round_pays_for_its_collectives() -> None:
    # Two entrants within the first margin, one chunk each: another round loses 0.05 s
    # and costs a round's collectives per entrant (2 x 0.05).
    c = pool()
    field = [tune.Entrant(c[0], 1.0, samples=[1.0]), tune.Entrant(c[1], 1.0, samples=[1.05])]
    assert tune.verdict(field, (), tune.Budget(0.16, round=0.05)) == [0, 1]
    assert tune.verdict(field, (), tune.Budget(0.14, round=0.05)) == [0]
    assert tune.verdict(field, (), tune.Budget(0.06)) == [0, 1]  # no rounds: the loss alone


def test_the_tuner_s_calibrated_costs_decide_whether_to_race(tmp_path) -> None:
    # The same budget races when the calibrated round and Operator are cheap, and takes
    # the model's pick without a race when they are dear (the fixed parts counted).
    dec, stencil = problem()
    calibration = tmp_path / "calibration.json"
    base = {**calibration_entry(), "host": host_name(), "mpi_library": calibrate.mpi_library(), "ranks": 1}
    options = {"cache": False, "calibration": calibration, "threads": 1, "trials": 3, "budget": 30.0}
    for operator, source in ((1e-4, "tuner"), (100.0, "model")):
        calibrate.save({**base, "tuner_round": 1e-5, "tuner_operator": operator}, calibration)
        decision = tune.tune(dec, stencil, 16, **options)
        assert decision.source == source
        assert decision.race.startswith("raced: " if source == "tuner" else "none: ")
    calibrate.save({**base, "tuner_round": 20.0, "tuner_operator": 1e-4}, calibration)
    assert tune.tune(dec, stencil, 16, **options).source == "model"


def smooth(c: tune.Candidate) -> float:
    """Seconds per chunk of a cost with one best setting (double-buffered flat, batch 8,
    slope 2) and the others a few per cent to a few tens of per cent slower."""
    return (
        1.0 + 0.04 * abs(c.batch.bit_length() - 4) + 0.03 * abs(c.slope - 2) + 0.05 * (c.schedule != "double-buffered")
    )


@pytest.mark.parametrize("round_seconds", [0.0, 0.01])
@pytest.mark.parametrize("model_error", [0.0, 0.08])
def test_the_budget_bounds_the_overhead_on_a_synthetic_cost(model_error, round_seconds) -> None:
    # The overhead of a race on `smooth`, kept as Tuning keeps it: each Operator built
    # (0.05 s), each timed chunk's collectives (a round's worth: its barrier and its
    # share of the reduction and broadcast) and each chunk's loss against the best
    # setting raced. With an exact model every estimate is an upper bound, so the
    # overhead stays within the budget plus the one Operator and round any measured
    # choice needs; with a model 8 % off the order, the admission's margin (FIRST_MARGIN
    # of a chunk per entrant) still covers it. More budget admits more entrants, and
    # enough of it finds the best setting.
    build = 0.05
    ranked = tune.rank(pool(64, 1), lambda c: smooth(c) * (1 + model_error * (c.batch != 8)))
    raced_counts = []
    for seconds in (0.0, 0.1, 0.2, 0.4, 1.0, math.inf):
        field = entrants(ranked, 6)
        ledger = {"overhead": 0.0, "built": set()}
        budget = tune.Budget(seconds, lambda ledger=ledger: ledger["overhead"], build, round_seconds)
        best = min(smooth(e.candidate) for e in field)

        def cost(c: tune.Candidate, ledger: dict = ledger, best: float = best) -> float:
            if c not in ledger["built"]:
                ledger["built"].add(c)
                ledger["overhead"] += build
            ledger["overhead"] += smooth(c) - best + round_seconds
            return smooth(c)

        winner, requests = drive(tune.race(MPI.COMM_SELF, field, budget), cost)
        assert ledger["overhead"] <= seconds + build + round_seconds
        raced_counts.append(len(ledger["built"]))
        if seconds == math.inf:
            assert smooth(winner.candidate) == best
    assert raced_counts == sorted(raced_counts) and raced_counts[0] == 1 and raced_counts[-1] == 6


def problem(grids: int = 8) -> tuple[hf.Decomposition, hf.Stencil]:
    dom = hf.Domain(shape=(12, 10, 8), periodic=(True, True, True))
    return hf.Decomposition(dom, MPI.COMM_SELF), hf.Stencil.laplace(2, 0.3)


def test_cache_round_trip_then_corruption_then_foreign(tmp_path) -> None:
    dec, stencil = problem()
    cache = tmp_path / "tune.json"
    # A calibration file for this machine and 1 rank, so the test measures no ping-pong.
    calibration = tmp_path / "calibration.json"
    entry = {**calibration_entry(), "host": host_name(), "mpi_library": calibrate.mpi_library(), "ranks": 1}
    calibrate.save(entry, calibration)
    options = {"cache": cache, "trials": 2, "budget": 2.0, "calibration": calibration}
    first = tune.tune(dec, stencil, 8, threads=1, **options)
    assert first.source == "tuner" and first.trials
    assert first.cache_status == "miss; calibration file"
    second = tune.tune(dec, stencil, 8, threads=1, **options)
    assert (second.source, second.cache_status) == ("cache", "hit")
    assert second.candidate == first.candidate

    # Another G is another problem.
    assert tune.tune(dec, stencil, 4, threads=1, **options).source == "tuner"

    # Corrupt file: not JSON.
    cache.write_text("{ not json")
    rebuilt = tune.tune(dec, stencil, 8, threads=1, **options)
    assert rebuilt.source == "tuner" and rebuilt.cache_status.startswith("rebuilt: ")
    assert "is not valid JSON" in rebuilt.cache_status
    assert tune.tune(dec, stencil, 8, threads=1, **options).source == "cache"

    data = json.loads(cache.read_text())
    key = tune.key_text(tune.cache_key(dec, stencil, 8, 1))
    # Foreign: the entry filed under this key describes another problem.
    data["entries"][key]["key"]["grids"] = 999
    cache.write_text(json.dumps(data))
    foreign = tune.tune(dec, stencil, 8, threads=1, **options)
    assert "foreign entry" in foreign.cache_status and foreign.source == "tuner"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("hybridfd_version", "0.0.1", "stale entry: written by hybridfd 0.0.1"),
        ("choice", {"model": "gone"}, "stale entry: model 'gone' is not one of"),
        ("choice", {"batch": 0}, "choice/batch: 0 is less than the minimum of 1"),
        ("predicted", "fast", "predicted: 'fast' is not of type 'number'"),
    ],
)
def test_bad_entries_are_rebuilt(tmp_path, field, value, message) -> None:
    dec, stencil = problem()
    cache = tmp_path / "tune.json"
    decision = tune.Decision(
        tune.Candidate("flat-original", "flat", "all-dims", "p2p", 2, 0, 1), 1e-3, 1e-3, "tuner", 0.1
    )
    key = tune.cache_key(dec, stencil, 8, 1)
    tune.cache_store(cache, key, decision)
    entry, status = tune.cache_lookup(cache, key, REGISTRIES)
    assert status == "hit" and entry["choice"] == decision.candidate.options()
    data = json.loads(cache.read_text())
    stored = data["entries"][tune.key_text(key)]
    stored[field] = {**stored[field], **value} if isinstance(value, dict) else value
    cache.write_text(json.dumps(data))
    entry, status = tune.cache_lookup(cache, key, REGISTRIES)
    assert entry is None
    assert message in status


def test_cache_key_names_the_problem() -> None:
    dec, stencil = problem()
    key = tune.cache_key(dec, stencil, 8, 2, library="MPICH x")
    assert key["mpi_library"] == "MPICH x"
    assert (key["ranks"], key["threads"], key["shape"], key["dtype"], key["grids"]) == (1, 2, [12, 10, 8], "float64", 8)


def calibration_entry() -> dict:
    return {
        "host": "h",
        "mpi_library": "MPICH 5",
        "ranks": 2,
        "created": "2026-01-01T00:00:00+00:00",
        "pingpong": {"bytes": [8, 16], "seconds": [1e-6, 1.1e-6]},
        "latency": 1e-6,
        "bandwidth": 1e9,
        "half_bandwidth_bytes": 1000.0,
        "compute_per_point": {"float64": {"24": 1e-9, "96": 2e-9}},
        "pack_per_byte": {"float64": 1e-10},
        "sync": 1e-6,
        "per_message": 3e-7,
        "cores": 2,
        "ranks_per_host": 2,
    }


def test_calibration_file_round_trip_and_checks(tmp_path) -> None:
    path = tmp_path / "calibration.json"
    entry = calibration_entry()
    calibrate.save(entry, path)
    assert calibrate.load(path, host="h", library="MPICH 5", ranks=2) == entry
    assert calibrate.load(path, host="h", library="MPICH 5", ranks=4) is None
    costs = calibrate.costs(entry, "float64", 80**3)
    assert costs.compute_per_point == 2e-9  # 80 is nearer 96 than 24 on a log scale
    assert costs.per_message == 3e-7
    # A file without the hidden share keeps Fig. 5.2's assumption.
    assert costs.hidden_share == 1.0
    assert calibrate.costs({**entry, "hidden_share": 0.25}, "float64", 80**3).hidden_share == 0.25
    # Nor has it the tuner's costs: the tuner then counts only what it measures.
    assert (costs.tuner_round, costs.tuner_operator) == (0.0, 0.0)
    tuner = calibrate.costs({**entry, "tuner_round": 4e-5, "tuner_operator": 2e-4}, "float64", 80**3)
    assert (tuner.tuner_round, tuner.tuner_operator) == (4e-5, 2e-4)
    with pytest.raises(StoreProblem, match="tuner_round: -1 is less than the minimum of 0"):
        calibrate.save({**entry, "tuner_round": -1}, path)
    with pytest.raises(ValueError, match="no compute time for dtype 'complex128'"):
        calibrate.costs(entry, "complex128", 10)
    data = json.loads(path.read_text())
    data["entries"][calibrate.entry_key("h", "MPICH 5", 2)]["bandwidth"] = -1
    path.write_text(json.dumps(data))
    with pytest.raises(StoreProblem, match="bandwidth: -1 is less than or equal to the minimum of 0"):
        calibrate.load(path, host="h", library="MPICH 5", ranks=2)
    path.write_text('{"format": "something-else", "entries": {}}')
    with pytest.raises(StoreProblem, match="is not a hybridfd-calibration/4 file"):
        calibrate.load(path, host="h", library="MPICH 5", ranks=2)


def test_a_checked_entry_is_remembered_by_its_content(tmp_path, monkeypatch) -> None:
    # The schema check runs once per distinct entry text in a process: the tuner loads
    # the calibration at every Operator(approach="auto"). A changed entry, even 2 for 2.0,
    # is checked again, and a bad one is rejected every time, never remembered.
    import jsonschema

    from hybridfd.perfmodel import store

    checks = []
    real = jsonschema.Draft202012Validator

    def counting(schema: dict) -> object:
        checks.append(schema)
        return real(schema)

    monkeypatch.setattr(jsonschema, "Draft202012Validator", counting)
    monkeypatch.setattr(store, "_PASSED", type(store._PASSED)())  # nothing remembered yet
    path = tmp_path / "calibration.json"
    entry = calibration_entry()
    calibrate.save(entry, path)  # checks the new entry once
    for _ in range(3):
        assert calibrate.load(path, host="h", library="MPICH 5", ranks=2) == entry
    assert len(checks) == 1
    entry["cores"] = 2.0  # the same number, another JSON text: checked again
    store.check_entry(entry, calibrate.ENTRY_SCHEMA, "edited")
    assert len(checks) == 2
    entry["cores"] = 0
    for _ in range(2):
        with pytest.raises(StoreProblem, match="cores: 0 is less than the minimum of 1"):
            store.check_entry(entry, calibrate.ENTRY_SCHEMA, "edited")
    assert len(checks) == 4
    # Another schema does not vouch for this one's entries.
    entry["cores"] = 2
    with pytest.raises(StoreProblem, match="is invalid"):
        store.check_entry(entry, tune.ENTRY_SCHEMA, "a tuning cache entry")
    assert len(checks) == 5


def test_the_trial_chunk_by_hand() -> None:
    # G where G grids take at most TRIAL_SECONDS (10 ms) by the model; else the largest
    # power of two that does, but at least 16 grids, and never more than G or 128.
    assert tune.trial_chunk(64, 30e-6) == 64  # 24^3: 1.9 ms
    assert tune.trial_chunk(64, 0.3e-3) == 32  # 19 ms for 64; 33 fit
    assert tune.trial_chunk(64, 3e-3) == tune.MIN_TRIAL_GRIDS  # 96^3: 3 fit
    assert tune.trial_chunk(8, 1.0) == 8  # never more than G
    assert tune.trial_chunk(1000, 1e-6) == tune.MAX_TRIAL_GRIDS
    assert tune.trial_chunk(64, 0.0) == 64


def test_the_trial_chunk_is_the_apply_s_own_grids_on_small_grids(tmp_path) -> None:
    # By default the chunk follows the model (trial_chunk); on this small box it is G
    # (up to MAX_TRIAL_GRIDS), so every batch up to G is a candidate; trial_grids sets
    # it by hand.
    dec, stencil = problem()
    calibration = tmp_path / "calibration.json"
    entry = {**calibration_entry(), "host": host_name(), "mpi_library": calibrate.mpi_library(), "ranks": 1}
    calibrate.save(entry, calibration)
    # A budget that pays for a race (this box's default one cannot: see
    # test_the_budget_sets_how_many_candidates_are_measured).
    options = {"cache": False, "calibration": calibration, "threads": 1, "budget": 60.0}
    for grids, trial_grids, chunk in ((64, None, 64), (4, None, 4), (1000, None, tune.MAX_TRIAL_GRIDS), (64, 16, 16)):
        tuning = tune.Tuning(dec, stencil, grids, trial_grids=trial_grids, **options)
        assert tuning.chunk == chunk
        assert max(e.candidate.batch for e in tuning._shortlist) <= chunk
        # A warm-up chunk on the shortlist only where a chunk is less than the apply: the
        # first request (made at construction) is untimed then, and the others wait.
        assert tuning._request == (tuning._shortlist[0].candidate, chunk == grids)
        assert all(e.warm_up == (chunk < grids) for e in tuning._shortlist[1:])
    decision = tune.tune(dec, stencil, 32, trials=2, **options)
    assert decision.trial_grids == 32 and decision.summary()["trial_grids"] == 32
    assert "warm-up chunks" not in decision.parts
    assert set(decision.parts) >= {"operators", "chunks", "decisions"}


def test_auto_takes_the_model_s_pick_when_the_budget_pays_for_no_race(tmp_path) -> None:
    # The first apply builds the model's pick and computes every grid with it: the same
    # result as flat-original, and op.config says where the choice came from and why.
    dec, stencil = problem()
    calibration = tmp_path / "calibration.json"
    entry = {**calibration_entry(), "host": host_name(), "mpi_library": calibrate.mpi_library(), "ranks": 1}
    calibrate.save(entry, calibration)
    options = {"cache": False, "calibration": calibration, "budget": 0.0}
    a = np.random.default_rng(3).standard_normal(dec.local_shape(8))
    op = hf.Operator(dec, stencil, approach="auto", threads=1, tune_options=options)
    out = op.apply(a)
    assert np.array_equal(out, hf.Operator(dec, stencil, approach="flat-original").apply(a))
    config = op.config
    assert config["approach_source"] == "model"
    assert config["tuning"]["race"].startswith("none: ") and config["tuning"]["trials"] == []
    assert config["tuning"]["grids_applied"] == 0 and config["tuning"]["measured_seconds"] is None


def test_a_finished_tuning_is_freed_without_the_garbage_collector(tmp_path) -> None:
    # The winner's Operator lives in the Tuning until it is freed; were the Tuning in a
    # reference cycle, it would be freed whenever the collector ran, at a different
    # moment on each rank, and an Operator of a one-sided transport frees its window
    # collectively. Reference counting alone must free it.
    import gc

    dec, stencil = problem()
    calibration = tmp_path / "calibration.json"
    entry = {**calibration_entry(), "host": host_name(), "mpi_library": calibrate.mpi_library(), "ranks": 1}
    calibrate.save(entry, calibration)
    options = {"cache": False, "calibration": calibration, "budget": 1.0}
    a = dec.zeros(8)
    out = np.empty_like(a)
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        op = hf.Operator(dec, stencil, approach="auto", threads=1, tune_options=options)
        for _ in range(100):
            op.apply(a, out)
            if op.config["approach_source"] is not None:
                break
        assert op.config["approach_source"] == "tuner"
        del op
        gc.collect()
        left = [type(o).__name__ for o in gc.garbage if isinstance(o, (tune.Tuning, hf.Operator))]
        assert left == []
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


def resident_bytes() -> int:
    import os

    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_an_operator_holds_message_buffers_only_for_faces_that_carry_messages() -> None:
    # The race builds an Operator per entrant, so its construction is tuning overhead.
    # Its message buffers (touched at construction, so the first timed chunk meets no
    # new page) are sized for the faces that carry messages: here none, one periodic box
    # on one rank. Buffers for every face, six slots of the largest at batch 64 in two
    # sets, would be 2 x 2 x 6 x 64 x 64 x 2 x 64 x 8 B = 101 MB.
    dec = hf.Decomposition(hf.Domain(shape=(64, 64, 64), periodic=(True, True, True)), MPI.COMM_SELF)
    stencil = hf.Stencil.laplace(2, 0.3)
    before = resident_bytes()
    op = hf.Operator(dec, stencil, "flat-optimized", schedule="double-buffered", batch=64, slope=0)
    assert resident_bytes() - before < 4 * 2**20
    a = np.random.default_rng(0).standard_normal(dec.local_shape(2))
    reference = hf.Operator(dec, stencil, "flat-original").apply(a)
    np.testing.assert_array_equal(op.apply(a), reference)


def test_the_tuner_s_costs_are_measured() -> None:
    # One rank: its Operator built and freed, and a round's collectives on itself.
    round_seconds, operator_seconds = calibrate.tuner_costs(MPI.COMM_SELF, repeats=2, rounds=3)
    assert 0 <= round_seconds < 0.1 and 0 < operator_seconds < 1.0


def test_one_rank_hides_every_transfer() -> None:
    # No partner, no message: the share stays Fig. 5.2's (the exchange is measured
    # between ranks 0 and 1 only).
    assert calibrate.hidden_share(MPI.COMM_SELF) == 1.0


def test_hockney_fit_recovers_a_line() -> None:
    sizes = [2**k for k in range(3, 23)]
    latency, bandwidth = 2e-6, 5e9
    fitted = calibrate.fit_hockney(sizes, [latency + s / bandwidth for s in sizes])
    assert fitted[0] == pytest.approx(latency, rel=1e-9)
    assert fitted[1] == pytest.approx(bandwidth, rel=1e-9)
    # s/T = B/2 at s = l*B = 10^4 bytes for an exact line.
    assert fitted[2] == pytest.approx(latency * bandwidth, rel=0.05)


def test_hockney_fit_ignores_noise_on_small_messages() -> None:
    # A busy machine only adds time: spikes on the latency-bound sizes leave B alone,
    # and l comes from the least disturbed small message.
    sizes = [2**k for k in range(3, 23, 3)]
    latency, bandwidth = 5e-6, 4e9
    seconds = [latency + s / bandwidth for s in sizes]
    seconds[1] *= 40
    seconds[2] *= 3
    fitted = calibrate.fit_hockney(sizes, seconds)
    assert fitted[0] == pytest.approx(latency, rel=1e-6)
    assert fitted[1] == pytest.approx(bandwidth, rel=1e-6)
    with pytest.raises(ValueError, match="times do not grow with message size over 65536..2097152 bytes"):
        calibrate.fit_hockney([8, 64, 65536, 2097152], [1e-5, 1e-5, 2e-3, 1e-3])


@pytest.mark.parametrize(
    "module",
    ["hybridfd.tune", "hybridfd.perfmodel.calibrate"],
)
def test_command_lines_help_and_reject_bad_options(module) -> None:
    ok = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and "usage:" in ok.stdout
    bad = subprocess.run(
        [sys.executable, "-m", module, "--repeats" if "calibrate" in module else "--grids", "-3"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2
    assert "-3" in bad.stderr


def test_the_budget_sets_how_many_candidates_are_measured(tmp_path) -> None:
    # By default the budget is BUDGET_SHARE of the model's time for JOB_GRIDS grids at
    # its best setting: on this box (the model's job of 500 grids takes microseconds)
    # it cannot pay for a race, nor can a budget of 0: the model's pick is taken
    # unmeasured, and the decision says so; a large budget races the whole shortlist.
    dec, stencil = problem()
    calibration = tmp_path / "calibration.json"
    entry = {**calibration_entry(), "host": host_name(), "mpi_library": calibrate.mpi_library(), "ranks": 1}
    calibrate.save(entry, calibration)
    options = {"cache": False, "calibration": calibration, "threads": 1, "trials": 3}
    tuning = tune.Tuning(dec, stencil, 16, job_grids=500, **options)
    best = tuning._shortlist[0].predicted
    assert tuning.decision.budget_seconds == pytest.approx(tune.BUDGET_SHARE * 500 * best / tuning.chunk)
    for budget in (None, 0.0):
        none = tune.tune(dec, stencil, 16, budget=budget, **options)
        assert (none.source, none.trials, none.measured, none.grids_applied) == ("model", [], None, 0)
        assert none.candidate == tuning._shortlist[0].candidate
        assert none.race.startswith("none: ") and "cannot pay for the cheapest race" in none.race
        assert none.summary()["race"] == none.race and none.overhead_seconds == none.tuning_seconds
        assert set(none.parts) == {"setup", "calibration", "ranking"}
    raced = tune.tune(dec, stencil, 16, budget=60.0, **options)
    assert (raced.source, len(raced.trials)) == ("tuner", 3) and raced.race.startswith("raced: ")


def test_a_budget_that_admits_no_entrant_races_no_transport() -> None:
    # The model's choice alone, measured once: no second race, not even its admission.
    field = entrants(tune.rank(pool(), synthetic), 4)
    (winner, raced), requests = drive(tune.tournament(MPI.COMM_SELF, field, hf.transport_names(), SPENT), synthetic)
    assert winner is field[0] and raced == [field[0]] and requests == [(field[0].candidate, True)]
