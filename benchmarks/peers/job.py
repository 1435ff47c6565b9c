"""The input of the side-by-side jobs and how their results are compared: a
deterministic function of the grid index and the global point, so every code (hybridfd,
GPAW, Devito, each in its own environment and process) fills its own part, and per-grid
checksums that the driver compares across codes. Only numpy here: it runs in every peer's
environment."""

from __future__ import annotations

from typing import Any

import numpy as np

#: The line a worker prints its result on (hybridfd.launch.RESULT_PREFIX: the peers'
#: environments have no hybridfd to import it from; tests/test_peer_job.py keeps them equal).
RESULT_PREFIX = "RESULT "


def field(g: np.ndarray, x: np.ndarray, y: np.ndarray, z: np.ndarray, n: int) -> np.ndarray:
    t = 2 * np.pi / n
    return np.sin(t * (x + g)) * np.cos(t * y) + 0.1 * np.sin(t * z + 0.3 * g)


def interior_checksums(
    a: np.ndarray, b: np.ndarray, begin: list[int], shape: tuple[int, ...], comm: Any, radius: int = 2
) -> list[list[float]]:
    """Per grid, sum(b * conj(a)) over the points at least ``radius`` away from the global
    boundary (where a non-periodic result does not depend on what lies beyond it), summed
    over ranks. ``a`` and ``b`` are this rank's (grids, x, y, z) parts starting at the
    global point ``begin``; ``comm`` is an mpi4py communicator."""
    window = tuple(
        slice(max(radius - o, 0), max(min(n - radius - o, e), 0))
        for o, e, n in zip(begin, a.shape[1:], shape, strict=True)
    )
    part = np.einsum("gxyz,gxyz->g", b[(slice(None), *window)], np.conj(a[(slice(None), *window)]))
    total = np.empty_like(part, dtype=complex)
    comm.Allreduce(np.ascontiguousarray(part, dtype=complex), total)
    return [[float(c.real), float(c.imag)] for c in total]


def checksum_difference(reference: list[list[float]], other: list[list[float]], scale: float | None = None) -> float:
    """Largest difference between two codes' per-grid checksums, divided by ``scale``
    (default: the largest reference checksum; a checksum near zero would make a per-grid
    ratio meaningless)."""
    if len(reference) != len(other):
        raise ValueError(f"checksums of {len(reference)} grids compared with {len(other)}")
    ref = np.array([complex(*c) for c in reference])
    oth = np.array([complex(*c) for c in other])
    return float(np.max(np.abs(ref - oth)) / (scale or np.max(np.abs(ref))))


def sample_difference(reference: np.ndarray, other: np.ndarray, radius: int = 2, scale: float | None = None) -> float:
    """Largest pointwise difference of two codes' outputs of one grid over its interior
    points, divided by ``scale`` (default: the largest reference value there)."""
    inner = tuple(slice(radius, n - radius) for n in reference.shape)
    ref, oth = reference[inner], other[inner]
    return float(np.max(np.abs(ref - oth)) / (scale or np.max(np.abs(ref))))


def gather_first_grid(b: np.ndarray, begin: list[int], shape: tuple[int, ...], comm: Any, path: str) -> None:
    """Write grid 0 of a distributed (grids, x, y, z) result, gathered on rank 0, to ``path``
    (.npy), for a pointwise comparison between codes."""
    parts = comm.gather((begin, np.array(b[0])), root=0)
    if comm.rank == 0:
        whole = np.empty(shape, dtype=b.dtype)
        for offset, part in parts:
            whole[tuple(slice(o, o + e) for o, e in zip(offset, part.shape, strict=True))] = part
        np.save(path, whole)
