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

The package in the order of its concerns: :mod:`~hybridfd.tune.candidates` (the settings
space, its pool, the model's ranking, the shortlist), :mod:`~hybridfd.tune.plan` (rank 0's
plan: the calibrated costs, the trial chunk, the budget), :mod:`~hybridfd.tune.decision`
(what a tuning returns), :mod:`~hybridfd.tune.entrants` and :mod:`~hybridfd.tune.races`
(the races and their verdicts), :mod:`~hybridfd.tune.budget` (the overhead's account),
:mod:`~hybridfd.tune.cache`, :mod:`~hybridfd.tune.driver` (:class:`Tuning` and
:func:`tune`) and :mod:`~hybridfd.tune.command` (``python -m hybridfd.tune``). Their
public names are this package's.

Run on the ranks to tune for::

    python -m hybridfd.launch -n 2 -- python -m hybridfd.tune --shape 48 48 48 --grids 64
"""

from hybridfd.tune.budget import BUDGET_SHARE, JOB_GRIDS, UNLIMITED, Budget
from hybridfd.tune.cache import (
    CHOICE_SCHEMA,
    ENTRY_SCHEMA,
    FORMAT,
    cache_key,
    cache_lookup,
    cache_store,
    default_cache_path,
    key_text,
)
from hybridfd.tune.candidates import (
    BATCHES,
    MAX_SLOPE,
    MAX_TRIAL_GRIDS,
    MIN_TRIAL_GRIDS,
    SLOPED_SCHEDULES,
    TRIAL_SECONDS,
    Candidate,
    Pool,
    candidate_pool,
    candidates,
    distinct_schedules,
    presets,
    rank,
    ranked,
    shortlist,
    trial_chunk,
)
from hybridfd.tune.decision import Decision, Trial
from hybridfd.tune.driver import DEFAULT_REPEATS, DEFAULT_TRIALS, Tuning, default_threads, tune
from hybridfd.tune.entrants import (
    FIRST_MARGIN,
    MIN_MARGIN,
    MIN_SAMPLES,
    NOISE_FACTOR,
    Entrant,
    chunk_noise,
    race_margin,
)
from hybridfd.tune.plan import Plan, file_costs, plan, predicted, transport_share
from hybridfd.tune.races import Request, leader, race, tournament, verdict

__all__ = [
    "BATCHES",
    "BUDGET_SHARE",
    "Budget",
    "CHOICE_SCHEMA",
    "Candidate",
    "DEFAULT_REPEATS",
    "DEFAULT_TRIALS",
    "Decision",
    "ENTRY_SCHEMA",
    "Entrant",
    "FIRST_MARGIN",
    "FORMAT",
    "JOB_GRIDS",
    "MAX_SLOPE",
    "MAX_TRIAL_GRIDS",
    "MIN_MARGIN",
    "MIN_SAMPLES",
    "MIN_TRIAL_GRIDS",
    "NOISE_FACTOR",
    "Plan",
    "Pool",
    "Request",
    "SLOPED_SCHEDULES",
    "TRIAL_SECONDS",
    "Trial",
    "Tuning",
    "UNLIMITED",
    "cache_key",
    "cache_lookup",
    "cache_store",
    "candidate_pool",
    "candidates",
    "chunk_noise",
    "default_cache_path",
    "default_threads",
    "distinct_schedules",
    "file_costs",
    "key_text",
    "leader",
    "plan",
    "predicted",
    "presets",
    "race",
    "race_margin",
    "rank",
    "ranked",
    "shortlist",
    "tournament",
    "transport_share",
    "trial_chunk",
    "tune",
    "verdict",
]
