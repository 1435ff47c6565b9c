"""Operator: applies a stencil to a batch of distributed grids with a chosen approach."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from hybridfd import _core
from hybridfd._collective import Problem
from hybridfd.arrays import empty_aligned
from hybridfd.decomposition import Decomposition
from hybridfd.stencil import Stencil

if TYPE_CHECKING:
    from hybridfd.trace import Trace


class Operator:
    """``op.apply(a)`` applies ``stencil`` to this rank's part ``a`` of a batch of grids.

    Collective, like every apply. ``approach`` names a preset from the papers
    (:func:`hybridfd.approach_names`); ``model``, ``schedule``, ``transport``, ``batch``,
    ``slope``, ``slope_kind`` and ``progress`` override the preset's choice. ``threads``
    is the thread count of a threaded model (default: ``OMP_NUM_THREADS`` if set, else 1;
    placement follows ``OMP_PLACES`` and ``OMP_PROC_BIND``); ``master_share`` is thread
    0's share of the compute in the funneled-overlap model (default 0: it only
    communicates). The resolved configuration is :attr:`config`.

    ``approach="auto"`` lets :mod:`hybridfd.tune` choose model, schedule, transport,
    threads (at most ``threads``), batch and slope for this problem: from its cache, or
    by the performance model and races of trial applies. With ``grids`` given it tunes
    now, on scratch arrays; otherwise for the G of the first apply, on the grids of the
    first applies themselves (every setting gives the same bits; see
    :class:`hybridfd.tune.Tuning`). A choice serves applies of that G or fewer; an apply
    of more grids tunes again for its G (from the cache if it holds that problem), with
    a new core, whose phase times and trace start afresh. :attr:`config` says whether the
    choice came from the tuner or the cache (``approach_source``, None while tuning), what
    tuning cost and for which G (``tuning``). ``tune_options`` passes keywords to
    :class:`hybridfd.tune.Tuning` (cache, calibration, trials, budget, trial_grids,
    job_grids).

    ``trace=True`` traces the applies from the start (as :meth:`start_trace` would): every
    thread's pack, post, wait, progress, unpack and compute events with their batch
    numbers, recorded by the core into buffers allocated here (:mod:`hybridfd.trace`).
    :meth:`trace` gathers them. Off by default, when a traced step costs one branch.
    """

    def __init__(
        self,
        decomposition: Decomposition,
        stencil: Stencil,
        approach: str = "flat-original",
        *,
        model: str | None = None,
        threads: int | None = None,
        master_share: float | None = None,
        schedule: str | None = None,
        transport: str | None = None,
        batch: int | None = None,
        slope: int | None = None,
        slope_kind: str | None = None,
        progress: int | None = None,
        grids: int | None = None,
        tune_options: dict | None = None,
        trace: bool = False,
    ) -> None:
        if not isinstance(decomposition, Decomposition):
            raise TypeError(f"decomposition must be a hybridfd.Decomposition, got {type(decomposition).__name__}")
        # Checked and agreed on every rank: the core's collective constructor cannot see a
        # value that does not convert, and a rank that raised alone would leave the
        # others waiting in it.
        problem = _option_problem(
            stencil,
            approach,
            {"model": model, "schedule": schedule, "transport": transport, "slope_kind": slope_kind},
            {"threads": threads, "batch": batch, "slope": slope, "progress": progress, "grids": grids},
            master_share,
        )
        if problem is not None:
            decomposition._agree(problem)
        self.decomposition = decomposition
        self.stencil = stencil
        self._tuning = None
        self._tuning_run = None  # the tuner while approach="auto" tunes on the first applies
        self._tuned_grids = 0  # approach="auto": the G its choice was made for (0: none yet)
        self._trace_events: int | None = None  # buffer size to trace with, once the core exists
        self._auto = approach == "auto"
        if self._auto:
            self._core = None
            given = {
                "model": model,
                "master_share": master_share,
                "schedule": schedule,
                "transport": transport,
                "batch": batch,
                "slope": slope,
                "slope_kind": slope_kind,
                "progress": progress,
            }
            self._start_auto(given, threads, grids, tune_options)
            if trace:
                self.start_trace()
            return
        if grids is not None or tune_options is not None:
            # Through agree, so a rank that alone passed them does not leave the others
            # waiting in the core's constructor.
            decomposition._agree(
                Problem(f"grids and tune_options apply to approach='auto' only, not to approach {approach!r}")
            )
        self._core = _core.Operator(
            decomposition._core,
            stencil._core,
            approach,
            model or "",
            threads,
            master_share,
            schedule or "",
            transport or "",
            batch,
            slope,
            slope_kind or "",
            progress,
        )
        if trace:
            self.start_trace()

    # approach="auto": a thin layer over the tuner; the core only ever sees a concrete
    # setting, so it never knows "auto".
    _TUNED = ("model", "master_share", "schedule", "transport", "batch", "slope", "slope_kind", "progress")

    def _start_auto(self, arguments: dict, threads: int | None, grids: int | None, tune_options: dict | None) -> None:
        given = [name for name in self._TUNED if arguments[name] is not None]
        problem = None
        if given:
            problem = Problem(
                f"approach='auto' chooses {', '.join(self._TUNED)} itself, but {', '.join(given)} "
                f"{'was' if len(given) == 1 else 'were'} given; name an approach to set them by hand"
            )
        elif grids is not None and (isinstance(grids, bool) or not isinstance(grids, int) or grids < 1):
            problem = Problem(f"grids {grids!r} must be a positive int (the number of grids G to tune for)")
        elif threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            problem = Problem(f"threads {threads!r} must be a positive int (the most threads the tuner may use)")
        elif tune_options is not None and not isinstance(tune_options, dict):
            problem = Problem(f"tune_options must be a dict, got {type(tune_options).__name__}", TypeError)
        elif unknown := sorted(set(tune_options or {}) - set(TUNE_OPTIONS), key=str):
            problem = Problem(
                f"unknown tune_options {', '.join(map(repr, unknown))}; known: {', '.join(TUNE_OPTIONS)}", TypeError
            )
        # The same collectives as the core constructor's agreement on the operator
        # setting: a rank that asked for "auto" while another named an approach meets it
        # there, and both raise.
        most = "the default" if threads is None else threads
        setting = f"approach auto (threads at most {most}), {self.stencil._core.description()}"
        self.decomposition._agree_on_setting(problem, setting, "operator setting")
        self._auto_threads = threads
        self._tune_options = dict(tune_options or {})
        if grids is not None:
            self._tune_for(grids)

    def _tune_for(self, grids: int) -> None:
        """Tune now, on scratch arrays (``Operator(..., grids=G)``)."""
        from hybridfd import tune

        self._tuned_grids = grids
        self._adopt(
            tune.tune(self.decomposition, self.stencil, grids, threads=self._auto_threads, **self._tune_options)
        )

    def _tune_on(self, a: np.ndarray, out: np.ndarray, phases: tuple | None) -> int:
        """Tune on the leading grids of this apply (collective); return how many of them
        the trials computed. Tuning may span several applies when G is small."""
        from hybridfd import tune

        grids = a.shape[0] if a.ndim == 4 else 1
        # The trials are collective: every rank's apply must hold the same G, at every
        # apply the tuning lasts (at the first, the Tuning agrees on its G itself).
        if self._tuning_run is not None:
            self.decomposition._agree(None, grids, "number of grids G")
        else:
            self._tuning_run = tune.Tuning(
                self.decomposition, self.stencil, grids, threads=self._auto_threads, **self._tune_options
            )
            self._tuned_grids = grids
        done = 0
        if self._tuning_run.decision is None:
            if a.ndim == 3:
                a, out = a[np.newaxis], out[np.newaxis]
            done = self._tuning_run.feed(a, out, phases)
        self._adopt(self._tuning_run.decision, self._tuning_run.winner_operator)
        return done

    def _adopt(self, decision: object, operator: _core.Operator | None = None) -> None:
        """Take the tuner's decision once made: the winner's core Operator of the trials if
        there is one, else a new core for its setting."""
        if decision is None:
            return
        if operator is not None:
            self._core = operator
        else:
            c = decision.candidate
            self._core = _core.Operator(
                self.decomposition._core,
                self.stencil._core,
                c.approach,
                c.model,
                c.threads,
                None,
                c.schedule,
                c.transport,
                c.batch,
                c.slope,
                "",
                None,
            )
        self._tuning = decision
        self._tuning_run = None
        if self._trace_events is not None:
            self._core.start_trace(self._trace_events)

    @property
    def config(self) -> dict:
        """The resolved configuration: approach, model, threads, master_share, thread_level
        (needed) and mpi_thread_level (provided), placement, schedule, transport, batch,
        slope, slope_kind, progress, and ``mapping`` (the decomposition's strategy,
        topology and metrics per grid for this stencil, or None). With ``approach="auto"``
        also ``approach_source`` ("tuner", "model" where the budget paid for no race, or
        "cache"; None before the first apply tuned)
        and ``tuning`` (cache status, tuning time, predicted and measured seconds of the
        trials)."""
        if self._core is None:
            tuning = f"under way, for G = {self._tuned_grids}" if self._tuned_grids else "at the first apply, for its G"
            return {"approach": "auto", "approach_source": None, "tuning": tuning}
        config = dict(self._core.config)
        if self._tuning is not None:
            config["approach_source"] = self._tuning.source
            config["tuning"] = {**self._tuning.summary(), "grids": self._tuned_grids}
        mapping = self.decomposition.mapping
        metrics = self.decomposition.mapping_metrics(self.stencil.radius)
        config["mapping"] = None if mapping is None else mapping.as_dict(metrics)
        return config

    @property
    def phase_times(self) -> dict:
        """Where this rank's applies since construction or :meth:`reset_phase_times` spent
        their time, in seconds: ``total``; ``compute_phases`` (the team computing) and
        ``communication_phases`` (the rest: packing and messages; in a master-only model
        the other threads idle meanwhile); ``thread_busy``, a thread's mean compute time
        within the compute phases, and ``idle_in_compute``, the rest of them (waiting for
        the slowest thread: imbalance, fork and join). Averaged over threads for the
        multiple model, whose threads run their own schedules."""
        if self._core is None:
            return dict.fromkeys(
                ("applies", "total", "compute_phases", "communication_phases", "thread_busy", "idle_in_compute"), 0
            )
        return self._core.phase_times

    def reset_phase_times(self) -> None:
        if self._core is not None:
            self._core.reset_phase_times()

    def start_trace(self, events_per_thread: int | None = None) -> None:
        """Collective, between applies: trace the applies from now on, forgetting earlier
        events, into buffers of ``events_per_thread`` events per thread (default
        :data:`hybridfd.trace.DEFAULT_EVENTS_PER_THREAD`); a full buffer counts what it
        drops. Measures each rank's clock offset to rank 0 (a few ping-pongs)."""
        from hybridfd.trace import DEFAULT_EVENTS_PER_THREAD

        events = DEFAULT_EVENTS_PER_THREAD if events_per_thread is None else events_per_thread
        if isinstance(events, bool) or not isinstance(events, int) or events < 1:
            self.decomposition._agree(Problem(f"events_per_thread {events!r} must be a positive int"))
        if self._core is not None:  # approach="auto" starts once tuning made the core
            self._core.start_trace(events)
        self._trace_events = events

    def stop_trace(self) -> None:
        """Stop tracing (local); the events stay until the next :meth:`start_trace`."""
        self._trace_events = None
        if self._core is not None:
            self._core.stop_trace()

    @property
    def tracing(self) -> bool:
        return self._trace_events is not None

    def trace(self, root: int = 0) -> Trace | None:
        """Collective: the events traced since :meth:`start_trace`, every rank's, as a
        :class:`hybridfd.trace.Trace` on rank ``root`` (None on the others)."""
        from hybridfd.trace import Trace

        return Trace.gather(self, root)

    def apply(self, a: np.ndarray, out: np.ndarray | None = None, phases: np.ndarray | None = None) -> np.ndarray:
        """Apply to ``a`` of shape (G, nx, ny, nz) or (nx, ny, nz); returns ``out``.

        ``a`` and ``out`` are separate C-contiguous arrays of the domain's dtype with this
        rank's box shape, and G is the same on every rank. Bad arrays raise on every rank.

        ``phases`` (complex128 domains only): Bloch-periodic boundaries, shape (3, 2). A
        rank uses only the entries of the domain faces its box lies on (others may be 1,
        as hybridfd.gpaw passes them), so the ranks at either end of an axis must pass the
        same k-point's factors. ``phases[axis][1]`` multiplies the ghost values that wrap from
        the domain's lower end to beyond its upper end along ``axis``, ``phases[axis][0]``
        those that wrap the other way (for k-point ``k_c`` in units of the reciprocal
        cell: ``exp(+2 pi i k_c)`` and ``exp(-2 pi i k_c)``). Entries of non-periodic axes
        must be 1.
        """
        # Only what the array conversion itself would refuse is checked here; the core
        # checks shape, contiguity and aliasing (for C++ callers too).
        dtype = self.decomposition.domain.dtype
        problem = None
        for name, array in (("input", a), ("out", out)):
            if array is None and name == "out":
                continue
            if not isinstance(array, np.ndarray):
                problem = Problem(f"{name} must be a numpy.ndarray, got {type(array).__name__}", TypeError)
            elif array.dtype != dtype:
                problem = Problem(f"{name} array has dtype {array.dtype}; the domain's dtype is {dtype}", TypeError)
        core_phases = None
        if phases is not None and problem is None:
            try:
                core_phases = _phase_pairs(phases)
            except Problem as found:
                problem = found
        if problem is not None:
            self.decomposition._agree(problem, 0, "number of grids G")
        if out is None:
            out = empty_aligned(a.shape, a.dtype)
        done = 0
        grids = a.shape[0] if a.ndim == 4 else 1
        if self._auto and self._core is not None and grids > self._tuned_grids:
            # A choice holds for the G it was made for and fewer (the same batches, cut
            # shorter); more grids than that were never among its candidates' batches
            # (tuned on one grid, every batch is one grid), so they are tuned for anew,
            # from the cache if it has them. The same agreement on G as the core's apply:
            # ranks that are not here meet this one there, and all raise.
            self.decomposition._agree(None, grids, "number of grids G")
            self._core = None
            self._tuning = None
        if self._core is None:
            done = self._tune_on(a, out, core_phases)
        if self._core is not None and done < grids:
            self._core.apply(a[done:] if done else a, out[done:] if done else out, out.flags.writeable, core_phases)
        return out


#: The keywords of tune_options (those of :class:`hybridfd.tune.Tuning` that Operator
#: does not take itself).
TUNE_OPTIONS = ("cache", "calibration", "trials", "budget", "trial_grids", "job_grids")
_C_INT = 2**31


def _option_problem(
    stencil: object, approach: object, names: dict, counts: dict, master_share: object
) -> Problem | None:
    """The first option the core could not even be given, as a Problem naming it."""
    if not isinstance(stencil, Stencil):
        return Problem(f"stencil must be a hybridfd.Stencil, got {type(stencil).__name__}", TypeError)
    for name, value in {"approach": approach, **names}.items():
        if value is not None and not isinstance(value, str):
            return Problem(f"{name} must be a str, got {value!r}", TypeError)
    for name, value in counts.items():
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            return Problem(f"{name} must be an int, got {value!r}", TypeError)
        if not -_C_INT <= value < _C_INT:
            return Problem(f"{name} {value} is beyond the largest supported value {_C_INT - 1}")
    if master_share is not None and (
        isinstance(master_share, bool) or not isinstance(master_share, (int, float, np.integer, np.floating))
    ):
        return Problem(f"master_share must be a number, got {master_share!r}", TypeError)
    return None


def _phase_pairs(phases: object) -> tuple:
    """Phases as three (lower, upper) pairs of Python complex for the core, or a Problem."""
    try:
        array = np.asarray(phases)
    except (TypeError, ValueError) as error:
        raise Problem(f"phases must be a (3, 2) array of complex numbers: {error}", TypeError) from None
    if array.shape != (3, 2):
        raise Problem(f"phases must have shape (3, 2) (axis, side), got shape {array.shape}")
    if array.dtype.kind not in "biufc":
        raise Problem(f"phases must be numbers, got dtype {array.dtype}", TypeError)
    return tuple((complex(lower), complex(upper)) for lower, upper in array.astype(complex))
