"""The traits the C++ registries declare for each schedule, model and transport (one
registry line per strategy: cpp/src/schedule.cpp, model.cpp, transport.cpp), read once
through the bindings, so that Python code that reasons about a strategy (the performance
model, the tuner, the simulation at scale) asks the registry instead of keeping a table
of its own."""

from __future__ import annotations

import functools
from typing import Any

from hybridfd import _core


@functools.cache
def schedule_traits() -> dict[str, dict[str, Any]]:
    """schedule -> {"exchanges_per_batch": int, "hides_exchange_behind": "nothing" |
    "previous-batch" | "interior" | "interior-rows", "takes_slope": bool}."""
    return dict(_core.schedule_traits())


@functools.cache
def model_traits() -> dict[str, dict[str, Any]]:
    """model -> {"thread_level": "MPI_THREAD_*" (with more than one thread),
    "grid_workers": "one" | "all" | "all-but-one", "at_scale": "rank-per-core" |
    "grid-groups" | "node-cores" | "none"}."""
    return dict(_core.model_traits())


@functools.cache
def transport_traits() -> dict[str, dict[str, Any]]:
    """transport -> {"mpi_version": int, "mpi_needs": str, "collective_setup": bool,
    "unavailable": why this MPI cannot run it ("" if it can), "schedules": [...],
    "models": [...]}."""
    return dict(_core.transport_traits())


def sloped_schedules() -> tuple[str, ...]:
    """The schedules a slope helps: those whose batches' exchanges hide behind compute."""
    return tuple(name for name, traits in schedule_traits().items() if traits["takes_slope"])


def exchanges_per_batch() -> dict[str, int]:
    """schedule -> the exchanges it runs one after another per batch."""
    return {name: traits["exchanges_per_batch"] for name, traits in schedule_traits().items()}
