"""Data cases shared by the MPI test modules that compare configurations with
flat-original and the numpy reference (test_schedules.py, test_models.py)."""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

import hybridfd as hf

# (dtype, periodic, radius, shape)
Case = tuple[str, tuple[bool, bool, bool], int, tuple[int, int, int]]


def batch_of(shape: tuple[int, ...], dtype: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(shape)
    return values + 1j * rng.standard_normal(shape) if dtype == "complex128" else values


def prepared(cases: list[Case], grids: int) -> list[tuple]:
    """Per case: decomposition, stencil, scattered input, flat-original's output, and the
    reference on rank 0 (None elsewhere). Collective over MPI.COMM_WORLD."""
    comm = MPI.COMM_WORLD
    result = []
    for seed, (dtype, periodic, radius, shape) in enumerate(cases):
        stencil = hf.Stencil.from_coefficients(np.random.default_rng(seed).uniform(-1, 1, 1 + 6 * radius))
        dec = hf.Decomposition(hf.Domain(shape, periodic=periodic, dtype=dtype), comm)
        full = batch_of((grids, *shape), dtype, seed)
        local = dec.scatter(full if comm.rank == 0 else None)
        original = hf.Operator(dec, stencil, approach="flat-original").apply(local)
        reference = hf.reference.apply(stencil, full, periodic=periodic) if comm.rank == 0 else None
        result.append((dec, stencil, local, original, reference))
    return result
