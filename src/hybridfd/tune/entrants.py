"""A candidate in a race, and the rules that compare entrants: when one is clearly
beaten, given the noise measured between the chunks of the same setting."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from hybridfd.tune.candidates import Candidate
from hybridfd.tune.decision import Trial

# When a race drops an entrant: its median chunk time exceeds the leader's by more than
# the margin the noise between chunks allows. The noise is measured, not assumed, as soon
# as any setting has two timed chunks (:func:`chunk_noise`); before that, one sample each,
# only an entrant FIRST_MARGIN slower is dropped (the model's error on this machine plus
# a busy machine's chunk-to-chunk spread), so one noisy early chunk does not decide.
FIRST_MARGIN = 0.15
# Differences below MIN_MARGIN are not worth another chunk (the target is 5 %).
MIN_MARGIN = 0.02
# The margin in units of the noise: the medians of two chunks each differ by about the
# noise; three times that is a difference the noise rarely makes.
NOISE_FACTOR = 3.0
# Entrants left within the margin of the leader once each has MIN_SAMPLES timed chunks
# are tied: more chunks would spend time on a difference the noise hides.
MIN_SAMPLES = 2


@dataclass
class Entrant:
    """A candidate in a :func:`hybridfd.tune.race`: its prediction and, on rank 0, its
    measured samples (seconds per trial chunk, the slowest rank's)."""

    candidate: Candidate
    predicted: float
    samples: list[float] = field(default_factory=list)
    refused: bool = False
    # One untimed chunk before the first timed one: for a transport variant, whose
    # first apply sets up what its transport makes lazily (rma-fence's window pages are
    # first touched by the first puts; dev/tune_overhead.py prints each
    # transport's first and second 64-grid apply); for the shortlist only where chunks
    # are shorter than the apply (Tuning).
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
