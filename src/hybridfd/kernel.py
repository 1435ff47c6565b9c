"""The C++ stencil kernel on one grid already padded with ghost layers (no MPI).

For benchmarks and for callers that fill ghost layers themselves.
"""

from __future__ import annotations

import numpy as np

from hybridfd import _core
from hybridfd.stencil import Stencil

Region = tuple[tuple[int, int, int], tuple[int, int, int]]


def apply_padded(
    stencil: Stencil,
    padded: np.ndarray,
    out: np.ndarray | None = None,
    *,
    region: Region | None = None,
    threads: int = 1,
) -> np.ndarray:
    """``padded`` is (nx+2r, ny+2r, nz+2r); returns ``out`` of shape (nx, ny, nz).

    ``region=((x0, y0, z0), (ex, ey, ez))`` computes only those points (box coordinates)
    and leaves the rest of ``out`` as it was; ``threads`` splits the region by x-slabs.
    Each point's value does not depend on either.
    """
    if not isinstance(padded, np.ndarray):
        raise TypeError(f"padded must be a numpy.ndarray, got {type(padded).__name__}")
    if out is None:
        r = stencil.radius
        out = np.empty(tuple(max(n - 2 * r, 0) for n in padded.shape), dtype=padded.dtype)
    elif not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy.ndarray or None, got {type(out).__name__}")
    _core.apply_kernel(stencil._core, padded, out, out.flags.writeable, region, threads)
    return out
