"""The job the tuner's benchmarks share (perfmodel_validation.py here, and dev/tune_ab.py
through its link to this file): per rank GRIDS grids of n^3, x cut into one box per rank,
13-point Laplacian, flat-original's result on them as the reference; the 1,000-grid job
that applies them GRIDS at a time; and a calibration file of its own for a tuner."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

GRIDS = 64
JOB_GRIDS = 1000


def job_case(comm: object, stencil: object, dtype: str, n: int) -> tuple[object, np.ndarray, np.ndarray, np.ndarray]:
    """(decomposition, input grids, output buffer, flat-original's result) of one case."""
    import hybridfd as hf

    dec = hf.Decomposition(hf.Domain((2 * n, n, n), dtype=dtype), comm, grid=(comm.size, 1, 1))
    a = np.random.default_rng(comm.rank).standard_normal(dec.local_shape(GRIDS)).astype(dtype)
    reference = hf.Operator(dec, stencil, approach="flat-original").apply(a)
    return dec, a, np.empty_like(a), reference


def run_job(comm: object, op: object, a: np.ndarray, out: np.ndarray) -> float:
    """A job of JOB_GRIDS grids applied GRIDS at a time (as a code loops over blocks of
    its grids, e.g. GPAW's bands): the slowest rank's seconds."""
    from mpi4py import MPI

    comm.Barrier()
    begin = time.perf_counter()
    for first in range(0, JOB_GRIDS, GRIDS):
        count = min(GRIDS, JOB_GRIDS - first)
        op.apply(a[:count], out=out[:count])
    return comm.allreduce(time.perf_counter() - begin, op=MPI.MAX)


def calibration_file(comm: object, edges: list[int], dtypes: list[str], prefix: str) -> Path:
    """Collective: calibrate this machine for these sub-grids and dtypes and save it to a
    file of its own (in a fresh temporary folder), which the tuner is then told to read."""
    from hybridfd.perfmodel import calibrate

    folder = Path(comm.bcast(tempfile.mkdtemp(prefix=prefix) if comm.rank == 0 else None))
    path = folder / "calibration.json"
    entry = calibrate.calibrate(comm, subgrids=tuple(edges), dtypes=tuple(dtypes), repeats=3)
    if comm.rank == 0:
        calibrate.save(entry, path)
    comm.Barrier()
    return path


def remove_calibration(comm: object, path: Path) -> None:
    """Collective: delete what :func:`calibration_file` made, once every rank is done."""
    comm.Barrier()
    if comm.rank == 0:
        path.unlink(missing_ok=True)
        path.parent.rmdir()
