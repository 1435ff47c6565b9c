"""The reference: a plain numpy stencil on the whole, undecomposed grid.

Every approach is checked against this. It sums each point's terms in the documented
order (see :mod:`hybridfd.stencil`: for a star stencil the centre, then the pairs
x-1/x+1, x-2/x+2, ..., z-r/z+r, paired as ``c*(lower + upper)`` for a symmetric stencil;
for a general one its :meth:`~hybridfd.Stencil.terms`), with separate multiplies and
adds, so it agrees with the C++ kernels to the last bit.

Ghosts are padded axis by axis, x, then y, then z, each axis's padding covering the
ghosts the earlier axes added: a ghost that crosses several periodic boundaries (an edge
or corner) is multiplied by their Bloch phases one at a time in that order, as the core
multiplies them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hybridfd.stencil import Stencil


def apply(
    stencil: Stencil,
    grids: np.ndarray,
    periodic: bool | Sequence[bool] = True,
    phases: np.ndarray | None = None,
) -> np.ndarray:
    """Apply ``stencil`` to ``grids`` of shape (G, Nx, Ny, Nz) or (Nx, Ny, Nz).

    Periodic axes wrap; non-periodic axes see zeros beyond their ends. ``phases``, shape
    (3, 2), makes the periodic axes Bloch-periodic (complex grids): values wrapped to
    beyond the upper end of an axis are multiplied by ``phases[axis][1]``, those wrapped
    below its lower end by ``phases[axis][0]`` (see :meth:`hybridfd.Operator.apply`).
    """
    grids = np.asarray(grids)
    if grids.ndim not in (3, 4):
        raise ValueError(f"grids must have shape (G, Nx, Ny, Nz) or (Nx, Ny, Nz), got {grids.shape}")
    batch = grids if grids.ndim == 4 else grids[np.newaxis]
    if isinstance(periodic, (bool, np.bool_)):
        periodic = (bool(periodic),) * 3
    if phases is not None:
        phases = np.asarray(phases, dtype=complex)
        if phases.shape != (3, 2) or not np.iscomplexobj(batch):
            raise ValueError(f"phases must have shape (3, 2) and grids be complex, got {phases.shape}, {batch.dtype}")
    padded = pad(batch, stencil.widths, periodic, phases)
    out = apply_padded(stencil, padded)
    return out if grids.ndim == 4 else out[0]


def pad(
    batch: np.ndarray, widths: Sequence[int], periodic: Sequence[bool], phases: np.ndarray | None = None
) -> np.ndarray:
    """A batch (G, Nx, Ny, Nz) padded with ``widths[axis]`` ghost layers on both sides of
    each axis, axis by axis (x, then y, then z, each covering the ghosts the earlier axes
    added): wrapped, times ``phases[axis][side]`` if given, on a periodic axis; zeros on
    the others. What an exchange fills a padded grid with (:class:`hybridfd.Halo`)."""
    padded = batch
    for axis, (wrap, w) in enumerate(zip(periodic, widths, strict=True)):
        if w == 0:
            continue
        pad_widths = [(0, 0)] * 4
        pad_widths[axis + 1] = (w, w)
        padded = np.pad(padded, pad_widths, mode="wrap" if wrap else "constant")
        if wrap and phases is not None:
            for side, ghosts in ((0, slice(0, w)), (1, slice(-w, None))):
                index = [slice(None)] * 4
                index[axis + 1] = ghosts
                padded[tuple(index)] = _times(phases[axis, side], padded[tuple(index)])
    return padded


def _times(phase: complex, values: np.ndarray) -> np.ndarray:
    """``phase * values`` with each real product and sum rounded on its own, as the core
    does (numpy's complex multiply may fuse them); a phase of exactly 1 changes nothing."""
    if phase == 1:
        return values
    p_re, p_im = phase.real, phase.imag
    result = np.empty_like(values)
    result.real = p_re * values.real - p_im * values.imag
    result.imag = p_re * values.imag + p_im * values.real
    return result


def apply_padded(stencil: Stencil, padded: np.ndarray) -> np.ndarray:
    """The stencil on grids already padded with ``widths`` ghost layers per side.

    ``padded`` is (..., nx+2wx, ny+2wy, nz+2wz) (``r`` on every axis for a star stencil,
    see :attr:`~hybridfd.Stencil.widths`); returns (..., nx, ny, nz).
    """
    r = stencil.radius
    padded = np.asarray(padded)
    interior = tuple(slice(r, n - r) for n in padded.shape[-3:])

    def shifted(axis: int, offset: int) -> np.ndarray:
        index = list(interior)
        index[axis] = slice(r + offset, padded.shape[axis - 3] - r + offset)
        return padded[(..., *index)]

    if not stencil.is_star:
        return _general(stencil, padded)

    out = stencil.centre * shifted(0, 0)
    minus, plus = stencil.minus, stencil.plus
    for axis in range(3):
        for d in range(1, r + 1):
            if stencil.symmetric:
                out += minus[axis, d - 1] * (shifted(axis, -d) + shifted(axis, d))
            else:
                out += minus[axis, d - 1] * shifted(axis, -d)
                out += plus[axis, d - 1] * shifted(axis, d)
    return out


def _general(stencil: Stencil, padded: np.ndarray) -> np.ndarray:
    """A general stencil's terms, summed from the first term's value."""
    shape = padded.shape[-3:]

    def at(offset: tuple[int, int, int]) -> np.ndarray:
        index = tuple(slice(w + d, n - w + d) for w, d, n in zip(stencil.widths, offset, shape, strict=True))
        return padded[(..., *index)]

    values = (
        weight * (at(offset) + at(tuple(-d for d in offset))) if paired else weight * at(offset)
        for offset, weight, paired in stencil.terms()
    )
    out = next(values)
    for term in values:
        out = out + term
    return out
