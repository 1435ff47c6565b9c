"""The tuner's cache: the winner per machine and problem, in a JSON file keyed by host,
MPI library, ranks, threads, grid shape, dtype, G, and the stencil radius, periodicity
and process grid (which change the best setting too).

A corrupt file, an entry that fails its schema (corrupt), was written by another
hybridfd version or names settings the registries no longer have (stale), or whose own
key differs from the one it is filed under (foreign) is reported and rebuilt, never
used.
"""

from __future__ import annotations

import datetime
import json
import os
from collections.abc import Sequence
from pathlib import Path

from hybridfd._version import __version__
from hybridfd.perfmodel import calibrate
from hybridfd.perfmodel.store import StoreProblem, cache_dir, check_entry, host_name, read_entries, write_entries
from hybridfd.tune.decision import Decision

FORMAT = "hybridfd-tune/1"
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
