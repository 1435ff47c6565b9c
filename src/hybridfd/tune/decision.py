"""What a tuning returns: the chosen setting, why, and what it cost."""

from __future__ import annotations

from dataclasses import dataclass, field

from hybridfd.tune.candidates import Candidate


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
