"""Generalized Hilbert ("gilbert") curves through process grids of any size.

The CP2K mapping seed (Sect. 3.3, 4) orders processes along a Hilbert curve. The classic
curve, and the maintained ``hilbertcurve`` package on PyPI, cover only hypercubes whose
side is a power of two, while process grids are 8x8x4, 12x10, 6x5x4 and so on. This
module ports Jakub Červený's generalized Hilbert algorithm ("gilbert",
https://github.com/jakubcerveny/gilbert, gilbert2d.py and gilbert3d.py, BSD-2-Clause,
Copyright (c) 2018 Jakub Červený), which fills any rectangle or cuboid, recursively
splitting it into halves whose sides it keeps even where it can. Its properties (what
tests/test_mapping_gilbert.py checks):

- it visits every cell exactly once (a bijection between curve index and cell);
- on power-of-two sides it is a Hilbert curve: every aligned 2^k block is one run;
- in 2D every step is to a face neighbour unless the longer side is odd and the shorter
  even (then one diagonal step is unavoidable); in 3D every step is a unit step when all
  sides are even, and odd sides may add a few longer steps (the author advises even
  sizes in 3D).

Axes of extent 1 are dropped before the curve is drawn, so a 16x1x8 grid gets the 2D
curve and a 1x1x64 grid a straight line.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

# BSD-2-Clause notice of the ported algorithm (gilbert2d.py, gilbert3d.py):
#   Copyright (c) 2018, Jakub Červený. All rights reserved.
#   Redistribution and use in source and binary forms, with or without modification,
#   are permitted provided that the following conditions are met: 1. Redistributions of
#   source code must retain the above copyright notice, this list of conditions and the
#   following disclaimer. 2. Redistributions in binary form must reproduce the above
#   copyright notice, this list of conditions and the following disclaimer in the
#   documentation and/or other materials provided with the distribution.
#   THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS" AND ANY
#   EXPRESS OR IMPLIED WARRANTIES ... ARE DISCLAIMED.

Vector = tuple[int, ...]


def _sign(v: int) -> int:
    return (v > 0) - (v < 0)


def _unit(v: Vector) -> Vector:
    return tuple(_sign(c) for c in v)


def _add(*vectors: Vector) -> Vector:
    return tuple(sum(c) for c in zip(*vectors, strict=True))


def _neg(v: Vector) -> Vector:
    return tuple(-c for c in v)


def _half(v: Vector) -> Vector:
    # Floor division towards -inf, as in the reference (ax//2 for negative ax).
    return tuple(c // 2 for c in v)


def _length(v: Vector) -> int:
    return abs(sum(v))


def _fill(origin: Vector, step: Vector, count: int) -> Iterator[Vector]:
    for _ in range(count):
        yield origin
        origin = _add(origin, step)


def _generate2d(p: Vector, a: Vector, b: Vector) -> Iterator[Vector]:
    # p: start corner; a: major axis vector (its length is the width); b: orthogonal.
    w, h = _length(a), _length(b)
    da, db = _unit(a), _unit(b)
    if h == 1:
        yield from _fill(p, da, w)
        return
    if w == 1:
        yield from _fill(p, db, h)
        return
    a2, b2 = _half(a), _half(b)
    if 2 * w > 3 * h:
        # Long case: two halves along a; an odd half would force a diagonal step.
        if _length(a2) % 2 and w > 2:
            a2 = _add(a2, da)
        yield from _generate2d(p, a2, b)
        yield from _generate2d(_add(p, a2), _add(a, _neg(a2)), b)
        return
    if _length(b2) % 2 and h > 2:
        b2 = _add(b2, db)
    # Standard case: up the first half of b, along a, back down.
    yield from _generate2d(p, b2, a2)
    yield from _generate2d(_add(p, b2), a, _add(b, _neg(b2)))
    yield from _generate2d(_add(p, a, _neg(da), b2, _neg(db)), _neg(b2), _neg(_add(a, _neg(a2))))


def _generate3d(p: Vector, a: Vector, b: Vector, c: Vector) -> Iterator[Vector]:
    w, h, d = _length(a), _length(b), _length(c)
    da, db, dc = _unit(a), _unit(b), _unit(c)
    if h == 1 and d == 1:
        yield from _fill(p, da, w)
        return
    if w == 1 and d == 1:
        yield from _fill(p, db, h)
        return
    if w == 1 and h == 1:
        yield from _fill(p, dc, d)
        return
    a2, b2, c2 = _half(a), _half(b), _half(c)
    # Prefer even halves: an odd one cannot be entered and left at the right corners.
    if _length(a2) % 2 and w > 2:
        a2 = _add(a2, da)
    if _length(b2) % 2 and h > 2:
        b2 = _add(b2, db)
    if _length(c2) % 2 and d > 2:
        c2 = _add(c2, dc)
    a_rest, b_rest, c_rest = _add(a, _neg(a2)), _add(b, _neg(b2)), _add(c, _neg(c2))
    if 2 * w > 3 * h and 2 * w > 3 * d:
        # Wide case: split along a only.
        yield from _generate3d(p, a2, b, c)
        yield from _generate3d(_add(p, a2), a_rest, b, c)
    elif 3 * h > 4 * d:
        # Do not split along c.
        yield from _generate3d(p, b2, c, a2)
        yield from _generate3d(_add(p, b2), a, b_rest, c)
        yield from _generate3d(_add(p, a, _neg(da), b2, _neg(db)), _neg(b2), c, _neg(a_rest))
    elif 3 * d > 4 * h:
        # Do not split along b.
        yield from _generate3d(p, c2, a2, b)
        yield from _generate3d(_add(p, c2), a, b, c_rest)
        yield from _generate3d(_add(p, a, _neg(da), c2, _neg(dc)), _neg(c2), _neg(a_rest), b)
    else:
        # Regular case: split along all three.
        yield from _generate3d(p, b2, c2, a2)
        yield from _generate3d(_add(p, b2), c, a2, b_rest)
        yield from _generate3d(_add(p, b2, _neg(db), c, _neg(dc)), a, _neg(b2), _neg(c_rest))
        yield from _generate3d(_add(p, a, _neg(da), b2, c, _neg(dc)), _neg(c), _neg(a_rest), b_rest)
        yield from _generate3d(_add(p, a, _neg(da), b2, _neg(db)), _neg(b2), c2, _neg(a_rest))


def _axis_vector(ndim: int, axis: int, length: int) -> Vector:
    return tuple(length if i == axis else 0 for i in range(ndim))


def gilbert_curve(shape: Sequence[int]) -> np.ndarray:
    """Cells of a grid of ``shape`` (1 to 3 axes, any positive sizes) in curve order.

    Returns an int64 array of shape (prod(shape), len(shape)) of coordinates; row k is
    the k-th cell along the curve, which starts at the origin.
    """
    shape = tuple(int(n) for n in shape)
    if not 1 <= len(shape) <= 3 or any(n < 1 for n in shape):
        raise ValueError(f"a gilbert curve needs 1 to 3 positive sizes, got {shape!r}")
    live = [axis for axis, n in enumerate(shape) if n > 1]
    cells = np.zeros((int(np.prod(shape)), len(shape)), dtype=np.int64)
    if not live:
        return cells
    sizes = [shape[axis] for axis in live]
    ndim = len(live)
    # The reference starts along the longest axis (first of equals), as gilbert2d/3d do.
    major = max(range(ndim), key=lambda i: (sizes[i], -i))
    others = [i for i in range(ndim) if i != major]
    vectors = [_axis_vector(ndim, major, sizes[major])] + [_axis_vector(ndim, i, sizes[i]) for i in others]
    origin = (0,) * ndim
    if ndim == 1:
        points = _fill(origin, (1,), sizes[0])
    elif ndim == 2:
        points = _generate2d(origin, *vectors)
    else:
        points = _generate3d(origin, *vectors)
    cells[:, live] = np.fromiter((c for point in points for c in point), dtype=np.int64).reshape(-1, ndim)
    return cells


def gilbert_order(shape: Sequence[int]) -> np.ndarray:
    """Row-major (C order) indices of the cells of ``shape`` in curve order."""
    cells = gilbert_curve(shape)
    return np.ravel_multi_index(tuple(cells.T), tuple(int(n) for n in shape))
