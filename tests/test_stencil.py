"""Stencil construction: GPAW's Laplace table, the papers' coefficient order, bad input."""

from fractions import Fraction as F

import numpy as np
import pytest

import hybridfd as hf
import hybridfd.kernel

# GPAW's gpaw/fd_operators.py `laplace` table (Chelikowsky et al., PRB 50, 11355 (1994)).
GPAW_LAPLACE = {
    1: [F(-2), F(1)],
    2: [F(-5, 2), F(4, 3), F(-1, 12)],
    3: [F(-49, 18), F(3, 2), F(-3, 20), F(1, 90)],
    4: [F(-205, 72), F(8, 5), F(-1, 5), F(8, 315), F(-1, 560)],
    5: [F(-5269, 1800), F(5, 3), F(-5, 21), F(5, 126), F(-5, 1008), F(1, 3150)],
    6: [F(-5369, 1800), F(12, 7), F(-15, 56), F(10, 189), F(-1, 112), F(2, 1925), F(-1, 16632)],
}


@pytest.mark.parametrize("radius", range(1, 7))
def test_laplace_matches_gpaw_table_to_the_last_bit(radius):
    table = GPAW_LAPLACE[radius]
    stencil = hf.Stencil.laplace(radius, 1.0)
    assert stencil.radius == radius
    assert stencil.centre == float(table[0]) * 3.0  # GPAW: laplace[n][0] * sum over axes of 1/h^2
    for axis in range(3):
        for d in range(1, radius + 1):
            assert stencil.minus[axis, d - 1] == float(table[d])
            assert stencil.plus[axis, d - 1] == float(table[d])


def test_laplace_scales_by_spacing_per_axis():
    stencil = hf.Stencil.laplace(2, (0.5, 1.0, 2.0))
    np.testing.assert_allclose(stencil.plus[:, 0], np.array([4.0, 1.0, 0.25]) * 4 / 3, rtol=1e-15)
    np.testing.assert_allclose(stencil.centre, -2.5 * (4.0 + 1.0 + 0.25), rtol=1e-15)


def test_from_coefficients_keeps_the_papers_order():
    c = np.arange(1.0, 14.0)
    stencil = hf.Stencil.from_coefficients(c)
    assert stencil.radius == 2
    assert stencil.centre == 1.0
    np.testing.assert_array_equal(stencil.minus, [[2, 4], [6, 8], [10, 12]])
    np.testing.assert_array_equal(stencil.plus, [[3, 5], [7, 9], [11, 13]])
    np.testing.assert_array_equal(stencil.coefficients, c)


@pytest.mark.parametrize("radius", range(1, 7))
def test_star_round_trips_any_radius(radius):
    rng = np.random.default_rng(radius)
    minus, plus = rng.standard_normal((3, radius)), rng.standard_normal((3, radius))
    stencil = hf.Stencil.star(0.5, minus, plus)
    np.testing.assert_array_equal(stencil.minus, minus)
    np.testing.assert_array_equal(stencil.plus, plus)
    assert len(stencil.coefficients) == 1 + 6 * radius


def test_symmetric_means_minus_and_plus_equal_bit_for_bit():
    assert hf.Stencil.laplace(2, (0.2, 0.2, 0.2)).symmetric
    assert hf.Stencil.star(1.0, [[-0.0], [2.0], [3.0]], [[-0.0], [2.0], [3.0]]).symmetric
    # == takes -0.0 for +0.0; the paired form of such a pair could flip a zero's sign.
    assert not hf.Stencil.star(1.0, [[0.0], [2.0], [3.0]], [[-0.0], [2.0], [3.0]]).symmetric
    assert not hf.Stencil.star(1.0, [[1.0], [2.0], [3.0]], [[1.0], [2.0], [3.5]]).symmetric


def test_isotropic_means_every_axis_equals_x_bit_for_bit():
    assert hf.Stencil.laplace(3, 0.2).isotropic
    assert not hf.Stencil.laplace(2, (0.2, 0.2, 0.25)).isotropic
    assert hf.Stencil.star(1.0, [[2.0, -0.0]] * 3, [[3.0, 0.5]] * 3).isotropic  # not symmetric, still isotropic
    assert not hf.Stencil.star(1.0, [[2.0, -0.0]] * 3, [[2.0, -0.0], [2.0, 0.0], [2.0, -0.0]]).isotropic
    assert not hf.Stencil.star(1.0, [[0.0], [0.0], [-0.0]], [[0.0], [0.0], [-0.0]]).isotropic  # == would say yes


@pytest.mark.parametrize("radius", [0, 7, -1, 2.5])
def test_laplace_rejects_a_bad_radius(radius):
    with pytest.raises(ValueError, match=f"radius {radius!r}"):
        hf.Stencil.laplace(radius)


@pytest.mark.parametrize("count", [0, 1, 12, 14, 43])
def test_from_coefficients_rejects_a_wrong_count(count):
    with pytest.raises(ValueError, match=f"got {count} stencil coefficients"):
        hf.Stencil.from_coefficients(np.ones(count))


def test_laplace_rejects_a_bad_spacing():
    with pytest.raises(ValueError, match="spacing"):
        hf.Stencil.laplace(2, (1.0, 0.0, 1.0))


@pytest.mark.parametrize("spacing", [float("inf"), float("nan"), -1.0])
def test_laplace_rejects_a_spacing_that_is_not_positive_and_finite(spacing):
    with pytest.raises(ValueError, match=r"grid spacing \(1, .*\) must be positive and finite; it is not on axis 1"):
        hf.Stencil.laplace(1, (1.0, spacing, 1.0))


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_from_coefficients_rejects_a_coefficient_that_is_not_finite(value):
    coefficients = np.ones(13)
    coefficients[4] = value
    with pytest.raises(ValueError, match=f"stencil coefficient C5 is {value}; it must be finite"):
        hf.Stencil.from_coefficients(coefficients)


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (
            lambda: hf.Stencil.from_coefficients(np.ones(7) * 1j),
            "coefficients must be real numbers, got dtype complex128",
        ),
        (lambda: hf.Stencil.from_coefficients(list("abcdefg")), "coefficients must be real numbers, got dtype <U1"),
        (lambda: hf.Stencil.star(1.0, np.ones((3, 1)) * 1j, np.ones((3, 1))), "minus must be real numbers"),
    ],
)
def test_coefficients_that_are_not_real_numbers_are_refused(build, match):
    with pytest.raises(TypeError, match=match):
        build()


def test_coefficients_that_convert_to_floats_are_taken():
    from fractions import Fraction

    assert hf.Stencil.from_coefficients([Fraction(1, 2)] * 7).centre == 0.5


# General stencils (Stencil.from_offsets).


def brute_force(stencil: hf.Stencil, padded: np.ndarray) -> np.ndarray:
    """The documented order, one point at a time in plain Python."""
    w = stencil.widths
    n = tuple(p - 2 * wa for p, wa in zip(padded.shape, w, strict=True))
    out = np.empty(n, dtype=padded.dtype)
    for x, y, z in np.ndindex(n):
        total = None
        for (dx, dy, dz), weight, paired in stencil.terms():
            a = padded[x + w[0] + dx, y + w[1] + dy, z + w[2] + dz]
            term = weight * (a + padded[x + w[0] - dx, y + w[1] - dy, z + w[2] - dz]) if paired else weight * a
            total = term if total is None else total + term
        out[x, y, z] = total
    return out


def test_from_offsets_fixes_the_documented_order_whatever_the_order_given():
    offsets = [(1, 1, 0), (0, 0, 0), (-1, -1, 0), (0, 1, -1), (0, -1, 1), (-2, 0, 1), (1, 0, 0)]
    weights = [0.5, -3.0, 0.5, 0.25, 0.75, 2.0, 1.5]
    stencil = hf.Stencil.from_offsets(offsets, weights)
    assert not stencil.is_star and stencil.reads_edges
    # Centre; then groups by (first moving axis, its magnitude, later components) of the
    # member whose first non-zero component is negative: (-1,-1,0) paired before
    # (-1,0,0) [only +1 given], then (-2,0,1); then (0,-1,1) before (0,1,-1), unpaired.
    assert stencil.terms() == [
        ((0, 0, 0), -3.0, False),
        ((-1, -1, 0), 0.5, True),
        ((1, 0, 0), 1.5, False),
        ((-2, 0, 1), 2.0, False),
        ((0, -1, 1), 0.75, False),
        ((0, 1, -1), 0.25, False),
    ]
    shuffled = hf.Stencil.from_offsets(offsets[::-1], weights[::-1])
    assert shuffled.terms() == stencil.terms()
    assert stencil.widths == (2, 1, 1)


def test_offsets_along_the_axes_make_the_star_stencil():
    laplace = hf.Stencil.laplace(3, (0.2, 0.3, 0.25))
    again = hf.Stencil.from_offsets(laplace.offsets, laplace.weights)
    assert again.is_star and again.symmetric
    assert again.coefficients.tobytes() == laplace.coefficients.tobytes()
    # Absent offsets weigh 0.0, absent centre too.
    partial = hf.Stencil.from_offsets([(0, 2, 0), (-1, 0, 0)], [3.0, 4.0])
    assert partial.radius == 2 and partial.centre == 0.0
    assert partial.minus[0, 0] == 4.0 and partial.plus[1, 1] == 3.0 and partial.plus[0, 0] == 0.0


def test_directions_read_are_those_some_offset_points_to():
    stencil = hf.Stencil.from_offsets([(0, 0, 0), (1, 1, 0), (0, 0, -2)], [1.0, 2.0, 3.0])
    read = {d for d in np.ndindex(3, 3, 3) if d != (1, 1, 1) and stencil.reads_direction(np.array(d) - 1)}
    assert read == {(2, 1, 1), (1, 2, 1), (2, 2, 1), (1, 1, 0)}
    for d in np.ndindex(3, 3, 3):
        direction = np.array(d) - 1
        assert hf.Stencil.laplace(2).reads_direction(direction) == (np.abs(direction).sum() == 1)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("reach", [1, 2, 4, 6])
def test_reference_and_kernel_sum_general_stencils_in_the_documented_order(dtype, reach):
    rng = np.random.default_rng(reach)
    span = range(-reach, reach + 1)
    cube = [(x, y, z) for x in span for y in span for z in span]
    offsets = [cube[i] for i in rng.choice(len(cube), size=min(len(cube), 40), replace=False)] + [(1, -1, 1)]
    offsets = list(dict.fromkeys(offsets))
    weights = rng.uniform(-1, 1, len(offsets))
    weights[1::3] = -weights[1::3]  # some pairs unequal, some equal by construction below
    lookup = dict(zip(offsets, weights, strict=True))
    for i, offset in enumerate(offsets):
        opposite = tuple(-d for d in offset)
        if opposite in lookup and i % 2 == 0:
            weights[i] = lookup[opposite]
    stencil = hf.Stencil.from_offsets(offsets, weights)
    w = stencil.widths
    shape = tuple(2 * wa + n for wa, n in zip(w, (5, 4, 6), strict=True))
    padded = rng.standard_normal(shape)
    if dtype == np.complex128:
        padded = padded + 1j * rng.standard_normal(shape)
    expected = brute_force(stencil, padded)
    np.testing.assert_array_equal(hf.reference.apply_padded(stencil, padded), expected)
    np.testing.assert_array_equal(hf.kernel.apply_padded(stencil, padded), expected)


@pytest.mark.parametrize(
    ("offsets", "weights", "error", "match"),
    [
        ([(0, 0, 0)], [1.0], ValueError, "at least one offset other than the centre"),
        ([(7, 0, 0)], [1.0], ValueError, r"offset \(7, 0, 0\) reaches beyond 6"),
        ([(1, 1, 0), (1, 1, 0)], [1.0, 2.0], ValueError, r"\(1, 1, 0\) is given twice \(entries 0 and 1\)"),
        ([(1, 1, 0)], [np.inf], ValueError, r"weight of stencil offset \(1, 1, 0\) is inf"),
        ([(1, 1)], [1.0], ValueError, r"shape \(K, 3\), got shape \(1, 2\)"),
        ([(1, 1, 0)], [1.0, 2.0], ValueError, "1 offsets and 2 weights"),
        ([(0.5, 1, 0)], [1.0], TypeError, "offsets must be integers"),
        ([(1, 1, 0)], ["x"], TypeError, "coefficients must be real numbers"),
    ],
)
def test_from_offsets_names_bad_input(offsets, weights, error, match):
    with pytest.raises(error, match=match):
        hf.Stencil.from_offsets(offsets, weights)


def test_a_general_stencil_has_no_star_coefficients():
    stencil = hf.Stencil.from_offsets([(1, 1, 1), (0, 0, 0)], [1.0, 2.0])
    with pytest.raises(ValueError, match="has no star coefficients"):
        stencil.coefficients  # noqa: B018
    assert "Stencil.from_offsets" in repr(stencil)
