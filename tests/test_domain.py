"""Domain validation."""

import pytest

import hybridfd as hf


def test_normalises_periodic_and_dtype():
    dom = hf.Domain((4, 5, 6), periodic=False, dtype="complex")
    assert dom.periodic == (False, False, False)
    assert dom.dtype == "complex128"


@pytest.mark.parametrize("shape", [(4, 5), (4, 0, 6), (4, -1, 6), "abc", (4.5, 5, 6)])
def test_rejects_a_bad_shape(shape):
    with pytest.raises(ValueError, match="shape"):
        hf.Domain(shape)


@pytest.mark.parametrize("dtype", ["float32", "int64", "complex64"])
def test_rejects_an_unsupported_dtype(dtype):
    with pytest.raises(TypeError, match=dtype):
        hf.Domain((4, 4, 4), dtype=dtype)


def test_rejects_an_extent_beyond_64_bits():
    with pytest.raises(ValueError, match=r"domain shape \(9223372036854775808, 4, 4\) has an extent beyond 64 bits"):
        hf.Domain((2**63, 4, 4))
