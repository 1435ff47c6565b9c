"""Races of trial chunks: entrants measured round by round, each dropped once it is
clearly beaten (:func:`verdict`), while the budget pays for them; the tournament races
the model's shortlist, then its survivor on the other transports.

Every race is a coroutine its driver (:class:`hybridfd.tune.Tuning`) feeds: it asks for
one trial chunk at a time (a :data:`Request`) and is sent back this rank's seconds.
Rank 0 alone decides, from the slowest rank's times, and broadcasts each decision, so
every rank runs the same chunks and ends with the same winner whatever its own clock
said.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence

import numpy as np

from hybridfd import _core
from hybridfd.tune.budget import Budget
from hybridfd.tune.candidates import Candidate
from hybridfd.tune.entrants import MIN_MARGIN, MIN_SAMPLES, Entrant, chunk_noise, race_margin

# What a race asks its driver for: apply one trial chunk with this candidate, timed or
# not. Only an entrant with warm_up gets an untimed chunk: an Operator's constructor
# touches its message buffers, and the kernel reads the grids in place, so on the default
# transport its first apply is as fast as its second (dev/tune_overhead.py prints
# both per transport).
Request = tuple[Candidate, bool]


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


def _round(alive: Sequence[Entrant], admitting: bool) -> Generator[Request, float | None, list[tuple[Entrant, float]]]:
    """One round's chunks (a coroutine, like :func:`race`): the entrants with the fewest
    rounds, the first alone, then those it admitted, then every one still in; returns
    each timed entrant with this rank's seconds. An entrant refused on its chunk is
    marked so."""
    timed = []
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
            timed.append((entrant, answer))
    return timed


def _record(comm: object, timed: Sequence[tuple[Entrant, float]]) -> None:
    """Collective: rank 0's entrants get the slowest rank's seconds of this round's chunks
    (one reduction)."""
    from mpi4py import MPI

    if not timed:
        return
    root = comm.Get_rank() == 0
    mine = np.array([seconds for _, seconds in timed], dtype=float)
    worst = np.empty_like(mine) if root else None
    comm.Reduce(mine, worst, op=MPI.MAX, root=0)
    if root:
        for (entrant, _), value in zip(timed, worst.tolist(), strict=True):
            entrant.samples.append(value)


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
    holds no race at all where the budget cannot pay for one). The next round times
    the admitted entrants, the rounds after it every entrant still in, one chunk each
    (after one untimed chunk the first time, for an entrant with ``warm_up``); after
    each round rank 0, given the slowest rank's time of each (one reduction per round),
    decides who goes on (:func:`verdict`: those not clearly beaten by the leader, given
    the noise measured between chunks, here and on the earlier entrants ``history``,
    while the budget affords another round) and broadcasts it. At most MIN_SAMPLES
    timed rounds follow the admission. ``retire(candidate)`` is called for each entrant
    dropped, in entrant order on every rank (the driver frees its Operator: a one-sided
    transport frees its window collectively).

    The driver sends back this rank's seconds for each request, or None if the
    Operator refused the candidate (which happens on every rank alike, so every rank
    reduces as many times). Samples end up on rank 0's entrants only.
    """
    waiting = [e for e in entrants if not e.refused]
    alive, waiting = waiting[:1], waiting[1:]
    admitting = True  # until an entrant has run: then rank 0 admits the others
    while alive:
        _record(comm, (yield from _round(alive, admitting)))
        decision = None
        if comm.Get_rank() == 0:
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
        support = _core.transport_support(transport)
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
