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
    stream_output: bool | None = None,
) -> np.ndarray:
    """``padded`` is (nx+2r, ny+2r, nz+2r); returns ``out`` of shape (nx, ny, nz).

    ``region=((x0, y0, z0), (ex, ey, ez))`` computes only those points (box coordinates)
    and leaves the rest of ``out`` as it was; ``threads`` splits the region by x-slabs.
    ``stream_output`` writes ``out`` past the caches (non-temporal stores; None: when
    ``out`` alone outgrows the last-level cache, see output_outgrows_cache); a caller
    applying many grids in a row should decide by all of them. Each point's value
    depends on none of these.
    """
    if not isinstance(padded, np.ndarray):
        raise TypeError(f"padded must be a numpy.ndarray, got {type(padded).__name__}")
    if out is None:
        r = stencil.radius
        out = np.empty(tuple(max(n - 2 * r, 0) for n in padded.shape), dtype=padded.dtype)
    elif not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy.ndarray or None, got {type(out).__name__}")
    if stream_output is not None and not isinstance(stream_output, bool):
        raise TypeError(f"stream_output must be True, False or None, got {stream_output!r}")
    _core.apply_kernel(stencil._core, padded, out, out.flags.writeable, region, threads, stream_output)
    return out


def output_outgrows_cache(nbytes: int) -> bool:
    """Whether an apply writing ``nbytes`` of output writes them past the caches
    (streaming stores): when they outgrow the last-level cache, where they would not
    stay anyway. Operator applies decide by their whole output (all grids)."""
    return _core.output_outgrows_cache(nbytes)
