"""Whether another hardware thread shared the core during a timing, from the issue-rate
probes taken around it (hybridfd._probes.measure_issue_rate: about half its best when the
core is shared, as dev/core_sharing.py shows). One rule for every benchmark that splits
its rounds by the core's state: kernel_throughput.py here, and dev/kernel_ab.py and
dev/core_sharing.py through dev/core_state.py, a link to this file."""

from __future__ import annotations

from collections.abc import Iterable

ALONE, SHARED = 0.85, 0.70  # a probe over the run's best probe: the core alone, shared


def core_state(probes: Iterable[float], best: float) -> str | None:
    """ "alone" when every probe reaches ALONE of ``best`` (the best probe of the run),
    "shared" when every probe stays at or below SHARED of it, else None: the state changed
    meanwhile, or lay between."""
    probes = list(probes)
    if min(probes) >= ALONE * best:
        return "alone"
    if max(probes) <= SHARED * best:
        return "shared"
    return None
