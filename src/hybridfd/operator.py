"""Operator: applies a stencil to a batch of distributed grids with a chosen approach."""

from __future__ import annotations

import numpy as np

from hybridfd import _core
from hybridfd._collective import Problem, agree
from hybridfd.decomposition import Decomposition
from hybridfd.stencil import Stencil


class Operator:
    """``op.apply(a)`` applies ``stencil`` to this rank's part ``a`` of a batch of grids.

    Collective, like every apply. ``approach`` names a preset from the papers
    (:func:`hybridfd.approach_names`); ``model``, ``schedule``, ``transport``, ``batch``,
    ``slope``, ``slope_kind`` and ``progress`` override the preset's choice. ``threads``
    is the thread count of a threaded model (default: ``OMP_NUM_THREADS`` if set, else 1;
    placement follows ``OMP_PLACES`` and ``OMP_PROC_BIND``); ``master_share`` is thread
    0's share of the compute in the funneled-overlap model (default 0: it only
    communicates). The resolved configuration is :attr:`config`.
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
    ) -> None:
        if not isinstance(decomposition, Decomposition):
            raise TypeError(f"decomposition must be a hybridfd.Decomposition, got {type(decomposition).__name__}")
        if not isinstance(stencil, Stencil):
            raise TypeError(f"stencil must be a hybridfd.Stencil, got {type(stencil).__name__}")
        self.decomposition = decomposition
        self.stencil = stencil
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

    @property
    def config(self) -> dict:
        """The resolved configuration: approach, model, threads, master_share, thread_level
        (needed) and mpi_thread_level (provided), placement, schedule, transport, batch,
        slope, slope_kind, progress, and ``mapping`` (the decomposition's strategy,
        topology and metrics per grid for this stencil, or None)."""
        config = dict(self._core.config)
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
        return self._core.phase_times

    def reset_phase_times(self) -> None:
        self._core.reset_phase_times()

    def apply(self, a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Apply to ``a`` of shape (G, nx, ny, nz) or (nx, ny, nz); returns ``out``.

        ``a`` and ``out`` are separate C-contiguous arrays of the domain's dtype with this
        rank's box shape, and G is the same on every rank. Bad arrays raise on every rank.
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
        if problem is not None:
            agree(self.decomposition.comm, problem, 0, "number of grids G")
        if out is None:
            out = np.empty(a.shape, dtype=a.dtype)
        self._core.apply(a, out, out.flags.writeable)
        return out
