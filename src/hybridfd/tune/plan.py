"""Rank 0's plan of a tuning: the machine's costs from the calibration file, the trial
chunk, the candidates ranked by the model for it, the shortlist to race, and the
overhead budget."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from hybridfd.perfmodel import calibrate
from hybridfd.perfmodel.predict import Costs, Problem, predict, predict_all
from hybridfd.perfmodel.store import StoreProblem
from hybridfd.tune.budget import BUDGET_SHARE
from hybridfd.tune.candidates import Candidate, Pool, candidate_pool, distinct_schedules, ranked, shortlist, trial_chunk


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
# every Operator(approach="auto"), and parsing and checking it costs 0.2-0.6 ms, a third
# of the budget of a small job (the "calibration" part of a process's first tuning,
# which dev/tune_overhead.py reports apart). A file rewritten in any way
# (calibrate.save replaces it) has another identity and is read again.
_CALIBRATIONS: dict[tuple, Costs] = {}


def file_costs(path: Path | None, ranks: int, dtype: str, points: int) -> Costs | None:
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
