"""The settings the tuner chooses among, and the model's ranking of them.

A candidate is one concrete Operator setting (model, schedule, transport, batch, slope,
threads, labelled with the preset of its model and schedule); the pool is every one the
registries make for a problem's G; the model ranks the pool, and the shortlist is what
the races measure (:mod:`hybridfd.tune.races`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from hybridfd import _core, traits
from hybridfd.perfmodel.predict import Problem, Settings

BATCHES = (1, 2, 4, 8, 16, 32, 64)
MAX_SLOPE = 3
# Schedules whose batches overlap computation; a slope only helps those.
SLOPED_SCHEDULES = traits.sloped_schedules()
# The trial chunk (:func:`trial_chunk`): the apply's own G where a chunk of G grids is
# short (every batch up to G a candidate, each measured as the job runs it: as many
# batches, the same slope ramp, the same pipelining), fewer grids where it is long, as
# every losing entrant's chunk costs its loss on that many grids: the most grids, a power
# of two, that the model puts within TRIAL_SECONDS, but never fewer than MIN_TRIAL_GRIDS
# (nor more than G or MAX_TRIAL_GRIDS, two of the largest batch).
TRIAL_SECONDS = 0.01
MIN_TRIAL_GRIDS = 16
MAX_TRIAL_GRIDS = 2 * BATCHES[-1]


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


@functools.cache
def presets() -> dict[str, tuple[str, str]]:
    """approach name -> (model, schedule) of its preset, read from the core's preset table
    (local and cheap: nothing is built, so the tuner's fixed cost does not grow with the
    number of presets)."""
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
    (:class:`~hybridfd.perfmodel.predict.Settings`), so that :func:`hybridfd.tune.plan`
    predicts them all in one :func:`~hybridfd.perfmodel.predict.predict_all`; made once
    per problem in a process (:func:`candidate_pool`)."""

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
