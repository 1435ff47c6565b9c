"""Arrays placed for the kernel: each array, or each padded grid's interior, starts on a
64-byte cache line.

numpy starts a large array where malloc puts it, most often 16 bytes past a line. A
float64 grid whose rows are whole lines then has its rows 16 bytes past a 32-byte
boundary, and the kernel's 32-byte loads or streamed stores of them straddle lines; it
can step two lanes in to align one side, the input or the output, not both
(dev/placement.py times each placement). hybridfd makes its own arrays here
(``Decomposition.zeros`` and ``scatter``, an apply's ``out``); a caller's arrays are used
wherever they lie.
"""

from __future__ import annotations

import numpy as np

# Where hybridfd places the arrays it allocates: on a cache line, so that on a row whose
# bytes are a whole number of lines every vector load or store of it lies within one
# line. numpy's arrays start wherever malloc puts them, most often 16 bytes past one.
ALIGNMENT = 64


KERNEL_DTYPES = (np.dtype(np.float64), np.dtype(np.complex128))


def _check_dtype(dtype: object) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype not in KERNEL_DTYPES:
        raise TypeError(f"dtype must be float64 or complex128, got {dtype}")
    return dtype


def _check_shape(shape: object, lengths: tuple[int, ...] | None = None) -> tuple[int, ...]:
    """``shape`` as a tuple of ints (of one of ``lengths``, if given), or a ValueError
    naming it."""
    if (
        not isinstance(shape, (tuple, list))
        or (lengths is not None and len(shape) not in lengths)
        or not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 0 for n in shape)
    ):
        count = "" if lengths is None else " or ".join(map(str, lengths)) + " "
        raise ValueError(f"shape must be a tuple of {count}non-negative ints, got {shape!r}")
    return tuple(int(n) for n in shape)


def placed_flat(nbytes: int, dtype: object, first: int = 0, past: int = 0) -> np.ndarray:
    """``nbytes`` of a fresh buffer as a flat array of ``dtype``, whose byte ``first``
    lies ``past`` bytes past a 64-byte line (0: on it). The benchmarks place arrays
    where they please with it; hybridfd's own arrays are on a line."""
    buffer = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    start = (past - buffer.ctypes.data - first) % ALIGNMENT
    return buffer[start : start + nbytes].view(dtype)


def empty_aligned(shape: tuple[int, ...], dtype: object = np.float64) -> np.ndarray:
    """An uninitialised C-contiguous array like ``numpy.empty(shape, dtype)``, starting on
    a 64-byte cache line: a grid or an output for the kernel.

    Measured on a Zen 3 by dev/placement.py: an output 16 bytes past a line
    (numpy's usual place) ran a 192^3 float64 grid from memory at 0.86x, a 96^3
    complex128 one at 0.84x."""
    dtype = _check_dtype(dtype)
    shape = _check_shape(shape)
    return placed_flat(int(np.prod(shape)) * dtype.itemsize, dtype).reshape(shape)


def aligned_copy(array: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of ``array`` placed like :func:`empty_aligned`."""
    copy = empty_aligned(array.shape, array.dtype)
    copy[...] = array
    return copy


def empty_padded(shape: tuple[int, ...], radius: int, dtype: object = np.float64) -> np.ndarray:
    """An uninitialised padded grid for ``hybridfd.kernel.apply_padded``, its interior
    starting on a 64-byte cache line.

    ``shape`` is the interior, (nx, ny, nz), or (grids, nx, ny, nz) for a batch; the
    result has shape (..., nx + 2r, ny + 2r, nz + 2r), each grid C-contiguous, and the
    first interior point (r, r, r) of every grid starts a line (so does every interior
    row when a padded row, nz + 2r points, is a whole number of lines). Where a padded
    array starts decides where its interior rows do: numpy's usual start, 16 bytes past
    a line, happens to suit radius 2, but leaves radius 1 and 3 one or three float64
    points off a 32-byte boundary. Measured on a Zen 3 by dev/placement.py: an
    interior 8, 16 or 24 bytes past a line ran 24^3 and 48^3 grids in cache at
    0.83-0.90x, both dtypes, and a 96^3 float64 grid (in the L3) at 0.70-0.78x. Grids of
    a batch lie apart by their size rounded up to whole lines (a view of one buffer)."""
    dtype = _check_dtype(dtype)
    if isinstance(radius, bool) or not isinstance(radius, (int, np.integer)) or not 1 <= radius <= 6:
        raise ValueError(f"radius must be an int in 1..6, got {radius!r}")
    shape = _check_shape(shape, (3, 4))
    grids = shape[0] if len(shape) == 4 else 1
    padded = tuple(n + 2 * radius for n in shape[-3:])
    item = dtype.itemsize
    grid_stride = -(-int(np.prod(padded)) * item // ALIGNMENT) * ALIGNMENT
    interior = ((radius * padded[1] + radius) * padded[2] + radius) * item
    elements = placed_flat(grid_stride * grids, dtype, first=interior)
    strides = (grid_stride, padded[1] * padded[2] * item, padded[2] * item, item)
    batch = np.lib.stride_tricks.as_strided(elements, shape=(grids, *padded), strides=strides, writeable=True)
    return batch if len(shape) == 4 else batch[0]
