"""The numpy reference itself, checked against values computed by hand."""

import numpy as np
import pytest

import hybridfd as hf


def test_hand_computed_periodic_13_point():
    # 5^3 grid, one non-zero point; the 13-point stencil spreads it to the centre and to
    # the points at distance 1 and 2 along each axis with the mirrored coefficients.
    c = np.arange(1.0, 14.0)  # C1..C13 = 1..13
    stencil = hf.Stencil.from_coefficients(c)
    grid = np.zeros((5, 5, 5))
    grid[2, 2, 2] = 1.0
    out = hf.reference.apply(stencil, grid, periodic=True)
    expected = np.zeros((5, 5, 5))
    expected[2, 2, 2] = 1.0
    # out[p] = C2*A[p-1 x] + C3*A[p+1 x] + ...: the point at x=3 sees A[2] as its x-1 term.
    expected[3, 2, 2], expected[1, 2, 2] = 2.0, 3.0
    expected[4, 2, 2], expected[0, 2, 2] = 4.0, 5.0
    expected[2, 3, 2], expected[2, 1, 2] = 6.0, 7.0
    expected[2, 4, 2], expected[2, 0, 2] = 8.0, 9.0
    expected[2, 2, 3], expected[2, 2, 1] = 10.0, 11.0
    expected[2, 2, 4], expected[2, 2, 0] = 12.0, 13.0
    np.testing.assert_array_equal(out, expected)


def test_hand_computed_boundaries():
    # 1-D line along z of length 3 with the radius-1 Laplacian [1, -2, 1] (h = 1) on z only.
    stencil = hf.Stencil.star(-2.0, [[0.0], [0.0], [1.0]], [[0.0], [0.0], [1.0]])
    line = np.array([1.0, 2.0, 4.0]).reshape(1, 1, 3)
    periodic = hf.reference.apply(stencil, line, periodic=True)
    np.testing.assert_array_equal(periodic.ravel(), [4 - 2 + 2, 1 - 4 + 4, 2 - 8 + 1])
    zero = hf.reference.apply(stencil, line, periodic=False)
    np.testing.assert_array_equal(zero.ravel(), [0 - 2 + 2, 1 - 4 + 4, 2 - 8 + 0])


def test_laplacian_of_a_quadratic_is_exact():
    # Non-periodic grid, interior points: d2/dx2 + d2/dy2 + d2/dz2 of x^2 + 2y^2 + 3z^2 is 12.
    h = 0.5
    x, y, z = np.meshgrid(*(np.arange(9) * h,) * 3, indexing="ij")
    grid = x**2 + 2 * y**2 + 3 * z**2
    for radius in (1, 2, 3):
        out = hf.reference.apply(hf.Stencil.laplace(radius, h), grid, periodic=False)
        inner = out[radius:-radius, radius:-radius, radius:-radius]
        np.testing.assert_allclose(inner, 12.0, rtol=1e-12)


def test_batch_and_complex_match_per_grid_real_and_imaginary_parts():
    rng = np.random.default_rng(3)
    stencil = hf.Stencil.laplace(2, (0.3, 0.4, 0.5))
    batch = rng.standard_normal((3, 6, 7, 8)) + 1j * rng.standard_normal((3, 6, 7, 8))
    out = hf.reference.apply(stencil, batch, periodic=(True, False, True))
    for g in range(3):
        real = hf.reference.apply(stencil, batch[g].real, periodic=(True, False, True))
        imag = hf.reference.apply(stencil, batch[g].imag, periodic=(True, False, True))
        np.testing.assert_allclose(out[g], real + 1j * imag, rtol=1e-14, atol=1e-12)


def test_rejects_a_flat_array():
    with pytest.raises(ValueError, match=r"\(4, 4\)"):
        hf.reference.apply(hf.Stencil.laplace(1), np.zeros((4, 4)))
