"""Data cases shared by the MPI test modules that compare configurations with
flat-original and the numpy reference (test_schedules.py, test_models.py)."""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

import hybridfd as hf

# (dtype, periodic, radius, shape): a star stencil of that radius, or with radius
# ("general", r) a general stencil reaching r points (general_stencil).
Case = tuple[str, tuple[bool, bool, bool], int | tuple[str, int], tuple[int, int, int]]


def general_stencil(seed: int, reach: int) -> hf.Stencil:
    """The 27-point cube (so every one of the 26 halo blocks is read) and random offsets
    within ``reach`` on every axis, the full reach on each axis among them; half of the
    opposite pairs with equal weights (summed paired), the rest not."""
    rng = np.random.default_rng(seed)
    span = range(-reach, reach + 1)
    cube = [(x, y, z) for x in span for y in span for z in span]
    chosen = {(x, y, z) for x in (-1, 0, 1) for y in (-1, 0, 1) for z in (-1, 0, 1)}
    chosen |= {(reach, 0, 1), (0, -reach, 0), (-1, 1, reach)}
    chosen |= {cube[i] for i in rng.choice(len(cube), size=len(cube) // 8, replace=False)}
    weights: dict[tuple[int, int, int], float] = {}
    for offset in sorted(chosen):
        opposite = tuple(-d for d in offset)
        weights[offset] = weights[opposite] if opposite in weights and rng.random() < 0.5 else rng.uniform(-1, 1)
    return hf.Stencil.from_offsets(list(weights), list(weights.values()))


def stencil_of(seed: int, radius: int | tuple[str, int]) -> hf.Stencil:
    if isinstance(radius, tuple):
        return general_stencil(seed, radius[1])
    return hf.Stencil.from_coefficients(np.random.default_rng(seed).uniform(-1, 1, 1 + 6 * radius))


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
        stencil = stencil_of(seed, radius)
        dec = hf.Decomposition(hf.Domain(shape, periodic=periodic, dtype=dtype), comm)
        full = batch_of((grids, *shape), dtype, seed)
        local = dec.scatter(full if comm.rank == 0 else None)
        original = hf.Operator(dec, stencil, approach="flat-original").apply(local)
        reference = hf.reference.apply(stencil, full, periodic=periodic) if comm.rank == 0 else None
        result.append((dec, stencil, local, original, reference))
    return result
