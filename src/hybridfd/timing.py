"""Timing shared by the demo, the CLI's ``run`` and the experiments.

One rule everywhere: a sample is the slowest rank's time for one apply, started after a
barrier, and a reported time is the median of several samples (a shared machine is
noisy, and the median is robust to its outliers).
"""

from __future__ import annotations

import time

import numpy as np
from mpi4py import MPI

from hybridfd.operator import Operator


def apply_samples(op: Operator, a: np.ndarray, out: np.ndarray, repeats: int) -> list[float]:
    """``repeats`` samples of the slowest rank's time for one ``op.apply(a, out=out)``, in seconds."""
    comm = op.decomposition.comm
    samples = []
    for _ in range(repeats):
        comm.Barrier()
        start = time.perf_counter()
        op.apply(a, out=out)
        samples.append(comm.allreduce(time.perf_counter() - start, op=MPI.MAX))
    return samples


def time_apply(op: Operator, a: np.ndarray, out: np.ndarray, repeats: int) -> float:
    """Median over ``repeats`` of the slowest rank's time for one apply, in seconds."""
    return float(np.median(apply_samples(op, a, out, repeats)))
