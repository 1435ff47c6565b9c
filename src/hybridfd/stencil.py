"""Star stencils of radius 1..6 (GPAW journal, Sect. 2.1).

A point's new value is ``centre*A[p]`` plus, for axis x, y, z and d = 1..r in that order
(the order of C1..C13 in the papers), the pair of terms at distance d: in general
``+ minus[axis][d-1]*A[p - d e_axis] + plus[axis][d-1]*A[p + d e_axis]``; for a symmetric
stencil (``minus`` and ``plus`` the same doubles bit for bit, e.g. every Laplacian)
``+ minus[axis][d-1]*(A[p - d e_axis] + A[p + d e_axis])``. Sums go left to right, each
multiply and add rounded on its own. The C++ kernel and :mod:`hybridfd.reference` both
sum in exactly this order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hybridfd import _core

MAX_RADIUS = 6


class Stencil:
    """A star stencil; build one with :meth:`laplace`, :meth:`from_coefficients` or :meth:`star`."""

    def __init__(self, core: _core.Stencil) -> None:
        self._core = core

    @classmethod
    def laplace(cls, radius: int = 2, spacing: float | Sequence[float] = 1.0) -> Stencil:
        """Central-difference Laplacian of accuracy order ``2*radius`` (GPAW's ``Laplace`` with n=radius)."""
        if np.isscalar(spacing):
            spacing = (float(spacing),) * 3
        spacing = tuple(float(h) for h in spacing)
        if len(spacing) != 3:
            raise ValueError(f"spacing must be one number or 3 (hx, hy, hz), got {spacing!r}")
        return cls(_core.Stencil.laplace(_radius(radius), spacing))

    @classmethod
    def from_coefficients(cls, coefficients: Sequence[float]) -> Stencil:
        """The papers' form: ``[C1, ..., C13]`` = centre, x-1, x+1, x-2, x+2, y-1, ..., z+2.

        Any radius r works with ``1 + 6r`` coefficients in the same pattern.
        """
        values = _real(coefficients, "coefficients")
        if values.ndim != 1:
            raise ValueError(f"coefficients must be a flat sequence, got shape {values.shape}")
        return cls(_core.Stencil.from_coefficients(values.tolist()))

    @classmethod
    def star(cls, centre: float, minus: Sequence[Sequence[float]], plus: Sequence[Sequence[float]]) -> Stencil:
        """General star stencil: ``minus[axis][d-1]``/``plus[axis][d-1]`` weigh offsets ``-d``/``+d``."""
        minus_array = _real(minus, "minus")
        plus_array = _real(plus, "plus")
        if minus_array.ndim != 2 or minus_array.shape[0] != 3 or minus_array.shape != plus_array.shape:
            raise ValueError(
                f"minus and plus must both have shape (3, radius), got {minus_array.shape} and {plus_array.shape}"
            )
        _radius(minus_array.shape[1])
        coefficients = [float(centre)]
        for axis in range(3):
            for d in range(minus_array.shape[1]):
                coefficients += [minus_array[axis, d], plus_array[axis, d]]
        return cls.from_coefficients(coefficients)

    @property
    def radius(self) -> int:
        return self._core.radius

    @property
    def centre(self) -> float:
        return self._core.centre

    @property
    def symmetric(self) -> bool:
        """``minus`` and ``plus`` equal bit for bit for every axis and distance (so -0.0
        against +0.0 is not symmetric): summed in the paired form."""
        return self._core.symmetric

    @property
    def isotropic(self) -> bool:
        """Every axis's ``minus`` and ``plus`` equal axis x's bit for bit (a Laplacian on a
        cubic grid): the kernel keeps one copy of the coefficients for all three axes."""
        return self._core.isotropic

    @property
    def coefficients(self) -> np.ndarray:
        """``1 + 6r`` coefficients in the papers' order (see :meth:`from_coefficients`)."""
        return np.array(self._core.coefficients())

    @property
    def minus(self) -> np.ndarray:
        """Shape (3, r): the weight of offset ``-d`` along each axis."""
        return self.coefficients[1:].reshape(3, self.radius, 2)[:, :, 0]

    @property
    def plus(self) -> np.ndarray:
        """Shape (3, r): the weight of offset ``+d`` along each axis."""
        return self.coefficients[1:].reshape(3, self.radius, 2)[:, :, 1]

    def __repr__(self) -> str:
        return f"Stencil(radius={self.radius}, coefficients={self.coefficients.tolist()})"


def _real(values: object, name: str) -> np.ndarray:
    """``values`` as a float64 array, or a TypeError naming them (complex or text would
    be cast with a warning or a message that does not say which argument)."""
    array = np.asarray(values)
    if array.dtype.kind == "O":  # e.g. Fractions: fine if each converts to a float
        try:
            return array.astype(float)
        except (TypeError, ValueError):
            pass
    if array.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be real numbers, got dtype {array.dtype}: {values!r}")
    return array.astype(float)


def _radius(radius: object) -> int:
    if not isinstance(radius, (int, np.integer)) or isinstance(radius, bool) or not 1 <= radius <= MAX_RADIUS:
        raise ValueError(f"stencil radius {radius!r} is out of range; it must be an integer 1..{MAX_RADIUS}")
    return int(radius)
