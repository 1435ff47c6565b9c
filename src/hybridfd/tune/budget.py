"""The tuner's overhead budget and its account: what tuning may cost beyond computing
its trial grids at the winner's speed, and what each step that spends some is expected
to cost before it is taken."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hybridfd.tune.entrants import FIRST_MARGIN, MIN_SAMPLES, Entrant


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
    the last one and the round's collectives do (:func:`hybridfd.tune.races.verdict`). So the overhead stays
    within ``seconds`` give or take the error of one such estimate. ``spent()`` is the
    overhead so far; ``build`` one entrant's Operator built and freed, and ``round`` one
    race round's collectives on rank 0 (a timed chunk's barrier, the reduction, the
    broadcast): the calibrated costs (:func:`hybridfd.perfmodel.calibrate.tuner_costs`),
    each raised to the dearest this tuning measures (:class:`hybridfd.tune.Tuning`).
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


# The budget by default (tuning under 5 % of a 1,000-grid job): BUDGET_SHARE of the
# model's time for a job of JOB_GRIDS grids at its best setting.
BUDGET_SHARE = 0.05
JOB_GRIDS = 1000
UNLIMITED = Budget(math.inf)
