"""The tuner behind ``Operator(..., approach="auto")`` and ``hybridfd tune``.

1. The performance model (:mod:`hybridfd.perfmodel`, Fig. 5.2 plus compute, packing and
   synchronisation) ranks every candidate setting built from the registries: model and
   schedule (:func:`hybridfd.model_names`, :func:`hybridfd.schedule_names`), threads,
   batch and slope. Transports are invisible to the model, so they are tried on the
   winner only.
2. Short trial applies measure the best few; a rank's time is the median of a few
   applies, a candidate's time the slowest rank's. Rank 0 alone decides (stop when the
   time budget is spent, which candidate wins) and broadcasts each decision, so every
   rank takes the same path and the same winner even when their clocks disagree.
3. The winner is kept in a JSON cache keyed by host, MPI library, ranks, threads, grid
   shape, dtype, G (and the stencil radius, periodicity and process grid, which change
   the best setting too). A corrupt file, an entry that fails its schema (corrupt), was
   written by another hybridfd version or names settings the registries no longer have
   (stale), or whose own key differs from the one it is filed under (foreign) is
   reported and rebuilt, never used.

Run on the ranks to tune for::

    python -m hybridfd.launch -n 2 -- python -m hybridfd.tune --shape 48 48 48 --grids 64
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from hybridfd._collective import Problem as InputProblem
from hybridfd._collective import agree
from hybridfd._core import transport_support
from hybridfd.cli._common import positive_float, positive_int
from hybridfd.perfmodel import calibrate
from hybridfd.perfmodel.predict import Costs, Problem, predict, problem_of
from hybridfd.perfmodel.store import StoreProblem, cache_dir, check_entry, host_name, read_entries, write_entries

FORMAT = "hybridfd-tune/1"
BATCHES = (1, 2, 4, 8, 16, 32, 64)
MAX_SLOPE = 3
# Schedules whose batches overlap computation; a slope only helps those.
SLOPED_SCHEDULES = ("double-buffered", "overlap")
DEFAULT_TRIALS = 4
DEFAULT_BUDGET = 10.0
DEFAULT_TRIAL_GRIDS = 64
DEFAULT_REPEATS = 3


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
    source: str  # "tuner" or "cache"
    tuning_seconds: float
    trials: list[Trial] = field(default_factory=list)
    cache_status: str = ""

    def summary(self) -> dict:
        return {
            "source": self.source,
            "cache_status": self.cache_status,
            "tuning_seconds": self.tuning_seconds,
            "predicted_seconds": self.predicted,
            "measured_seconds": self.measured,
            "trials": [
                {"setting": t.candidate.label(), "predicted": t.predicted, "measured": t.measured, "note": t.note}
                for t in self.trials
            ],
        }


def presets() -> dict[str, tuple[str, str]]:
    """approach name -> (model, schedule) of its preset, read from the core itself."""
    from mpi4py import MPI

    from hybridfd import _core
    from hybridfd.decomposition import Decomposition
    from hybridfd.domain import Domain
    from hybridfd.operator import Operator
    from hybridfd.stencil import Stencil

    dec = Decomposition(Domain(shape=(2, 2, 2), periodic=(False, False, False)), MPI.COMM_SELF)
    stencil = Stencil.laplace(1, 1.0)
    result = {}
    for name in _core.approach_names():
        # threads=2 for the threaded presets so every one resolves (funneled-overlap
        # needs a second thread to compute); only the names are kept.
        threads = None if name.startswith("flat") else 2
        try:
            config = Operator(dec, stencil, name, threads=threads).config
        except ValueError:
            continue  # e.g. a model this MPI's thread level cannot run
        result[name] = (config["model"], config["schedule"])
    return result


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


def rank(candidates: Sequence[Candidate], cost: Callable[[Candidate], float]) -> list[tuple[Candidate, float]]:
    """Candidates with their predicted cost, cheapest first. Ties go to the larger batch
    (fewer messages: each costs CPU time to post that the model does not count), then
    to the smaller slope, then to the given order."""
    scored = [(c, float(cost(c))) for c in candidates]
    return sorted(scored, key=lambda pair: (pair[1], -pair[0].batch, pair[0].slope))


def shortlist(ranked: Sequence[tuple[Candidate, float]], trials: int) -> list[tuple[Candidate, float]]:
    """``ranked`` reordered for trials: first the best of each (model, schedule, threads)
    family, in ranked order, for half the trials (rounded up), so a model error that
    favours one family is caught by measuring others; then the rest in ranked order."""
    first: list[tuple[Candidate, float]] = []
    families = set()
    for pair in ranked:
        family = (pair[0].model, pair[0].schedule, pair[0].threads)
        if family not in families and len(first) < (trials + 1) // 2:
            families.add(family)
            first.append(pair)
    chosen = {id(pair) for pair in first}
    return first + [pair for pair in ranked if id(pair) not in chosen]


def choose(
    comm: object,
    ranked: Sequence[tuple[Candidate, float]],
    measure: Callable[[Candidate], float | None],
    *,
    trials: int = DEFAULT_TRIALS,
    budget: float = DEFAULT_BUDGET,
    transports: Sequence[str] = (),
) -> tuple[Candidate, float, float | None, list[Trial]]:
    """Collective: measure the best ``trials`` of ``ranked`` then the winner with each of
    ``transports``; return (winner, its predicted, its measured, every trial).

    ``measure(c)`` is called on every rank for the same candidates in the same order and
    returns this rank's seconds, or None on every rank if the candidate cannot run. Rank
    0 takes the slowest rank's time, decides and broadcasts: whether to go on (the
    ``budget`` in seconds, on rank 0's clock, is checked before each trial; the first
    trial always runs) and the winner.
    """
    from mpi4py import MPI

    if not ranked:
        raise ValueError("no candidate settings to choose from")
    root = comm.Get_rank() == 0
    start = time.perf_counter()
    done: list[Trial] = []

    def run(candidate: Candidate, predicted: float, limit: int | None = None) -> bool:
        # Rank 0 alone decides whether to go on; the others follow its broadcast, so
        # every rank runs the same trials even when their clocks or timings differ.
        go = None
        if root:
            measured = sum(t.measured is not None for t in done)
            go = (limit is None or measured < limit) and (not done or time.perf_counter() - start < budget)
        if not comm.bcast(go, root=0):
            return False
        mine = measure(candidate)
        worst = comm.reduce(math.inf if mine is None else mine, op=MPI.MAX, root=0)
        done.append(Trial(candidate, predicted, None if worst is None or math.isinf(worst) else worst))
        return True

    for candidate, predicted in ranked:
        if not run(candidate, predicted, trials):
            break
    best = comm.bcast(_best(done) if root else None, root=0)
    if best is not None:
        winner = done[best]
        for transport in transports:
            support = transport_support(transport)
            if transport == winner.candidate.transport or not (
                winner.candidate.model in support["models"] and winner.candidate.schedule in support["schedules"]
            ):
                continue
            variant = Candidate(**{**winner.candidate.options(), "transport": transport})
            if not run(variant, winner.predicted):
                break
        best = comm.bcast(_best(done) if root else None, root=0)
    # Only rank 0's measurements are complete (the reduce); it tells the others.
    done = comm.bcast(done if root else None, root=0)
    if best is None:
        refused = "; ".join(t.candidate.label() for t in done)
        raise ValueError(f"no candidate setting could run on these ranks (tried: {refused})")
    winner = done[best]
    return winner.candidate, winner.predicted, winner.measured, done


def _best(done: Sequence[Trial]) -> int | None:
    runnable = [i for i, t in enumerate(done) if t.measured is not None]
    return min(runnable, key=lambda i: done[i].measured) if runnable else None


# ---------------------------------------------------------------------------- cache

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
    from hybridfd import __version__

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
    from hybridfd import __version__

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


# ---------------------------------------------------------------------------- tuning


def default_threads() -> int:
    """The threads a threaded model may use: ``OMP_NUM_THREADS`` if set, else 1."""
    text = os.environ.get("OMP_NUM_THREADS", "")
    try:
        return max(1, int(text.split(",")[0]))
    except ValueError:
        return 1


def _costs(comm: object, dtype: str, problem: Problem, calibration_path: Path | None) -> tuple[Costs, str]:
    """Rank 0's calibration for this machine and rank count, or a quick one made now."""
    entry, note = None, ""
    if comm.Get_rank() == 0:
        try:
            entry = calibrate.load(calibration_path, ranks=comm.Get_size())
            note = "calibration file" if entry else "no calibration file: quick calibration"
        except StoreProblem as problem:
            note = f"calibration ignored ({problem}): quick calibration"
        if entry is not None and dtype not in entry["compute_per_point"]:
            entry, note = None, f"calibration has no {dtype}: quick calibration"
    entry, note = comm.bcast((entry, note), root=0)
    if entry is None:
        edge = max(4, round(problem.points ** (1 / 3)))
        entry = calibrate.calibrate(
            comm, sizes=calibrate.SIZES[::3], subgrids=(edge,), dtypes=(dtype,), repeats=DEFAULT_REPEATS
        )
    return calibrate.costs(entry, dtype, problem.points), note


def _slowest_problem(comm: object, problem: Problem) -> Problem:
    """The rank with the most points (then halo bytes) sets the pace of a collective apply."""
    problems = comm.allgather(problem)
    return max(problems, key=lambda p: (p.points, p.bytes_per_grid))


def trial_measure(
    decomposition: object,
    stencil: object,
    grids: int,
    repeats: int = DEFAULT_REPEATS,
    seconds_per_trial: float = math.inf,
) -> Callable[[Candidate], float | None]:
    """Collective measure for :func:`choose`: median seconds of up to ``repeats`` applies
    on ``grids`` grids of this rank's box, after one warm-up; None if the Operator
    refuses. Fewer repeats (at least 1) when the warm-up says they would not fit
    ``seconds_per_trial``; rank 0's warm-up decides and broadcasts the count, so every
    rank applies equally often."""
    from mpi4py import MPI

    from hybridfd.operator import Operator

    comm = decomposition.comm
    rng = np.random.default_rng(decomposition.rank)
    a = decomposition.zeros(grids)
    a.real = rng.standard_normal(a.shape)
    out = np.empty_like(a)

    def measure(candidate: Candidate) -> float | None:
        try:
            op = Operator(decomposition, stencil, **candidate.options())
        except ValueError:
            return None  # raised on every rank alike (the core agrees on problems)
        start = time.perf_counter()
        op.apply(a, out)
        warm_up = comm.reduce(time.perf_counter() - start, op=MPI.MAX, root=0)
        count = repeats
        if comm.Get_rank() == 0:
            count = max(1, min(repeats, int(seconds_per_trial / max(warm_up, 1e-9)) - 1))
        count = comm.bcast(count, root=0)
        times = []
        for _ in range(count):
            comm.Barrier()
            start = time.perf_counter()
            op.apply(a, out)
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    return measure


def tune(
    decomposition: object,
    stencil: object,
    grids: int,
    *,
    threads: int | None = None,
    cache: Path | None | bool = None,
    calibration: Path | None = None,
    trials: int = DEFAULT_TRIALS,
    budget: float = DEFAULT_BUDGET,
    trial_grids: int = DEFAULT_TRIAL_GRIDS,
    repeats: int = DEFAULT_REPEATS,
) -> Decision:
    """Collective: the best setting for applying ``stencil`` to ``grids`` grids of
    ``decomposition``, from the cache (``cache``: a path, None for the default, False for
    none) or tuned now; identical on every rank.

    ``threads`` caps the thread count of threaded models (default :func:`default_threads`).
    Trials apply min(grids, ``trial_grids``) grids; ``budget`` bounds, in seconds, the
    trials after the first (rank 0's clock); the quick calibration, if no calibration
    file exists, comes on top (a few seconds). The time spent is ``tuning_seconds``.
    """
    from hybridfd import _core

    comm = decomposition.comm
    start = time.perf_counter()
    problem_text = None
    if isinstance(grids, bool) or not isinstance(grids, (int, np.integer)) or grids < 1:
        problem_text = f"grids {grids!r} must be a positive int (the G to tune for)"
    threads = default_threads() if threads is None else threads
    if problem_text is None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        problem_text = f"threads {threads!r} must be a positive int"
    # Every rank must tune for the same G (the trials are collective applies); a bad or
    # differing value raises on every rank before any trial starts.
    bad = None if problem_text is None else InputProblem(problem_text)
    agree(comm, bad, 0 if bad else int(grids), "grids")
    grids = int(grids)
    registries = {
        "model": _core.model_names(),
        "schedule": _core.schedule_names(),
        "transport": _core.transport_names(),
        "approach": _core.approach_names(),
    }
    key = cache_key(decomposition, stencil, grids, threads)
    path = None if cache is False else (default_cache_path() if cache in (None, True) else Path(cache))
    entry, status = (None, "no cache") if path is None else (None, "")
    if path is not None and comm.Get_rank() == 0:
        entry, status = cache_lookup(path, key, registries)
    if path is not None:
        entry, status = comm.bcast((entry, status), root=0)
    if entry is not None:
        return Decision(
            Candidate(**entry["choice"]),
            entry["predicted"],
            entry["measured"],
            "cache",
            time.perf_counter() - start,
            cache_status=status,
        )

    # Trials run on fewer grids than the job when it is large; the model then ranks
    # for the trial's G so predicted and measured compare like with like.
    measured_grids = min(grids, trial_grids)
    problem = _slowest_problem(comm, problem_of(decomposition, stencil.radius, measured_grids))
    costs, note = _costs(comm, decomposition.domain.dtype, problem, calibration)
    approaches = presets()
    pool = candidates(
        measured_grids,
        threads,
        models=registries["model"],
        schedules=registries["schedule"],
        transport="p2p" if "p2p" in registries["transport"] else registries["transport"][0],
        approaches=approaches,
    )
    ranked = rank(
        pool,
        lambda c: predict(
            costs, problem, model=c.model, schedule=c.schedule, batch=c.batch, slope=c.slope, threads=c.threads
        ),
    )
    # The budget is shared by the trials: each gets its share for its repeats.
    share = budget / (trials + len(registries["transport"]) - 1)
    measure = trial_measure(decomposition, stencil, measured_grids, repeats, share)
    winner, predicted, measured, done = choose(
        comm, shortlist(ranked, trials), measure, trials=trials, budget=budget, transports=registries["transport"]
    )
    decision = Decision(
        winner,
        predicted,
        measured,
        "tuner",
        0.0,
        trials=done,
        cache_status=f"{status}; {note}".strip("; "),
    )
    # Rank 0's clock is the one reported (and stored), so every rank reports the same.
    decision.tuning_seconds = comm.bcast(time.perf_counter() - start, root=0)
    if path is not None and comm.Get_rank() == 0:
        cache_store(path, key, decision)
    return decision


# ---------------------------------------------------------------------------- CLI


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hybridfd tune",
        description="Choose approach, model, schedule, transport, threads, batch and slope for one problem: "
        "the performance model ranks the candidates, short trial applies measure the best few, the "
        "winner is cached per machine and problem.",
    )
    parser.add_argument("--shape", type=positive_int, nargs=3, required=True, metavar=("NX", "NY", "NZ"))
    parser.add_argument("--grids", type=positive_int, required=True, help="G, grids per apply")
    parser.add_argument("--dtype", choices=("float64", "complex128"), default="float64")
    parser.add_argument("--radius", type=positive_int, default=2, help="stencil radius (Laplacian)")
    parser.add_argument("--non-periodic", action="store_true", help="zero boundaries instead of periodic")
    parser.add_argument("--threads", type=positive_int, default=None, help="most threads a threaded model may use")
    parser.add_argument("--trials", type=positive_int, default=DEFAULT_TRIALS, help="candidates to measure")
    parser.add_argument("--budget", type=positive_float, default=DEFAULT_BUDGET, help="seconds for the trials")
    parser.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="cache file (default $HYBRIDFD_TUNE_CACHE or ~/.cache/hybridfd/tune.json)",
    )
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    parser.add_argument("--calibration", type=Path, default=None, help="calibration file to read")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from mpi4py import MPI
    from rich.console import Console
    from rich.table import Table

    from hybridfd.decomposition import Decomposition
    from hybridfd.domain import Domain
    from hybridfd.stencil import Stencil

    periodic = (not args.non_periodic,) * 3
    try:
        domain = Domain(shape=tuple(args.shape), periodic=periodic, dtype=args.dtype)
        dec = Decomposition(domain, MPI.COMM_WORLD)
        stencil = Stencil.laplace(args.radius, 0.2)
        decision = tune(
            dec,
            stencil,
            args.grids,
            threads=args.threads,
            cache=False if args.no_cache else args.cache,
            calibration=args.calibration,
            trials=args.trials,
            budget=args.budget,
        )
    except (ValueError, TypeError) as error:
        if MPI.COMM_WORLD.rank == 0:
            print(f"hybridfd tune: {error}", file=sys.stderr)
        return 2
    if MPI.COMM_WORLD.rank == 0:
        console = Console()
        if decision.trials:
            table = Table(title=f"trials (slowest rank, {min(args.grids, DEFAULT_TRIAL_GRIDS)} grids per apply)")
            table.add_column("setting")
            table.add_column("predicted ms", justify="right")
            table.add_column("measured ms", justify="right")
            table.add_column("error", justify="right")
            for trial in decision.trials:
                measured = "refused" if trial.measured is None else f"{trial.measured * 1e3:.3f}"
                error = "" if trial.measured is None else f"{(trial.predicted / trial.measured - 1) * 100:+.0f} %"
                table.add_row(trial.candidate.label(), f"{trial.predicted * 1e3:.3f}", measured, error)
            console.print(table)
        console.print(f"chosen: {decision.candidate.label()} (from the {decision.source}; {decision.cache_status})")
        console.print(f"tuning time: {decision.tuning_seconds:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
