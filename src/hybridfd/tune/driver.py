"""The tuning driver: :class:`Tuning`, one collective tuning fed with chunks of work,
and :func:`tune`, which feeds it scratch arrays."""

from __future__ import annotations

import os
import time
import weakref
from collections.abc import Generator
from dataclasses import replace
from pathlib import Path

import numpy as np

from hybridfd import _core
from hybridfd._collective import Problem as InputProblem
from hybridfd.arrays import empty_aligned
from hybridfd.perfmodel import calibrate
from hybridfd.perfmodel.predict import slowest_problem
from hybridfd.perfmodel.store import StoreProblem
from hybridfd.tune.budget import JOB_GRIDS, Budget
from hybridfd.tune.cache import cache_key, cache_lookup, cache_store, default_cache_path
from hybridfd.tune.candidates import Candidate
from hybridfd.tune.decision import Decision
from hybridfd.tune.entrants import Entrant
from hybridfd.tune.plan import file_costs, plan, transport_share
from hybridfd.tune.races import Request, tournament

DEFAULT_TRIALS = 4
DEFAULT_REPEATS = 3


def default_threads() -> int:
    """The threads a threaded model may use: ``OMP_NUM_THREADS`` if set, else 1."""
    text = os.environ.get("OMP_NUM_THREADS", "")
    try:
        return max(1, int(text.split(",")[0]))
    except ValueError:
        return 1


def argument_problem(grids: object, counts: dict[str, object], budget: object) -> str | None:
    """What is wrong with a tuning's arguments (``counts``: name -> a value that must be
    a positive int), or None."""
    if isinstance(grids, bool) or not isinstance(grids, (int, np.integer)) or grids < 1:
        return f"grids {grids!r} must be a positive int (the G to tune for)"
    for name, value in counts.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            return f"{name} {value!r} must be a positive int"
    if not (budget is None or (isinstance(budget, (int, float)) and budget >= 0)):
        return f"budget {budget!r} must be a number of seconds >= 0"
    return None


class Tuning:
    """Collective: one tuning of (decomposition, stencil, G), fed with chunks of work.

    Rank 0 plans it (:func:`hybridfd.tune.plan`) and broadcasts the plan, or the cache's
    answer, in one message: the cache answers at once if it can (:attr:`decision` is
    then set). Otherwise the model ranks the candidates for a trial chunk of
    ``trial_grids`` grids (default :func:`hybridfd.tune.trial_chunk`: G where its apply
    is short; never more than G) and two races (:func:`hybridfd.tune.tournament`)
    measure them on chunks the caller feeds (:meth:`feed`): first the model's shortlist
    on the default transport, then, if the model says a transport can matter, the winner
    on the other transports that support its model and schedule. Every setting gives
    bit-identical results, so the chunks can be the job's own grids:
    ``Operator(approach="auto")`` feeds the grids of its first applies, and tuning costs
    only what the slower candidates lose against the winner on them, plus fixed costs
    (ADCL's run-time selection of a halo-exchange implementation within the
    application's first iterations, Gabriel et al., EuroPVM/MPI 2006). The offline
    :func:`tune` feeds scratch arrays instead. The entrants are the core's Operators of
    their settings (:func:`hybridfd.perfmodel.calibrate.core_operator`): the winner's
    becomes the auto Operator's core.

    That cost, the overhead, is bounded by a budget (:class:`hybridfd.tune.Budget`):
    ``budget`` seconds, by default BUDGET_SHARE (5 %) of the model's time for a job of
    ``job_grids`` grids (default JOB_GRIDS, 1,000) at its best setting. Before any
    chunk rank 0 asks whether what is left after the fixed costs pays for the cheapest
    race (:meth:`~hybridfd.tune.Budget.affords_race`, with the calibrated round and
    Operator); if not, the model's pick is the decision at once (``source`` "model", no
    chunk timed, no collective beyond the plan's broadcast). Otherwise entrants join a
    race only while the budget affords their Operator, collectives and expected loss.
    """

    def __init__(
        self,
        decomposition: object,
        stencil: object,
        grids: int,
        *,
        threads: int | None = None,
        cache: Path | None | bool = None,
        calibration: Path | None = None,
        trials: int = DEFAULT_TRIALS,
        budget: float | None = None,
        trial_grids: int | None = None,
        job_grids: int = JOB_GRIDS,
    ) -> None:
        self.decomposition, self.stencil = decomposition, stencil
        comm = self.comm = decomposition.comm
        self._began = time.perf_counter()
        threads = default_threads() if threads is None else threads
        counts = {"threads": threads, "trials": trials, "job_grids": job_grids}
        problem_text = argument_problem(
            grids, {**counts, "trial_grids": 1 if trial_grids is None else trial_grids}, budget
        )
        # Every rank must tune for the same G (the trials are collective applies); a bad or
        # differing value raises on every rank before any trial starts, naming the ranks of
        # the communicator given to the decomposition.
        bad = None if problem_text is None else InputProblem(problem_text)
        decomposition._agree(bad, 0 if bad else int(grids), "grids")
        self.decision: Decision | None = None
        self.winner_operator: object | None = None  # the winner's core Operator, once decided
        self.grids_applied = 0  # grids of the caller's arrays the trials computed
        self._registries = {
            "model": _core.model_names(),
            "schedule": _core.schedule_names(),
            "transport": _core.transport_names(),
            "approach": _core.approach_names(),
        }
        self._key = cache_key(decomposition, stencil, int(grids), threads)
        self._path = None if cache is False else (default_cache_path() if cache in (None, True) else Path(cache))
        self._options = {**counts, "trial_grids": trial_grids, "budget": budget}
        # Rank 0's seconds per part of the tuning (what tuning_seconds is made of): setup
        # (cache lookup included), calibration, ranking; then, while fed, operators
        # (building and freeing the candidates'), chunks (the trial chunks, timed), and
        # decisions (the races' reductions and broadcasts).
        self.parts: dict[str, float] = {}
        self._unbudgeted = 0.0  # a quick calibration's seconds: they come on top of the budget
        self._tuner_costs = (0.0, 0.0)  # rank 0: the calibrated Operator and round (Budget)
        self._whole = None  # rank 0: the slowest rank's problem
        self._since = self._began  # rank 0: when the part being timed began
        # Rank 0 alone looks up, calibrates and ranks, then sends the others one message:
        # the cache's answer, the plan, or (no usable calibration file) a call to a quick
        # calibration on every rank, after which the plan follows in a second one.
        message = comm.bcast(self._first_message(int(grids), calibration) if comm.Get_rank() == 0 else None, root=0)
        if message[0] == "cache":
            _, entry, status, seconds = message
            choice = Candidate(**entry["choice"])
            self.decision = Decision(
                choice, entry["predicted"], entry["measured"], "cache", seconds, cache_status=status
            )
            return
        if message[0] == "calibrate":
            message = self._calibrate_quickly(message)
        self._begin(message, int(grids))

    def _first_message(self, grids: int, calibration: Path | None) -> tuple:
        """Rank 0: the cache's answer, else the plan (:meth:`_planned`), else (no usable
        calibration file) the call to a quick calibration."""
        if self._path:
            entry, status = cache_lookup(self._path, self._key, self._registries)
        else:
            entry, status = None, "no cache"
        self._since = self._charge("setup", self._began)
        if entry is not None:
            return ("cache", entry, status, time.perf_counter() - self._began)
        # The rank with the most points (then halo bytes) sets the pace of a collective
        # apply; every rank's box is known here (no gather).
        self._whole = whole = slowest_problem(self.decomposition, self.stencil.radius, grids)
        self._since = self._charge("setup", self._since)
        try:
            costs = file_costs(calibration, self.comm.Get_size(), self.decomposition.domain.dtype, whole.points)
            note = "calibration file" if costs else "no calibration file: quick calibration"
        except StoreProblem as problem:
            costs, note = None, f"calibration ignored ({problem}): quick calibration"
        self._status = f"{status}; {note}".strip("; ")
        self._since = self._charge("calibration", self._since)
        if costs is None:
            return ("calibrate", max(4, round(whole.points ** (1 / 3))), self._status)
        return self._planned(costs)

    def _calibrate_quickly(self, message: tuple) -> tuple:
        """Collective: the quick calibration every rank makes where rank 0 found no usable
        calibration file (its seconds come on top of the budget); returns the plan's
        message, which follows it."""
        _, edge, self._status = message
        mark = time.perf_counter()
        dtype = self.decomposition.domain.dtype
        entry = calibrate.calibrate(
            self.comm, sizes=calibrate.SIZES[::3], subgrids=(edge,), dtypes=(dtype,), repeats=DEFAULT_REPEATS
        )
        root = self.comm.Get_rank() == 0
        costs = calibrate.costs(entry, dtype, self._whole.points) if root else None
        self._unbudgeted = -mark
        self._since = self._charge("calibration", mark)
        self._unbudgeted += self._since
        return self.comm.bcast(self._planned(costs) if root else None, root=0)

    def _planned(self, costs: object) -> tuple:
        """Rank 0: the plan's message (see :func:`hybridfd.tune.plan`): the plan, the status,
        why there is a race or none, and (none) rank 0's account of the tuning so far."""
        options = self._options
        the_plan = plan(
            costs,
            self._whole,
            options["threads"],
            self._registries,
            trials=options["trials"],
            trial_grids=options["trial_grids"],
            budget=options["budget"],
            job_grids=options["job_grids"],
        )
        problem = replace(self._whole, grids=the_plan.chunk)
        self._transport_share = lambda c: transport_share(costs, problem, c)
        # Before any chunk: can what is left after the fixed costs so far (the plan's
        # broadcast to come counted as a round) pay for the cheapest race?
        began = self._began
        spent = lambda: time.perf_counter() - began - self._unbudgeted  # noqa: E731
        ahead = Budget(the_plan.budget, spent, costs.tuner_operator, costs.tuner_round)
        self._tuner_costs = (costs.tuner_operator, costs.tuner_round)
        estimate = ahead.race_estimate([Entrant(c, p) for c, p in the_plan.shortlist]) + ahead.round
        left = ahead.left()
        racing = estimate <= left
        verb = "pays" if racing else "cannot pay"
        race = f"{left * 1e3:.3f} ms of the budget left {verb} for the cheapest race ({estimate * 1e3:.3f} ms)"
        if racing:
            return ("plan", the_plan, self._status, race, None)
        self._charge("ranking", self._since)
        account = (time.perf_counter() - began, dict(self.parts))
        return ("plan", the_plan, self._status, "none: " + race, account)

    def _begin(self, message: tuple, grids: int) -> None:
        """Collective: take the plan's message; the model's pick at once if the budget pays
        for no race, else the tournament ready for the first chunk."""
        _, the_plan, self._status, self._race, account = message
        root = self.comm.Get_rank() == 0
        if not root:
            self._transport_share = lambda c: 0.0  # only rank 0's is asked
        self.chunk = the_plan.chunk
        # A warm-up chunk for the shortlist only where chunks are shorter than the apply
        # (large grids): there it costs a fraction of an apply (+0.8 % of a 1,000-grid job
        # at 96^3), and dev/tune_ab.py tells jobs with and without it apart by no
        # more than two identical tuners differ, so it stays, out of caution. Where a
        # chunk is the whole apply (small grids) it would add an apply per entrant, a
        # quarter of a 1,000-grid job, and measures nothing there.
        warm_up = self.chunk < grids
        self._shortlist = [Entrant(c, p, warm_up=warm_up) for c, p in the_plan.shortlist]
        if account is not None:  # no race: the model's pick, rank 0's account of it
            seconds, parts = account
            (candidate, prediction), *_ = the_plan.shortlist
            self.decision = Decision(
                candidate,
                prediction,
                None,
                "model",
                seconds,
                cache_status=self._status,
                overhead_seconds=seconds,
                parts=parts,
                budget_seconds=the_plan.budget,
                race=self._race,
            )
            if self._path is not None and root:
                cache_store(self._path, self._key, self.decision)
            return
        self._fastest = the_plan.shortlist[0][1]  # seconds per chunk: the model's until measured
        # Through a weak reference: a bound method would make a cycle that keeps a
        # finished Tuning, and the winner's Operator it holds, alive until the garbage
        # collector runs, at a different moment on each rank, and freeing an Operator of
        # a one-sided transport frees its window, a collective (tests/mpi/test_tune.py
        # deadlocks on it otherwise).
        tuning = weakref.ref(self)
        self._budget = Budget(the_plan.budget, lambda: tuning()._overhead(), *self._tuner_costs)
        self._builds: dict[Candidate, float] = {}  # each Operator's build, then its free added
        self._operators: dict[Candidate, object | None] = {}
        self._refusal = ""  # why the first refused candidate was refused
        self._failure: ValueError | None = None
        self._retiring = 0.0  # seconds of the current decision spent freeing Operators
        self._mark = 0.0  # when the current decision began
        if root:
            self._charge("ranking", self._since)  # the plan's broadcast included
        self._seconds = time.perf_counter() - self._began  # rank 0's reading is the one reported
        self._feed_began = time.perf_counter()
        self._steps = self._run()
        self._request: Request | None = next(self._steps)

    def _charge(self, part: str, since: float) -> float:
        """Add the time since ``since`` to ``part``; return now."""
        now = time.perf_counter()
        self.parts[part] = self.parts.get(part, 0.0) + now - since
        return now

    def _overhead(self) -> float:
        """Rank 0's overhead so far (what :class:`~hybridfd.tune.Budget` spends): its time in
        the tuner (not the caller's between applies, nor a quick calibration) less the
        grids fed so far at the speed of the fastest chunk (the model's best before any
        was timed)."""
        elapsed = self._seconds + time.perf_counter() - self._feed_began - self._unbudgeted
        return elapsed - self.grids_applied * self._fastest / self.chunk

    def _account(self) -> tuple[float, dict[str, float]]:
        """Rank 0's tuning_seconds and parts as of now, the current decision included."""
        now = time.perf_counter()
        parts = dict(self.parts)
        parts["decisions"] = parts.get("decisions", 0.0) + now - (self._mark + self._retiring)
        return self._seconds + now - self._feed_began, parts

    def _retire(self, candidate: Candidate) -> None:
        mark = time.perf_counter()
        self._operators.pop(candidate, None)
        freed = self._charge("operators", mark) - mark
        self._retiring += freed
        built = self._builds.get(candidate, 0.0) + freed
        self._budget.build = max(self._budget.build, built)

    def _run(self) -> Generator[Request, float | None, None]:
        winner, entrants = yield from tournament(
            self.comm,
            self._shortlist,
            self._registries["transport"],
            self._budget,
            self._retire,
            self._transport_share,
        )
        # Rank 0's samples and time, in one broadcast: every rank reports the same trials
        # and time (the last collective of a tuning).
        mine = None
        if self.comm.Get_rank() == 0:
            mine = ([e.trial() for e in entrants], None if winner is None else winner.seconds(), *self._account())
        trials, measured, seconds, parts = self.comm.bcast(mine, root=0)
        if winner is None:
            tried = "; ".join(t.candidate.label() for t in trials)
            raise ValueError(f"no candidate setting could run on these ranks ({self._refusal}; tried: {tried})")
        self.winner_operator = self._operators.get(winner.candidate)
        self.decision = Decision(
            winner.candidate,
            winner.predicted,
            measured,
            "tuner",
            seconds,
            trials,
            self._status,
            parts=parts,
            budget_seconds=self._budget.seconds,
            race="raced: " + self._race,
        )

    def _operator(self, candidate: Candidate) -> object | None:
        """The candidate's core Operator, made at its first request; None if refused. The
        budget expects the next one to cost the dearest built (and freed) so far, or the
        calibrated one if that is dearer."""
        if candidate not in self._operators:
            began = time.perf_counter()
            try:
                self._operators[candidate] = calibrate.core_operator(
                    self.decomposition, self.stencil, **candidate.options()
                )
            except ValueError as refusal:
                self._operators[candidate] = None  # raised on every rank alike (the core agrees)
                self._refusal = self._refusal or f"{candidate.label()}: {refusal}"
            self._builds[candidate] = time.perf_counter() - began
            self._budget.build = max(self._budget.build, self._builds[candidate])
        return self._operators[candidate]

    def feed(self, a: np.ndarray, out: np.ndarray, phases: object = None) -> int:
        """Collective: apply trial chunks to the leading grids of ``a`` (G, nx, ny, nz)
        into ``out`` while the tuning lasts; return how many grids were applied. The same
        G on every rank. An apply shorter than a chunk (or its last part) is a chunk of
        its own, its time scaled to a whole chunk's, so every apply moves the tuning on;
        the rest of the arrays is the caller's once :attr:`decision` is set."""
        if self._failure is not None:
            raise self._failure
        self._feed_began = time.perf_counter()
        done, grids, finished = 0, a.shape[0], False
        try:
            while self.decision is None and done < grids:
                candidate, timed = self._request
                mark = time.perf_counter()
                op = self._operator(candidate)
                mark = self._charge("operators", mark)
                seconds, barrier = None, 0.0
                if op is not None:
                    count = min(self.chunk, grids - done)
                    part = slice(done, done + count)
                    if timed:
                        # Every rank starts the chunk together: its time is the apply's,
                        # not a rank's lateness from the previous decision. The barrier
                        # is a decision's collective (Budget.round).
                        self.comm.Barrier()
                        now = self._charge("decisions", mark)
                        barrier, mark = now - mark, now
                    start = time.perf_counter()
                    op.apply(a[part], out[part], out.flags.writeable, phases)
                    seconds = (time.perf_counter() - start) * self.chunk / count
                    self._fastest = min(self._fastest, seconds)
                    done += count
                    self.grids_applied += count
                    mark = self._charge("chunks" if timed else "warm-up chunks", mark)
                self._retiring = 0.0
                self._mark = mark
                try:
                    self._request = self._steps.send(seconds)
                except StopIteration:
                    finished = True
                    # Only the winner's Operator lives on (the others were retired as
                    # the races dropped them, in the same order on every rank).
                    self._operators.clear()
                except ValueError as failure:
                    self._failure = failure
                    raise
                finally:
                    # A round's collectives as measured (the reduction and broadcast, and
                    # this chunk's barrier): the budget expects the dearest so far.
                    spent = self._charge("decisions", mark + self._retiring) - mark - self._retiring
                    self._budget.round = max(self._budget.round, spent + barrier)
        finally:
            self._seconds += time.perf_counter() - self._feed_began
        if finished:
            self._finish()
        return done

    def _finish(self) -> None:
        """Complete the decision (its time came with the last broadcast) and cache it."""
        decision = self.decision
        decision.grids_applied = self.grids_applied
        decision.trial_grids = self.chunk
        if decision.measured is not None:
            decision.overhead_seconds = decision.tuning_seconds - self.grids_applied * decision.measured / self.chunk
        if self._path is not None and self.comm.Get_rank() == 0:
            cache_store(self._path, self._key, decision)


def tune(
    decomposition: object,
    stencil: object,
    grids: int,
    *,
    threads: int | None = None,
    cache: Path | None | bool = None,
    calibration: Path | None = None,
    trials: int = DEFAULT_TRIALS,
    budget: float | None = None,
    trial_grids: int | None = None,
    job_grids: int = JOB_GRIDS,
) -> Decision:
    """Collective: the best setting for applying ``stencil`` to ``grids`` grids of
    ``decomposition``, from the cache (``cache``: a path, None for the default, False for
    none) or tuned now on scratch arrays; identical on every rank.

    ``threads`` caps the thread count of threaded models (default :func:`default_threads`).
    Trial chunks hold min(grids, ``trial_grids``) grids (default :func:`trial_chunk`).
    ``budget`` bounds the overhead in seconds (default: 5 % of the model's time for a
    job of ``job_grids`` grids, see :class:`Tuning`), counted as if the scratch grids
    were the job's, so this tuning makes the choice ``Operator(approach="auto")`` would
    make on the job's own grids; the quick calibration, if no calibration file exists,
    comes on top (a few seconds). The time spent is ``tuning_seconds``; all of it is
    overhead here, as the scratch grids are thrown away.
    """
    tuning = Tuning(
        decomposition,
        stencil,
        grids,
        threads=threads,
        cache=cache,
        calibration=calibration,
        trials=trials,
        budget=budget,
        trial_grids=trial_grids,
        job_grids=job_grids,
    )
    if tuning.decision is None:
        rng = np.random.default_rng(decomposition.rank)
        a = decomposition.zeros(tuning.chunk)
        a.real = rng.standard_normal(a.shape)
        out = empty_aligned(a.shape, a.dtype)
        while tuning.decision is None:
            tuning.feed(a, out)
        # Scratch grids: none of the caller's, and all of the time is overhead.
        tuning.decision.grids_applied = 0
        tuning.decision.overhead_seconds = tuning.decision.tuning_seconds
    return tuning.decision
