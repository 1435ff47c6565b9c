"""The C++ stencil kernel on one grid already padded with ghost layers (no MPI).

For benchmarks and for callers that fill ghost layers themselves.
"""

from __future__ import annotations

import numpy as np

from hybridfd import _core
from hybridfd.arrays import KERNEL_DTYPES, empty_aligned
from hybridfd.stencil import Stencil

Region = tuple[tuple[int, int, int], tuple[int, int, int]]


def _region(region: object) -> Region:
    """``region`` as two triples of ints, or a TypeError naming it."""
    try:
        begin, extent = region
        corners = tuple(tuple(corner) for corner in (begin, extent))
    except (TypeError, ValueError):
        corners = ()
    if len(corners) != 2 or not all(
        len(corner) == 3
        and all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) and -(2**63) <= n < 2**63 for n in corner)
        for corner in corners
    ):
        raise TypeError(f"region must be ((x0, y0, z0), (ex, ey, ez)) of 64-bit ints, got {region!r}")
    return corners


def apply_padded(
    stencil: Stencil,
    padded: np.ndarray,
    out: np.ndarray | None = None,
    *,
    region: Region | None = None,
    threads: int = 1,
    from_memory: bool | None = None,
) -> np.ndarray:
    """``padded`` is (nx+2r, ny+2r, nz+2r); returns ``out`` of shape (nx, ny, nz), a new
    array on a cache line if not given (``hybridfd.empty_padded`` places ``padded``'s
    interior on one).

    ``region=((x0, y0, z0), (ex, ey, ez))`` computes only those points (box coordinates)
    and leaves the rest of ``out`` as it was; ``threads`` splits the region by x-slabs.
    ``from_memory`` says where the grid comes from: True for one of many grids applied in
    turn (the kernel prefetches), False for a grid applied again and again in cache (it
    does not); None (the default) counts a grid larger than the core's L2 as from memory.
    A grid larger than the L2 applied again and again stays in the L3 while it and its
    output fit one core's share of it (``hybridfd._core.cache_sizes()``): pass False.
    Each point's value depends on none of them.
    """
    # What the core could not even be given; it checks the values itself.
    if not isinstance(stencil, Stencil):
        raise TypeError(f"stencil must be a hybridfd.Stencil, got {type(stencil).__name__}")
    if not isinstance(padded, np.ndarray):
        raise TypeError(f"padded must be a numpy.ndarray, got {type(padded).__name__}")
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or not -(2**31) <= threads < 2**31:
        raise TypeError(f"threads must be an int (of C int range), got {threads!r}")
    if from_memory is not None and not isinstance(from_memory, bool):
        raise TypeError(f"from_memory must be a bool or None, got {from_memory!r}")
    if region is not None:
        region = _region(region)
    if out is None:
        widths = stencil.widths if padded.ndim == 3 else (stencil.radius,) * padded.ndim
        shape = tuple(max(n - 2 * w, 0) for n, w in zip(padded.shape, widths, strict=True))
        # A padded input of the wrong rank or dtype gets a stand-in: the core names it.
        fits = padded.ndim == 3 and padded.dtype in KERNEL_DTYPES
        out = empty_aligned(shape, padded.dtype) if fits else np.empty(shape, dtype=padded.dtype)
    elif not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy.ndarray or None, got {type(out).__name__}")
    _core.apply_kernel(stencil._core, padded, out, out.flags.writeable, region, threads, from_memory)
    return out
