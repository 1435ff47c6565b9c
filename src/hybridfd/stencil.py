"""Stencils: star stencils of radius 1..6 (GPAW journal, Sect. 2.1) and general ones.

A point's new value is ``centre*A[p]`` plus, for axis x, y, z and d = 1..r in that order
(the order of C1..C13 in the papers), the pair of terms at distance d: in general
``+ minus[axis][d-1]*A[p - d e_axis] + plus[axis][d-1]*A[p + d e_axis]``; for a symmetric
stencil (``minus`` and ``plus`` the same doubles bit for bit, e.g. every Laplacian)
``+ minus[axis][d-1]*(A[p - d e_axis] + A[p + d e_axis])``. Sums go left to right, each
multiply and add rounded on its own. The C++ kernel and :mod:`hybridfd.reference` both
sum in exactly this order.

A general stencil (:meth:`Stencil.from_offsets` with an offset that moves along two or
more axes, as GPAW's stencils for non-orthogonal cells do) is summed term by term from
the first term's value: the centre, then each offset grouped with its opposite, groups
keyed by the member ``m`` whose first non-zero component is negative and ordered by (that
component's axis, its magnitude, ``m``'s later components); a group whose two weights are
the same bits is one paired term ``w*(A[p+m] + A[p-m])``, otherwise ``m``'s term comes
first. :meth:`Stencil.terms` lists the sum in that order. Offsets along the axes only make
a star stencil (absent ones weigh 0.0), whose order above is the same.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hybridfd import _core

MAX_RADIUS = 6


class Stencil:
    """A stencil; build one with :meth:`laplace`, :meth:`from_coefficients`, :meth:`star` or :meth:`from_offsets`."""

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

    @classmethod
    def from_offsets(cls, offsets: Sequence[Sequence[int]], coefficients: Sequence[float]) -> Stencil:
        """Any stencil: ``coefficients[i]`` weighs the point at ``offsets[i]`` = (dx, dy, dz).

        Offsets are distinct integers with ``|d| <= 6`` per axis; the centre is (0, 0, 0)
        when present. The order of summation does not depend on the order given (see the
        module's documentation); offsets along the axes only make a star stencil.
        """
        offset_array = np.asarray(offsets)
        if offset_array.size and offset_array.dtype.kind not in "iu":
            if offset_array.dtype.kind != "f" or not np.array_equal(offset_array, np.round(offset_array)):
                raise TypeError(f"stencil offsets must be integers, got {offsets!r}")
        if offset_array.ndim != 2 or offset_array.shape[1] != 3:
            raise ValueError(f"stencil offsets must have shape (K, 3), got shape {offset_array.shape}")
        weights = _real(coefficients, "coefficients")
        if weights.ndim != 1:
            raise ValueError(f"coefficients must be a flat sequence, got shape {weights.shape}")
        rows = [tuple(int(d) for d in row) for row in offset_array.tolist()]
        return cls(_core.Stencil.from_offsets(rows, weights.tolist()))

    @property
    def radius(self) -> int:
        """The largest ``|d|`` of any offset along any axis."""
        return self._core.radius

    @property
    def is_star(self) -> bool:
        """Every offset moves along one axis at most: the star kernels apply it."""
        return self._core.star

    @property
    def widths(self) -> tuple[int, int, int]:
        """Ghost layers read per axis: ``r`` on every axis for a star stencil, the largest
        ``|d|`` along each axis for a general one."""
        return tuple(self._core.widths)

    @property
    def reads_edges(self) -> bool:
        """Some offset moves along two or more axes: the halo needs edges and corners."""
        return self._core.reads_edges

    def reads_direction(self, direction: Sequence[int]) -> bool:
        """Whether the stencil reads the halo's ghosts in ``direction`` (components -1, 0, 1)."""
        return self._core.reads_direction(tuple(int(d) for d in direction))

    @property
    def offsets(self) -> np.ndarray:
        """Shape (K, 3): every offset, in the order of the sum (both members of a paired term)."""
        return np.array([offset for offset, _ in self._core.offsets()], dtype=np.int64).reshape(-1, 3)

    @property
    def weights(self) -> np.ndarray:
        """Shape (K,): the weight of each of :attr:`offsets`."""
        return np.array([weight for _, weight in self._core.offsets()])

    def terms(self) -> list[tuple[tuple[int, int, int], float, bool]]:
        """A general stencil's sum, term by term: ``(m, w, paired)`` adds ``w*A[p+m]``, or
        ``w*(A[p+m] + A[p-m])`` when paired. Empty for a star stencil."""
        return [(tuple(offset), weight, paired) for offset, weight, paired in self._core.terms()]

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
        """``1 + 6r`` coefficients in the papers' order (see :meth:`from_coefficients`); a
        star stencil's only (a general one raises ValueError: see :attr:`offsets`)."""
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
        if self.is_star:
            return f"Stencil(radius={self.radius}, coefficients={self.coefficients.tolist()})"
        return f"Stencil.from_offsets({self.offsets.tolist()}, {self.weights.tolist()})"


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
