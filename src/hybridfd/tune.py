"""The tuner behind ``Operator(..., approach="auto")`` and ``hybridfd tune``.

1. The performance model (:mod:`hybridfd.perfmodel`, Fig. 5.2 plus compute, packing and
   synchronisation) ranks every candidate setting built from the registries: model and
   schedule (:func:`hybridfd.model_names`, :func:`hybridfd.schedule_names`), threads,
   batch and slope. The model cannot tell transports apart, so they are tried on the
   winner only, and only when its waiting and per-message cost, what a transport can
   change, is a share of its time worth a race.
2. Trial chunks measure the best few in races (:func:`race`) that drop an entrant once
   it is clearly beaten, given the noise measured between chunks (:func:`verdict`):
   the model's shortlist on the default transport, then the winner on the other
   transports. Every setting gives bit-identical results, so
   ``Operator(approach="auto")`` runs the trials on its first applies' own grids
   (:class:`Tuning`): tuning costs what the slower candidates lose on them and some
   fixed costs, not a separate benchmark. That overhead has a budget (:class:`Budget`;
   by default 5 % of the model's time for a job of 1,000 grids): a race is held, an
   entrant joins it, and a race runs another round, only if the budget affords what it
   is expected to cost, its Operators and collectives included (calibrated, then
   measured), so a budget too small for a race leaves the model's pick, unmeasured
   (``source`` "model"; ``Decision.race`` says why). Rank 0
   alone plans (one broadcast), decides (who joins, who goes on, which candidate wins;
   one broadcast per round) and broadcasts the result, so every rank takes the same
   path and the same winner even when their clocks disagree.
3. The winner is kept in a JSON cache keyed by host, MPI library, ranks, threads, grid
   shape, dtype, G (and the stencil radius, periodicity and process grid, which change
   the best setting too). A corrupt file, an entry that fails its schema (corrupt), was
   written by another hybridfd version or names settings the registries no longer have
   (stale), or whose own key differs from the one it is filed under (foreign) is
   reported and rebuilt, never used.

Run on the ranks to tune for::

    python -m hybridfd.launch -n 2 -- python -m hybridfd.tune --shape 48 48 48 --grids 64
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import math
import os
import statistics
import sys
import time
import weakref
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from hybridfd import traits
from hybridfd._collective import Problem as InputProblem
from hybridfd._collective import agree
from hybridfd._core import transport_support
from hybridfd.arrays import empty_aligned
from hybridfd.cli._common import positive_float, positive_int
from hybridfd.perfmodel import calibrate
from hybridfd.perfmodel.predict import Costs, Problem, Settings, predict, predict_all, slowest_problem
from hybridfd.perfmodel.store import StoreProblem, cache_dir, check_entry, host_name, read_entries, write_entries

FORMAT = "hybridfd-tune/1"
BATCHES = (1, 2, 4, 8, 16, 32, 64)
MAX_SLOPE = 3
# Schedules whose batches overlap computation; a slope only helps those.
SLOPED_SCHEDULES = traits.sloped_schedules()
DEFAULT_TRIALS = 4
# The trial chunk (:func:`trial_chunk`): the apply's own G where a chunk of G grids is
# short (every batch up to G a candidate, each measured as the job runs it: as many
# batches, the same slope ramp, the same pipelining), fewer grids where it is long, as
# every losing entrant's chunk costs its loss on that many grids: the most grids, a power
# of two, that the model puts within TRIAL_SECONDS, but never fewer than MIN_TRIAL_GRIDS
# (nor more than G or MAX_TRIAL_GRIDS, two of the largest batch).
TRIAL_SECONDS = 0.01
MIN_TRIAL_GRIDS = 16
MAX_TRIAL_GRIDS = 2 * BATCHES[-1]
DEFAULT_REPEATS = 3


@dataclass(frozen=True)
class Candidate:
    """One setting: the Operator keywords it stands for are :meth:`options`."""

    approach: str
    model: str
    schedule: str
    transport: str
    batch: int
    slope: int
    threads: int

    def options(self) -> dict:
        return asdict(self)

    def label(self) -> str:
        return (
            f"{self.model}/{self.schedule}/{self.transport} b={self.batch} n={self.slope} T={self.threads} "
            f"({self.approach})"
        )


@dataclass
class Trial:
    candidate: Candidate
    predicted: float
    measured: float | None  # None: the Operator refused it (e.g. MPI thread level)
    note: str = ""


@dataclass
class Decision:
    """What the tuner chose, why, and what it cost; identical on every rank."""

    candidate: Candidate
    predicted: float
    measured: float | None
    # "tuner" (raced), "model" (the model's pick: the budget could not pay for a race;
    # see ``race``) or "cache"
    source: str
    tuning_seconds: float
    trials: list[Trial] = field(default_factory=list)
    cache_status: str = ""
    # The grids of the caller's arrays the trials computed, and what tuning cost beyond
    # computing them with the winner: tuning_seconds - grids_applied x the winner's time
    # per grid (scratch grids, as in the offline tune(), are all overhead).
    grids_applied: int = 0
    overhead_seconds: float | None = None
    trial_grids: int = 0  # grids per trial chunk (0: from the cache, no trials)
    # Where rank 0's tuning_seconds went (see Tuning.parts), summing to tuning_seconds.
    parts: dict[str, float] = field(default_factory=dict)
    budget_seconds: float | None = None  # the overhead budget it was given (Budget)
    # Why there was a race or none: what the budget had left after the fixed costs
    # against what the cheapest race was estimated to cost (Budget.affords_race).
    race: str = ""

    def summary(self) -> dict:
        return {
            "source": self.source,
            "cache_status": self.cache_status,
            "tuning_seconds": self.tuning_seconds,
            "grids_applied": self.grids_applied,
            "overhead_seconds": self.overhead_seconds,
            "trial_grids": self.trial_grids,
            "parts": dict(self.parts),
            "budget_seconds": self.budget_seconds,
            "race": self.race,
            "predicted_seconds": self.predicted,
            "measured_seconds": self.measured,
            "trials": [
                {"setting": t.candidate.label(), "predicted": t.predicted, "measured": t.measured, "note": t.note}
                for t in self.trials
            ],
        }


@functools.cache
def presets() -> dict[str, tuple[str, str]]:
    """approach name -> (model, schedule) of its preset, read from the core's preset table
    (local and cheap: nothing is built, so the tuner's fixed cost does not grow with the
    number of presets)."""
    from hybridfd import _core

    return {name: tuple(_core.approach_preset(name)) for name in _core.approach_names()}


def candidates(
    grids: int,
    max_threads: int,
    *,
    models: Sequence[str],
    schedules: Sequence[str],
    transport: str,
    approaches: dict[str, tuple[str, str]],
) -> list[Candidate]:
    """Every (model, schedule, threads, batch, slope) for ``grids`` grids, with ``transport``.

    Batches are powers of two up to min(G, 64); slopes 0..3 (geometric, first batch at
    least one grid) on overlapping schedules; threads 2..max_threads for threaded models
    (funneled-overlap computes on T-1 of them), 1 for flat. Each is labelled with the
    preset of the same model and schedule, else of the same model, else flat-original.
    """
    result = []
    for model in models:
        threads_range = [1] if model == "flat" else list(range(2, max_threads + 1))
        approach = next((a for a, ms in approaches.items() if ms[0] == model), "flat-original")
        for schedule in schedules:
            label = next((a for a, ms in approaches.items() if ms == (model, schedule)), approach)
            for threads in threads_range:
                for batch in (b for b in BATCHES if b <= max(grids, 1)):
                    top = min(MAX_SLOPE, batch.bit_length() - 1) if schedule in SLOPED_SCHEDULES else 0
                    for slope in range(top + 1):
                        result.append(Candidate(label, model, schedule, transport, batch, slope, threads))
    return result


def distinct_schedules(problem: Problem, schedules: Sequence[str]) -> tuple[str, ...]:
    """``schedules`` less those that run exactly as another does on ``problem``: where z
    sends nothing to another rank, overlap-xy is overlap (its z faces are no messages),
    and a race would measure the same schedule twice."""
    if problem.z_bytes_per_grid == 0:
        return tuple(schedule for schedule in schedules if schedule != "overlap-xy")
    return tuple(schedules)


def trial_chunk(grids: int, seconds_per_grid: float) -> int:
    """Grids per trial chunk for applies of ``grids`` grids whose model time is
    ``seconds_per_grid`` (see TRIAL_SECONDS): G if G grids take at most TRIAL_SECONDS,
    else the largest power of two that does, at least MIN_TRIAL_GRIDS; never above G or
    MAX_TRIAL_GRIDS.

    Small grids get G: a chunk of 64 grids of 24^3 takes 2-5 ms, the settings differ by
    up to 2x there and the best batch is often above 16. Large ones get fewer: at 96^3 a
    chunk of 64 grids takes 0.2-0.4 s and the message buffers of a batch of 64 are
    38-75 MB to map per entrant, while every batch setting is within a few per cent."""
    top = min(grids, MAX_TRIAL_GRIDS)
    if top * seconds_per_grid <= TRIAL_SECONDS:
        return top
    fit = int(TRIAL_SECONDS / seconds_per_grid)  # > 0 s per grid here: G grids took longer
    power = 1 << (fit.bit_length() - 1) if fit >= 1 else 1
    return min(top, max(MIN_TRIAL_GRIDS, power))


@dataclass(frozen=True, eq=False)
class Pool:
    """A pool of :func:`candidates` and the same settings as the model's columns
    (:class:`~hybridfd.perfmodel.predict.Settings`), so that :func:`plan` predicts them
    all in one :func:`~hybridfd.perfmodel.predict.predict_all`; made once per problem
    in a process (:func:`candidate_pool`)."""

    candidates: tuple[Candidate, ...]
    settings: Settings
    batch: np.ndarray
    slope: np.ndarray
    index: dict[tuple[str, str, int, int, int], int]  # (model, schedule, batch, slope, threads) -> row


@functools.lru_cache(maxsize=16)
def candidate_pool(
    grids: int, max_threads: int, models: tuple[str, ...], schedules: tuple[str, ...], transport: str
) -> Pool:
    """The :class:`Pool` of :func:`candidates` for ``grids`` grids (labelled with
    :func:`presets`); cached, as every tuning of the same chunk asks for the same one."""
    pool = tuple(
        candidates(grids, max_threads, models=models, schedules=schedules, transport=transport, approaches=presets())
    )
    settings = Settings(
        tuple(c.model for c in pool),
        tuple(c.schedule for c in pool),
        tuple(c.batch for c in pool),
        tuple(c.slope for c in pool),
        tuple(c.threads for c in pool),
    )
    index = {(c.model, c.schedule, c.batch, c.slope, c.threads): row for row, c in enumerate(pool)}
    return Pool(pool, settings, np.array(settings.batch), np.array(settings.slope), index)


def rank(candidates: Sequence[Candidate], cost: Callable[[Candidate], float]) -> list[tuple[Candidate, float]]:
    """Candidates with their predicted cost (``cost`` of each), cheapest first; ties as
    :func:`ranked`."""
    scores = np.array([float(cost(c)) for c in candidates])
    return list(
        ranked(candidates, scores, np.array([c.batch for c in candidates]), np.array([c.slope for c in candidates]))
    )


def ranked(
    candidates: Sequence[Candidate], scores: np.ndarray, batch: np.ndarray, slope: np.ndarray
) -> Iterator[tuple[Candidate, float]]:
    """(candidate, score), cheapest first, from arrays of their scores, batches and slopes,
    made as they are read. Ties go to the larger batch (fewer messages: each costs CPU
    time to post that the model does not count), then to the smaller slope, then to the
    given order."""
    order = np.lexsort((slope, -batch, scores)).tolist() if len(candidates) else []
    return ((candidates[i], float(scores[i])) for i in order)


def shortlist(ranked: Iterable[tuple[Candidate, float]], trials: int) -> list[tuple[Candidate, float]]:
    """The ``trials`` candidates to measure, from ``ranked`` (cheapest first): first the
    best of each (model, schedule, threads) family, in ranked order, for half the trials
    (rounded up), so a model error that favours one family is caught by measuring
    others; then the rest in ranked order. Reads ``ranked`` only as far as it must (the
    tuner passes its pool's ranking as a generator)."""
    half = (trials + 1) // 2
    first: list[tuple[Candidate, float]] = []
    rest: list[tuple[Candidate, float]] = []
    families = set()
    for pair in ranked:
        family = (pair[0].model, pair[0].schedule, pair[0].threads)
        if family not in families and len(first) < half:
            families.add(family)
            first.append(pair)
        elif len(rest) < trials:
            rest.append(pair)
        if len(first) == half and len(rest) >= trials - half:
            break
    return (first + rest)[:trials]


@dataclass
class Entrant:
    """A candidate in a :func:`race`: its prediction and, on rank 0, its measured samples
    (seconds per trial chunk, the slowest rank's)."""

    candidate: Candidate
    predicted: float
    samples: list[float] = field(default_factory=list)
    refused: bool = False
    # One untimed chunk before the first timed one: for a transport variant, whose
    # first apply sets up what its transport makes lazily (rma-fence's window pages are
    # first touched by the first puts: its first 64-grid apply at 24^3 took 1.5x its
    # second); for the shortlist only where chunks are shorter than the apply (Tuning).
    warm_up: bool = False
    # Rounds it ran in, counted on every rank alike (samples: rank 0 only).
    runs: int = 0

    def seconds(self) -> float | None:
        """The fastest of its timed chunks. A busy machine's noise only ever adds time
        (a rank descheduled, a cache evicted), so the fastest chunk is the one nearest
        the setting's own time; a median of two chunks would average an outlier in."""
        return min(self.samples) if self.samples else None

    def trial(self) -> Trial:
        return Trial(self.candidate, self.predicted, None if self.refused else self.seconds(), self.note())

    def note(self) -> str:
        if self.refused:
            return "refused"
        return f"fastest of {len(self.samples)}" if self.samples else "not measured"


@dataclass
class Budget:
    """Rank 0's account of a tuning's overhead against its budget, in seconds.

    The overhead is what tuning costs beyond computing its trial grids at the winner's
    speed: the fixed costs (calibration, ranking, decisions), the entrants' Operators and
    what the slower entrants lose on their chunks. Every step that spends some asks
    first, with what it will really cost: a race is held at all only if the budget left
    after the fixed costs pays for one entrant beyond the model's pick and the rounds it
    adds (:meth:`affords_race`, before any chunk); an entrant joins a race only if its
    Operator, its chunks' collectives and its expected loss fit in what is left
    (:meth:`admits`); and a race runs another round only if what its followers lost on
    the last one and the round's collectives do (:func:`verdict`). So the overhead stays
    within ``seconds`` give or take the error of one such estimate. ``spent()`` is the
    overhead so far; ``build`` one entrant's Operator built and freed, and ``round`` one
    race round's collectives on rank 0 (a timed chunk's barrier, the reduction, the
    broadcast): the calibrated costs (:func:`hybridfd.perfmodel.calibrate.tuner_costs`),
    each raised to the dearest this tuning measures (:class:`Tuning`).
    """

    seconds: float
    spent: Callable[[], float] = lambda: 0.0
    build: float = 0.0
    round: float = 0.0

    def left(self) -> float:
        return self.seconds - self.spent()

    def entrant_cost(self, first: Entrant, chunk: float, entrant: Entrant) -> float:
        """What ``entrant`` is expected to cost beyond useful work in a race led by
        ``first`` whose chunk takes ``chunk`` seconds, by the race's own rules: its
        Operator, the collectives of its timed chunks (a round's worth each: MIN_SAMPLES
        of them, the most it runs), and the loss of each chunk it runs (its warm-up
        chunk, if any, and its timed ones: MIN_SAMPLES if the model puts it within
        FIRST_MARGIN of ``first``, which keeps it for the tie-break, else one), each
        chunk losing its predicted excess over ``first`` plus FIRST_MARGIN of the chunk
        (the model's error and the noise between chunks: the overhead counts every
        chunk against the fastest one)."""
        excess = max(entrant.predicted - first.predicted, 0.0)
        timed = MIN_SAMPLES if excess < FIRST_MARGIN * chunk else 1
        chunks = timed + (1 if entrant.warm_up else 0)
        return self.build + MIN_SAMPLES * self.round + chunks * (excess + FIRST_MARGIN * chunk)

    def race_cost(self, chunk: float) -> float:
        """What admitting anyone costs beyond the entrants' own, for chunks of ``chunk``
        seconds: the rounds the race then runs after the first's (the admitted's round
        and the tie-break: MIN_SAMPLES), and the first's chunks in them beyond its first
        (MIN_SAMPLES - 1), each FIRST_MARGIN of a chunk off its fastest (the noise)."""
        return MIN_SAMPLES * self.round + (MIN_SAMPLES - 1) * FIRST_MARGIN * chunk

    def admits(self, first: Entrant, waiting: Sequence[Entrant]) -> int:
        """How many of ``waiting``, in order, may join a race led by ``first``: as many
        as what is left pays for, after what admitting anyone adds (:meth:`race_cost`),
        each at :meth:`entrant_cost`, with ``first``'s chunk (its fastest, else the
        model's)."""
        chunk = first.seconds() if first.samples else first.predicted
        left = self.left() - self.race_cost(chunk)
        count = 0
        for entrant in waiting:
            left -= self.entrant_cost(first, chunk, entrant)
            if left < 0:
                break
            count += 1
        return count

    def race_estimate(self, shortlist: Sequence[Entrant]) -> float:
        """Before any chunk: what the cheapest race costs, beyond the fixed costs spent so
        far: the first's round and the closing broadcast (a round each), the rounds an
        admission adds, and one entrant: the shortlist's second, else a transport variant
        of the first (predicted alike)."""
        first = shortlist[0]
        second = shortlist[1] if len(shortlist) > 1 else first
        chunk = first.predicted
        return 2 * self.round + self.race_cost(chunk) + self.entrant_cost(first, chunk, second)

    def affords_race(self, shortlist: Sequence[Entrant]) -> bool:
        """Whether what is left pays for :meth:`race_estimate`; if not, the model's pick
        is taken without a race (no chunk timed, no collective beyond the plan's)."""
        return bool(shortlist) and self.race_estimate(shortlist) <= self.left()


# The budget by default (issue 13: tuning under 5 % of a 1,000-grid job): BUDGET_SHARE of
# the model's time for a job of JOB_GRIDS grids at its best setting.
BUDGET_SHARE = 0.05
JOB_GRIDS = 1000
UNLIMITED = Budget(math.inf)


# What a race asks its driver for: apply one trial chunk with this candidate, timed or
# not. Only an entrant with warm_up gets an untimed chunk: an Operator's constructor
# touches its message buffers, and the kernel reads the grids in place, so on the default
# transport its first apply is as fast as its second (benchmarks/tune_overhead.py prints
# both per transport).
Request = tuple[Candidate, bool]


# When a race drops an entrant: its median chunk time exceeds the leader's by more than
# the margin the noise between chunks allows. The noise is measured, not assumed, as soon
# as any setting has two timed chunks (:func:`chunk_noise`); before that, one sample each,
# only an entrant FIRST_MARGIN slower is dropped (the model's error on this machine plus
# a busy machine's chunk-to-chunk spread), so one noisy early chunk no longer decides.
FIRST_MARGIN = 0.15
# Differences below MIN_MARGIN are not worth another chunk (the target is 5 %).
MIN_MARGIN = 0.02
# The margin in units of the noise: the medians of two chunks each differ by about the
# noise; three times that is a difference the noise rarely makes.
NOISE_FACTOR = 3.0
# Entrants left within the margin of the leader once each has MIN_SAMPLES timed chunks
# are tied: more chunks would spend time on a difference the noise hides.
MIN_SAMPLES = 2


def chunk_noise(entrants: Sequence[Entrant]) -> float | None:
    """The relative spread between timed chunks of the same setting: the median, over
    every sample of every entrant with at least two, of |sample - median| / median
    (None while no entrant has two)."""
    deviations = []
    for entrant in entrants:
        if len(entrant.samples) >= 2:
            middle = statistics.median(entrant.samples)
            deviations += [abs(s - middle) / middle for s in entrant.samples if middle > 0]
    return statistics.median(deviations) if deviations else None


def race_margin(noise: float | None) -> float:
    """How much slower than the leader an entrant may be and still run on (relative)."""
    return FIRST_MARGIN if noise is None else max(MIN_MARGIN, NOISE_FACTOR * noise)


def verdict(alive: Sequence[Entrant], history: Sequence[Entrant], budget: Budget) -> list[int]:
    """Rank 0's decision after a round: the indices into ``alive`` that run on, fastest
    first (by :meth:`Entrant.seconds`); one index (or none) ends the race. Dropped: the
    refused and the not yet measured, and every entrant clearly beaten (slower than the
    leader by more than :func:`race_margin` of the noise measured on ``history`` and
    ``alive``). The leader alone goes on when the rest are tied with it (within the
    margin, each with MIN_SAMPLES chunks), or when another round would cost more than
    the ``budget`` has left: what the followers lost against the leader on this one,
    and the round's collectives (one round's worth per entrant in it: its chunk's
    barrier, and the reduction and broadcast once)."""
    runnable = sorted((i for i, e in enumerate(alive) if not e.refused and e.samples), key=lambda i: alive[i].seconds())
    if not runnable:
        return []
    margin = race_margin(chunk_noise([*history, *alive]))
    lead = alive[runnable[0]].seconds()
    keep = [i for i in runnable if alive[i].seconds() <= lead * (1 + margin)]
    if all(len(alive[i].samples) >= MIN_SAMPLES for i in keep):
        return keep[:1]
    loss = sum(alive[i].seconds() - lead for i in keep[1:])
    return keep if loss + len(keep) * budget.round <= budget.left() else keep[:1]


def race(
    comm: object,
    entrants: Sequence[Entrant],
    budget: Budget,
    retire: Callable[[Candidate], None] = lambda candidate: None,
    history: Sequence[Entrant] = (),
    worth: Callable[[Entrant], bool] = lambda first: True,
) -> Generator[Request, float | None, Entrant | None]:
    """Collective race over ``entrants`` (a coroutine); returns the one survivor, the
    same on every rank (None if every entrant was refused).

    The first entrant (the model's best, or an earlier race's survivor) runs a timed
    trial chunk alone, unless it ran one already; then rank 0 admits as many of the
    others as its ``budget`` affords (:meth:`Budget.admits`, with the first's chunk and
    the last Operator measured; none if ``worth(first)`` is false), so a budget too
    small for any entrant leaves the first, measured on one chunk (:class:`Tuning`
    holds no race at all where the budget cannot pay for one). The next
    round times the admitted entrants, the rounds after it every entrant still in, one
    chunk each (after one untimed chunk the first time, for an entrant with
    ``warm_up``); after each round rank 0, given the slowest rank's
    time of each (one reduction per round), decides who goes on (:func:`verdict`: those
    not clearly beaten by the leader, given the noise measured between chunks, here and
    on the earlier entrants ``history``, while the budget affords another round) and
    broadcasts it, so every rank runs the same chunks and ends with the same winner
    whatever its own clock said. At most MIN_SAMPLES timed rounds follow the admission. An
    entrant's time is its fastest chunk, which resists the outliers of a busy machine.
    ``retire(candidate)`` is called for each entrant dropped, in entrant order on every
    rank (the driver frees its Operator: a one-sided transport frees its window
    collectively).

    The driver sends back this rank's seconds for each request, or None if the
    Operator refused the candidate (which happens on every rank alike, so every rank
    reduces as many times). Samples end up on rank 0's entrants only.
    """
    from mpi4py import MPI

    root = comm.Get_rank() == 0
    waiting = [e for e in entrants if not e.refused]
    alive, waiting = waiting[:1], waiting[1:]
    admitting = True  # until an entrant has run: then rank 0 admits the others
    while alive:
        timed = []
        seconds = []
        # A round runs the entrants with the fewest rounds: the first alone, then those
        # it admitted, then every one still in.
        fewest = min(e.runs for e in alive)
        for entrant in alive:
            if entrant.runs > fewest or (admitting and entrant.runs):
                continue  # an earlier race timed it: admission needs no new chunk
            entrant.runs += 1
            if entrant.warm_up:
                entrant.warm_up = False
                if (yield (entrant.candidate, False)) is None:
                    entrant.refused = True
                    continue
            answer = yield (entrant.candidate, True)
            if answer is None:
                entrant.refused = True
            else:
                timed.append(entrant)
                seconds.append(answer)
        if timed:
            mine = np.array(seconds, dtype=float)
            worst = np.empty_like(mine) if root else None
            comm.Reduce(mine, worst, op=MPI.MAX, root=0)
            if root:
                for entrant, value in zip(timed, worst.tolist(), strict=True):
                    entrant.samples.append(value)
        decision = None
        if root:
            keep = verdict(alive, history, budget)
            admit = 0
            if admitting and waiting:
                # Every entrant so far refused: the next takes the first's place.
                admit = 1 if not keep else budget.admits(alive[keep[0]], waiting) if worth(alive[keep[0]]) else 0
            decision = (keep, admit)
        keep, admit = comm.bcast(decision, root=0)
        for i, entrant in enumerate(alive):
            if i not in keep:
                retire(entrant.candidate)
        admitting = admitting and not keep
        alive = [alive[i] for i in keep] + waiting[:admit]
        waiting = waiting[admit:]
        if len(alive) == 1 and not admitting:
            return alive[0]
    return None


def leader(comm: object, entrants: Sequence[Entrant]) -> Entrant | None:
    """Collective: the fastest measured entrant by rank 0's samples (:meth:`Entrant.seconds`),
    the same on every rank."""
    best = None
    if comm.Get_rank() == 0:
        runnable = [i for i, e in enumerate(entrants) if not e.refused and e.samples]
        best = min(runnable, key=lambda i: entrants[i].seconds()) if runnable else None
    best = comm.bcast(best, root=0)
    return None if best is None else entrants[best]


def tournament(
    comm: object,
    shortlist: Sequence[Entrant],
    transports: Sequence[str],
    budget: Budget,
    retire: Callable[[Candidate], None] = lambda candidate: None,
    transport_share: Callable[[Candidate], float] = lambda candidate: 1.0,
) -> Generator[Request, float | None, tuple[Entrant | None, list[Entrant]]]:
    """Collective (a coroutine, like :func:`race`): race the ``shortlist``, then its
    survivor (samples kept) against itself on each other transport of ``transports``
    that supports its model and schedule, as many as the budget admits. Returns (the
    winner or None if every entrant was refused, every entrant that ran, in the order
    raced).

    The transports are raced only if ``transport_share(survivor)`` on rank 0 (the
    model's share of its time that a transport can change: waiting and per-message
    cost) reaches MIN_MARGIN: a transport that made communication free would gain less
    than that, and every variant raced costs an Operator, its buffers or windows and
    its slower chunks."""
    first = yield from race(comm, shortlist, budget, retire)
    if first is None:
        return None, [e for e in shortlist if e.runs]
    c = first.candidate
    variants = []
    for transport in transports:
        support = transport_support(transport)
        if transport != c.transport and c.model in support["models"] and c.schedule in support["schedules"]:
            variant = Candidate(**{**c.options(), "transport": transport})
            variants.append(Entrant(variant, first.predicted, warm_up=True))
    winner = first
    # A budget that admitted none of the shortlist admits no variant either (one costs
    # no more than the shortlist's next entrant would have): no decision to broadcast.
    admitted = len(shortlist) == 1 or any(e.runs for e in shortlist if e is not first)
    if variants and admitted:
        # The first race's chunks measured the noise already: clearly beaten variants
        # drop after their first timed chunk.
        history = [e for e in shortlist if e is not first]
        worth = lambda survivor: transport_share(survivor.candidate) >= MIN_MARGIN  # noqa: E731
        winner = yield from race(comm, [first, *variants], budget, retire, history, worth)
    return winner, [e for e in [*shortlist, *variants] if e.runs]


@dataclass(frozen=True)
class Plan:
    """Rank 0's plan of a tuning, broadcast once: the trial chunk (grids), the shortlist
    (candidate, predicted seconds per chunk, best first) and the budget (seconds)."""

    chunk: int
    shortlist: list[tuple[Candidate, float]]
    budget: float


def predicted(costs: Costs, problem: Problem, c: Candidate) -> float:
    """The model's seconds for ``c`` on ``problem``."""
    return predict(costs, problem, model=c.model, schedule=c.schedule, batch=c.batch, slope=c.slope, threads=c.threads)


def transport_share(costs: Costs, problem: Problem, c: Candidate) -> float:
    """The share of ``c``'s predicted time a transport can change: what is left with
    communication free (no latency, per-message cost or transfer time) no transport can."""
    free = replace(costs, latency=0.0, per_message=0.0, bandwidth=math.inf)
    return 1.0 - predicted(free, problem, c) / max(predicted(costs, problem, c), 1e-300)


def plan(
    costs: Costs,
    whole: Problem,
    threads: int,
    registries: dict[str, Sequence[str]],
    *,
    trials: int,
    trial_grids: int | None,
    budget: float | None,
    job_grids: int,
) -> Plan:
    """Rank 0's plan for applies of ``whole.grids`` grids (the slowest rank's problem):
    the trial chunk (``trial_grids``, else :func:`trial_chunk` from a flat
    double-buffered apply of batch 16, which stands for all), the candidates ranked by
    the model for that chunk (so predicted and measured compare like with like), the
    ``trials`` of :func:`shortlist`, and the budget: ``budget`` seconds, else
    BUDGET_SHARE of the model's time for ``job_grids`` grids at its best setting."""
    grids = whole.grids
    transport = "p2p" if "p2p" in registries["transport"] else registries["transport"][0]
    models, schedules = tuple(registries["model"]), distinct_schedules(whole, registries["schedule"])

    def scored(count: int) -> tuple[Pool, np.ndarray]:
        # Every candidate at once: one evaluation of the model over the pool's columns.
        pool = candidate_pool(count, threads, models, schedules, transport)
        return pool, predict_all(costs, whole if count == grids else replace(whole, grids=count), pool.settings)

    chunk = grids if trial_grids is None else min(grids, trial_grids)
    pool, scores = scored(chunk)
    if trial_grids is None:
        # The typical apply is in the pool of G grids, which is the chunk's pool where
        # the chunk is G (small grids, where the ranking's time counts).
        row = pool.index.get(("flat", "double-buffered", min(16, grids), 0, 1))
        if row is None:
            typical = predict(costs, whole, model="flat", schedule="double-buffered", batch=min(16, grids), slope=0)
        else:
            typical = float(scores[row])
        chunk = trial_chunk(grids, typical / grids)
        if chunk != grids:
            pool, scores = scored(chunk)
    chosen = shortlist(ranked(pool.candidates, scores, pool.batch, pool.slope), trials)[:trials]
    if budget is None:
        budget = BUDGET_SHARE * job_grids * chosen[0][1] / chunk
    return Plan(chunk, chosen, float(budget))


# Calibrations rank 0 read and checked in this process, by the file's identity (path,
# inode, size, modification time) and what it was asked for: the tuner reads the file at
# every Operator(approach="auto"), and parsing and checking it took 0.2-0.6 ms, a third of
# the budget of a small job. A file rewritten in any way (calibrate.save replaces it) has
# another identity and is read again.
_CALIBRATIONS: dict[tuple, Costs] = {}


def _file_costs(path: Path | None, ranks: int, dtype: str, points: int) -> Costs | None:
    """Rank 0: the costs in the calibration file for this machine, ranks and dtype (None if
    it has none); StoreProblem if it cannot be trusted."""
    path = calibrate.default_path() if path is None else Path(path)
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise StoreProblem(f"{path} cannot be read: {error}") from None
    key = (str(path), stat.st_ino, stat.st_size, stat.st_mtime_ns, ranks, dtype, points)
    if key not in _CALIBRATIONS:
        entry = calibrate.load(path, ranks=ranks)
        if entry is None or dtype not in entry["compute_per_point"]:
            return None
        if len(_CALIBRATIONS) >= 16:
            _CALIBRATIONS.clear()
        _CALIBRATIONS[key] = calibrate.costs(entry, dtype, points)
    return _CALIBRATIONS[key]


class Tuning:
    """Collective: one tuning of (decomposition, stencil, G), fed with chunks of work.

    Rank 0 plans it (:func:`plan`) and broadcasts the plan, or the cache's answer, in
    one message: the cache answers at once if it can (:attr:`decision` is then set).
    Otherwise the model ranks the candidates for a trial chunk of ``trial_grids`` grids
    (default :func:`trial_chunk`: G where its apply is short; never more than G) and two
    races (:func:`tournament`) measure them on chunks the caller feeds (:meth:`feed`):
    first the model's shortlist on the default transport, then, if the model says a
    transport can matter, the winner on the other transports that support its model and
    schedule. Every setting gives bit-identical results, so the chunks can be the job's
    own grids: ``Operator(approach="auto")`` feeds the grids of its first applies, and
    tuning costs only what the slower candidates lose against the winner on them, plus
    fixed costs (ADCL's run-time selection of a halo-exchange implementation within the
    application's first iterations, Gabriel et al., EuroPVM/MPI 2006). The offline
    :func:`tune` feeds scratch arrays instead.

    That cost, the overhead, is bounded by a budget (:class:`Budget`): ``budget``
    seconds, by default BUDGET_SHARE (5 %) of the model's time for a job of
    ``job_grids`` grids (default JOB_GRIDS, 1,000) at its best setting. Before any
    chunk rank 0 asks whether what is left after the fixed costs pays for the cheapest
    race (:meth:`Budget.affords_race`, with the calibrated round and Operator); if not,
    the model's pick is the decision at once (``source`` "model", no chunk timed, no
    collective beyond the plan's broadcast). Otherwise entrants join a race only while
    the budget affords their Operator, collectives and expected loss.
    """

    def __init__(
        self,
        decomposition: object,
        stencil: object,
        grids: int,
        *,
        threads: int | None = None,
        cache: Path | None | bool = None,
        calibration: Path | None = None,
        trials: int = DEFAULT_TRIALS,
        budget: float | None = None,
        trial_grids: int | None = None,
        job_grids: int = JOB_GRIDS,
    ) -> None:
        from hybridfd import _core

        self.decomposition, self.stencil = decomposition, stencil
        comm = self.comm = decomposition.comm
        began = time.perf_counter()
        problem_text = None
        if isinstance(grids, bool) or not isinstance(grids, (int, np.integer)) or grids < 1:
            problem_text = f"grids {grids!r} must be a positive int (the G to tune for)"
        threads = default_threads() if threads is None else threads
        counts = (("threads", threads), ("trials", trials), ("job_grids", job_grids))
        for name, value in (*counts, ("trial_grids", 1 if trial_grids is None else trial_grids)):
            if problem_text is None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                problem_text = f"{name} {value!r} must be a positive int"
        if problem_text is None and not (budget is None or (isinstance(budget, (int, float)) and budget >= 0)):
            problem_text = f"budget {budget!r} must be a number of seconds >= 0"
        # Every rank must tune for the same G (the trials are collective applies); a bad or
        # differing value raises on every rank before any trial starts.
        bad = None if problem_text is None else InputProblem(problem_text)
        agree(comm, bad, 0 if bad else int(grids), "grids")
        self.decision: Decision | None = None
        self.winner_operator: object | None = None  # the winner's Operator, once decided
        self.grids_applied = 0  # grids of the caller's arrays the trials computed
        registries = {
            "model": _core.model_names(),
            "schedule": _core.schedule_names(),
            "transport": _core.transport_names(),
            "approach": _core.approach_names(),
        }
        root = comm.Get_rank() == 0
        self._key = cache_key(decomposition, stencil, int(grids), threads)
        self._path = None if cache is False else (default_cache_path() if cache in (None, True) else Path(cache))
        # Rank 0's seconds per part of the tuning (what tuning_seconds is made of): setup
        # (cache lookup included), calibration, ranking; then, while fed, operators
        # (building and freeing the candidates'), chunks (the trial chunks, timed), and
        # decisions (the races' reductions and broadcasts).
        self.parts: dict[str, float] = {}
        self._unbudgeted = 0.0  # a quick calibration's seconds: they come on top of the budget
        self._tuner_costs = (0.0, 0.0)  # rank 0: the calibrated Operator and round (Budget)
        whole, costs, mark = None, None, began

        def planned() -> tuple:
            """Rank 0: the plan's message (see :func:`plan`), and its transport share."""
            the_plan = plan(
                costs,
                whole,
                threads,
                registries,
                trials=trials,
                trial_grids=trial_grids,
                budget=budget,
                job_grids=job_grids,
            )
            problem = replace(whole, grids=the_plan.chunk)
            self._transport_share = lambda c: transport_share(costs, problem, c)
            # Before any chunk: can what is left after the fixed costs so far (the plan's
            # broadcast to come counted as a round) pay for the cheapest race?
            ahead = Budget(
                the_plan.budget,
                lambda: time.perf_counter() - began - self._unbudgeted,
                costs.tuner_operator,
                costs.tuner_round,
            )
            self._tuner_costs = (costs.tuner_operator, costs.tuner_round)
            estimate = ahead.race_estimate([Entrant(c, p) for c, p in the_plan.shortlist]) + ahead.round
            left = ahead.left()
            racing = estimate <= left
            verb = "pays" if racing else "cannot pay"
            race = f"{left * 1e3:.3f} ms of the budget left {verb} for the cheapest race ({estimate * 1e3:.3f} ms)"
            if racing:
                return ("plan", the_plan, self._status, race, None)
            self._charge("ranking", mark)
            account = (time.perf_counter() - began, dict(self.parts))
            return ("plan", the_plan, self._status, "none: " + race, account)

        # Rank 0 alone looks up, calibrates and ranks, then sends the others one message:
        # the cache's answer, the plan, or (no usable calibration file) a call to a quick
        # calibration on every rank, after which the plan follows in a second one.
        message = None
        if root:
            entry, status = cache_lookup(self._path, self._key, registries) if self._path else (None, "no cache")
            mark = self._charge("setup", began)
            if entry is not None:
                message = ("cache", entry, status, time.perf_counter() - began)
            else:
                # The rank with the most points (then halo bytes) sets the pace of a
                # collective apply; every rank's box is known here (no gather).
                whole = slowest_problem(decomposition, stencil.radius, int(grids))
                mark = self._charge("setup", mark)
                try:
                    costs = _file_costs(calibration, comm.Get_size(), decomposition.domain.dtype, whole.points)
                    note = "calibration file" if costs else "no calibration file: quick calibration"
                except StoreProblem as problem:
                    costs, note = None, f"calibration ignored ({problem}): quick calibration"
                self._status = f"{status}; {note}".strip("; ")
                mark = self._charge("calibration", mark)
                if costs is None:
                    message = ("calibrate", max(4, round(whole.points ** (1 / 3))), self._status)
                else:
                    message = planned()
        message = comm.bcast(message, root=0)
        if message[0] == "cache":
            _, entry, status, seconds = message
            self.decision = Decision(
                Candidate(**entry["choice"]),
                entry["predicted"],
                entry["measured"],
                "cache",
                seconds,
                cache_status=status,
            )
            return
        if message[0] == "calibrate":  # no usable calibration file: a quick one, made now by every rank
            _, edge, self._status = message
            mark = time.perf_counter()
            dtype = decomposition.domain.dtype
            entry = calibrate.calibrate(
                comm, sizes=calibrate.SIZES[::3], subgrids=(edge,), dtypes=(dtype,), repeats=DEFAULT_REPEATS
            )
            costs = calibrate.costs(entry, dtype, whole.points) if root else None
            self._unbudgeted = -mark
            mark = self._charge("calibration", mark)
            self._unbudgeted += mark
            message = comm.bcast(planned() if root else None, root=0)
        _, the_plan, self._status, self._race, account = message
        if not root:
            self._transport_share = lambda c: 0.0  # only rank 0's is asked
        self.chunk = the_plan.chunk
        # A warm-up chunk for the shortlist only where chunks are shorter than the apply
        # (large grids): there it costs a fraction of an apply and keeps the behaviour
        # session 5 measured on a quiet machine (+0.8 % of the job at 96^3). Without it
        # the 96^3 jobs of two A/B runs under load were 7-14 % slower, no more than two
        # identical tuners differed (6 %), so it is kept out of caution, not proof.
        # Where a chunk is the whole apply (small grids) it would add an apply per
        # entrant, a quarter of a 1,000-grid job, and measured nothing there.
        warm_up = self.chunk < int(grids)
        self._shortlist = [Entrant(c, p, warm_up=warm_up) for c, p in the_plan.shortlist]
        if account is not None:  # no race: the model's pick, rank 0's account of it
            seconds, parts = account
            (candidate, prediction), *_ = the_plan.shortlist
            self.decision = Decision(
                candidate,
                prediction,
                None,
                "model",
                seconds,
                cache_status=self._status,
                overhead_seconds=seconds,
                parts=parts,
                budget_seconds=the_plan.budget,
                race=self._race,
            )
            if self._path is not None and root:
                cache_store(self._path, self._key, self.decision)
            return
        self._fastest = the_plan.shortlist[0][1]  # seconds per chunk: the model's until measured
        # Through a weak reference: a bound method would make a cycle that keeps a
        # finished Tuning, and the winner's Operator it holds, alive until the garbage
        # collector runs, at a different moment on each rank, and freeing an Operator of
        # a one-sided transport frees its window, a collective (a deadlock seen in
        # tests/mpi/test_tune.py).
        tuning = weakref.ref(self)
        self._budget = Budget(the_plan.budget, lambda: tuning()._overhead(), *self._tuner_costs)
        self._builds: dict[Candidate, float] = {}  # each Operator's build, then its free added
        self._transports = registries["transport"]
        self._operators: dict[Candidate, object | None] = {}
        self._refusal = ""  # why the first refused candidate was refused
        self._failure: ValueError | None = None
        self._retiring = 0.0  # seconds of the current decision spent freeing Operators
        self._mark = 0.0  # when the current decision began
        if root:
            self._charge("ranking", mark)  # the plan's broadcast included
        self._seconds = time.perf_counter() - began  # rank 0's reading is the one reported
        self._feed_began = time.perf_counter()
        self._steps = self._run()
        self._request: Request | None = next(self._steps)

    def _charge(self, part: str, since: float) -> float:
        """Add the time since ``since`` to ``part``; return now."""
        now = time.perf_counter()
        self.parts[part] = self.parts.get(part, 0.0) + now - since
        return now

    def _overhead(self) -> float:
        """Rank 0's overhead so far (what :class:`Budget` spends): its time in the tuner
        (not the caller's between applies, nor a quick calibration) less the grids fed so
        far at the speed of the fastest chunk (the model's best before any was timed)."""
        elapsed = self._seconds + time.perf_counter() - self._feed_began - self._unbudgeted
        return elapsed - self.grids_applied * self._fastest / self.chunk

    def _account(self) -> tuple[float, dict[str, float]]:
        """Rank 0's tuning_seconds and parts as of now, the current decision included."""
        now = time.perf_counter()
        parts = dict(self.parts)
        parts["decisions"] = parts.get("decisions", 0.0) + now - (self._mark + self._retiring)
        return self._seconds + now - self._feed_began, parts

    def _retire(self, candidate: Candidate) -> None:
        mark = time.perf_counter()
        self._operators.pop(candidate, None)
        freed = self._charge("operators", mark) - mark
        self._retiring += freed
        built = self._builds.get(candidate, 0.0) + freed
        self._budget.build = max(self._budget.build, built)

    def _run(self) -> Generator[Request, float | None, None]:
        winner, entrants = yield from tournament(
            self.comm, self._shortlist, self._transports, self._budget, self._retire, self._transport_share
        )
        # Rank 0's samples and time, in one broadcast: every rank reports the same trials
        # and time (the last collective of a tuning).
        mine = None
        if self.comm.Get_rank() == 0:
            mine = ([e.trial() for e in entrants], None if winner is None else winner.seconds(), *self._account())
        trials, measured, seconds, parts = self.comm.bcast(mine, root=0)
        if winner is None:
            tried = "; ".join(t.candidate.label() for t in trials)
            raise ValueError(f"no candidate setting could run on these ranks ({self._refusal}; tried: {tried})")
        self.winner_operator = self._operators.get(winner.candidate)
        self.decision = Decision(
            winner.candidate,
            winner.predicted,
            measured,
            "tuner",
            seconds,
            trials,
            self._status,
            parts=parts,
            budget_seconds=self._budget.seconds,
            race="raced: " + self._race,
        )

    def _operator(self, candidate: Candidate) -> object | None:
        """The candidate's Operator, made at its first request; None if refused. The
        budget expects the next one to cost the dearest built (and freed) so far, or the
        calibrated one if that is dearer."""
        from hybridfd.operator import Operator

        if candidate not in self._operators:
            began = time.perf_counter()
            try:
                self._operators[candidate] = Operator(self.decomposition, self.stencil, **candidate.options())
            except ValueError as refusal:
                self._operators[candidate] = None  # raised on every rank alike (the core agrees)
                self._refusal = self._refusal or f"{candidate.label()}: {refusal}"
            self._builds[candidate] = time.perf_counter() - began
            self._budget.build = max(self._budget.build, self._builds[candidate])
        return self._operators[candidate]

    def feed(self, a: np.ndarray, out: np.ndarray, phases: object = None) -> int:
        """Collective: apply trial chunks to the leading grids of ``a`` (G, nx, ny, nz)
        into ``out`` while the tuning lasts; return how many grids were applied. The same
        G on every rank. An apply shorter than a chunk (or its last part) is a chunk of
        its own, its time scaled to a whole chunk's, so every apply moves the tuning on;
        the rest of the arrays is the caller's once :attr:`decision` is set."""
        if self._failure is not None:
            raise self._failure
        self._feed_began = time.perf_counter()
        done, grids, finished = 0, a.shape[0], False
        try:
            while self.decision is None and done < grids:
                candidate, timed = self._request
                mark = time.perf_counter()
                op = self._operator(candidate)
                mark = self._charge("operators", mark)
                seconds, barrier = None, 0.0
                if op is not None:
                    count = min(self.chunk, grids - done)
                    part = slice(done, done + count)
                    if timed:
                        # Every rank starts the chunk together: its time is the apply's,
                        # not a rank's lateness from the previous decision. The barrier
                        # is a decision's collective (Budget.round).
                        self.comm.Barrier()
                        now = self._charge("decisions", mark)
                        barrier, mark = now - mark, now
                    start = time.perf_counter()
                    op.apply(a[part], out[part], phases)
                    seconds = (time.perf_counter() - start) * self.chunk / count
                    self._fastest = min(self._fastest, seconds)
                    done += count
                    self.grids_applied += count
                    mark = self._charge("chunks" if timed else "warm-up chunks", mark)
                self._retiring = 0.0
                self._mark = mark
                try:
                    self._request = self._steps.send(seconds)
                except StopIteration:
                    finished = True
                    # Only the winner's Operator lives on (the others were retired as
                    # the races dropped them, in the same order on every rank).
                    self._operators.clear()
                except ValueError as failure:
                    self._failure = failure
                    raise
                finally:
                    # A round's collectives as measured (the reduction and broadcast, and
                    # this chunk's barrier): the budget expects the dearest so far.
                    spent = self._charge("decisions", mark + self._retiring) - mark - self._retiring
                    self._budget.round = max(self._budget.round, spent + barrier)
        finally:
            self._seconds += time.perf_counter() - self._feed_began
        if finished:
            self._finish()
        return done

    def _finish(self) -> None:
        """Complete the decision (its time came with the last broadcast) and cache it."""
        decision = self.decision
        decision.grids_applied = self.grids_applied
        decision.trial_grids = self.chunk
        if decision.measured is not None:
            decision.overhead_seconds = decision.tuning_seconds - self.grids_applied * decision.measured / self.chunk
        if self._path is not None and self.comm.Get_rank() == 0:
            cache_store(self._path, self._key, decision)


# ---------------------------------------------------------------------------- cache

CHOICE_SCHEMA = {
    "type": "object",
    "required": ["approach", "model", "schedule", "transport", "batch", "slope", "threads"],
    "additionalProperties": False,
    "properties": {
        "approach": {"type": "string"},
        "model": {"type": "string"},
        "schedule": {"type": "string"},
        "transport": {"type": "string"},
        "batch": {"type": "integer", "minimum": 1},
        "slope": {"type": "integer", "minimum": 0},
        "threads": {"type": "integer", "minimum": 1},
    },
}
ENTRY_SCHEMA = {
    "type": "object",
    "required": ["key", "choice", "predicted", "measured", "tuning_seconds", "created", "hybridfd_version"],
    "properties": {
        "key": {"type": "object"},
        "choice": CHOICE_SCHEMA,
        "predicted": {"type": "number", "minimum": 0},
        "measured": {"type": ["number", "null"], "minimum": 0},
        "tuning_seconds": {"type": "number", "minimum": 0},
        "created": {"type": "string"},
        "hybridfd_version": {"type": "string"},
    },
}


def default_cache_path() -> Path:
    """``$HYBRIDFD_TUNE_CACHE``, else ``~/.cache/hybridfd/tune.json``."""
    return Path(os.environ.get("HYBRIDFD_TUNE_CACHE") or cache_dir() / "tune.json")


def cache_key(decomposition: object, stencil: object, grids: int, threads: int, library: str | None = None) -> dict:
    domain = decomposition.domain
    return {
        "host": host_name(),
        "mpi_library": calibrate.mpi_library() if library is None else library,
        "ranks": decomposition.size,
        "threads": int(threads),
        "shape": list(domain.shape),
        "dtype": domain.dtype,
        "grids": int(grids),
        "radius": stencil.radius,
        "periodic": list(domain.periodic),
        "process_grid": list(decomposition.grid),
    }


def key_text(key: dict) -> str:
    return json.dumps(key, sort_keys=True, separators=(",", ":"))


def cache_lookup(path: Path, key: dict, registries: dict[str, Sequence[str]]) -> tuple[dict | None, str]:
    """(entry, status) for ``key``: status "hit", "miss", or "rebuilt: <why>" with entry None."""
    from hybridfd import __version__

    try:
        entry = read_entries(path, FORMAT).get(key_text(key))
        if entry is None:
            return None, "miss"
        check_entry(entry, ENTRY_SCHEMA, f"tuning cache entry in {path}")
        if entry["key"] != key:
            raise StoreProblem(f"foreign entry: filed under this problem but describes {key_text(entry['key'])}")
        if entry["hybridfd_version"] != __version__:
            raise StoreProblem(f"stale entry: written by hybridfd {entry['hybridfd_version']}, this is {__version__}")
        for name, known in registries.items():
            if entry["choice"][name] not in known:
                raise StoreProblem(f"stale entry: {name} {entry['choice'][name]!r} is not one of {list(known)}")
    except StoreProblem as problem:
        return None, f"rebuilt: {problem}"
    return entry, "hit"


def cache_store(path: Path, key: dict, decision: Decision) -> None:
    from hybridfd import __version__

    try:
        entries = read_entries(path, FORMAT)
    except StoreProblem:
        entries = {}  # a corrupt file is started afresh
    entries[key_text(key)] = {
        "key": key,
        "choice": decision.candidate.options(),
        "predicted": decision.predicted,
        "measured": decision.measured,
        "tuning_seconds": decision.tuning_seconds,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "hybridfd_version": __version__,
    }
    write_entries(path, FORMAT, entries)


# ---------------------------------------------------------------------------- tuning


def default_threads() -> int:
    """The threads a threaded model may use: ``OMP_NUM_THREADS`` if set, else 1."""
    text = os.environ.get("OMP_NUM_THREADS", "")
    try:
        return max(1, int(text.split(",")[0]))
    except ValueError:
        return 1


def tune(
    decomposition: object,
    stencil: object,
    grids: int,
    *,
    threads: int | None = None,
    cache: Path | None | bool = None,
    calibration: Path | None = None,
    trials: int = DEFAULT_TRIALS,
    budget: float | None = None,
    trial_grids: int | None = None,
    job_grids: int = JOB_GRIDS,
) -> Decision:
    """Collective: the best setting for applying ``stencil`` to ``grids`` grids of
    ``decomposition``, from the cache (``cache``: a path, None for the default, False for
    none) or tuned now on scratch arrays; identical on every rank.

    ``threads`` caps the thread count of threaded models (default :func:`default_threads`).
    Trial chunks hold min(grids, ``trial_grids``) grids (default :func:`trial_chunk`).
    ``budget`` bounds the overhead in seconds (default: 5 % of the model's time for a
    job of ``job_grids`` grids, see :class:`Tuning`), counted as if the scratch grids
    were the job's, so this tuning makes the choice ``Operator(approach="auto")`` would
    make on the job's own grids; the quick calibration, if no calibration file exists,
    comes on top (a few seconds). The time spent is ``tuning_seconds``; all of it is
    overhead here, as the scratch grids are thrown away.
    """
    tuning = Tuning(
        decomposition,
        stencil,
        grids,
        threads=threads,
        cache=cache,
        calibration=calibration,
        trials=trials,
        budget=budget,
        trial_grids=trial_grids,
        job_grids=job_grids,
    )
    if tuning.decision is None:
        rng = np.random.default_rng(decomposition.rank)
        a = decomposition.zeros(tuning.chunk)
        a.real = rng.standard_normal(a.shape)
        out = empty_aligned(a.shape, a.dtype)
        while tuning.decision is None:
            tuning.feed(a, out)
        # Scratch grids: none of the caller's, and all of the time is overhead.
        tuning.decision.grids_applied = 0
        tuning.decision.overhead_seconds = tuning.decision.tuning_seconds
    return tuning.decision


# ---------------------------------------------------------------------------- CLI


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hybridfd tune",
        description="Choose approach, model, schedule, transport, threads, batch and slope for one problem: "
        "the performance model ranks the candidates, short trial applies measure the best few, the "
        "winner is cached per machine and problem.",
    )
    parser.add_argument("--shape", type=positive_int, nargs=3, required=True, metavar=("NX", "NY", "NZ"))
    parser.add_argument("--grids", type=positive_int, required=True, help="G, grids per apply")
    parser.add_argument("--dtype", choices=("float64", "complex128"), default="float64")
    parser.add_argument("--radius", type=positive_int, default=2, help="stencil radius (Laplacian)")
    parser.add_argument("--non-periodic", action="store_true", help="zero boundaries instead of periodic")
    parser.add_argument("--threads", type=positive_int, default=None, help="most threads a threaded model may use")
    parser.add_argument("--trials", type=positive_int, default=DEFAULT_TRIALS, help="most candidates to measure")
    parser.add_argument(
        "--budget",
        type=positive_float,
        default=None,
        help="seconds of tuning overhead allowed (default: 5 %% of the model's time for --job-grids grids)",
    )
    parser.add_argument(
        "--job-grids", type=positive_int, default=JOB_GRIDS, help="grids the job applies in all (for the budget)"
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="cache file (default $HYBRIDFD_TUNE_CACHE or ~/.cache/hybridfd/tune.json)",
    )
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    parser.add_argument("--calibration", type=Path, default=None, help="calibration file to read")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from mpi4py import MPI
    from rich.console import Console
    from rich.table import Table

    from hybridfd.decomposition import Decomposition
    from hybridfd.domain import Domain
    from hybridfd.stencil import Stencil

    periodic = (not args.non_periodic,) * 3
    try:
        domain = Domain(shape=tuple(args.shape), periodic=periodic, dtype=args.dtype)
        dec = Decomposition(domain, MPI.COMM_WORLD)
        stencil = Stencil.laplace(args.radius, 0.2)
        decision = tune(
            dec,
            stencil,
            args.grids,
            threads=args.threads,
            cache=False if args.no_cache else args.cache,
            calibration=args.calibration,
            trials=args.trials,
            budget=args.budget,
            job_grids=args.job_grids,
        )
    except (ValueError, TypeError) as error:
        if MPI.COMM_WORLD.rank == 0:
            print(f"hybridfd tune: {error}", file=sys.stderr)
        return 2
    if MPI.COMM_WORLD.rank == 0:
        console = Console()
        if decision.trials:
            table = Table(title=f"trials (slowest rank, {decision.trial_grids} grids per chunk)")
            table.add_column("setting")
            table.add_column("predicted ms", justify="right")
            table.add_column("measured ms", justify="right")
            table.add_column("error", justify="right")
            table.add_column("samples")
            for trial in decision.trials:
                measured = "refused" if trial.measured is None else f"{trial.measured * 1e3:.3f}"
                error = "" if trial.measured is None else f"{(trial.predicted / trial.measured - 1) * 100:+.0f} %"
                table.add_row(trial.candidate.label(), f"{trial.predicted * 1e3:.3f}", measured, error, trial.note)
            console.print(table)
        console.print(f"chosen: {decision.candidate.label()} (from the {decision.source}; {decision.cache_status})")
        console.print(f"tuning time: {decision.tuning_seconds:.3f} s")
        if decision.budget_seconds is not None:
            console.print(f"overhead budget: {decision.budget_seconds * 1e3:.1f} ms")
        if decision.race:
            console.print(f"race: {decision.race}")
        if decision.parts:
            parts = ", ".join(f"{name} {seconds * 1e3:.1f}" for name, seconds in decision.parts.items())
            console.print(f"where it went (rank 0, ms): {parts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
