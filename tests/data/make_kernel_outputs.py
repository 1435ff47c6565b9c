"""Writes tests/data/kernel_outputs.npz: the kernel's outputs for fixed inputs, stored so
that every change to the kernel is checked to reproduce them bit for bit
(tests/test_kernel.py). Rerun only to add cases.

    .venv/bin/python tests/data/make_kernel_outputs.py
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

import hybridfd as hf
from hybridfd.kernel import apply_padded

SHAPES = [(7, 9, 13), (3, 5, 33)]


def cases() -> Iterator[tuple[str, hf.Stencil, np.ndarray]]:
    """(name, stencil, padded input) for every radius, dtype, symmetry and shape."""
    for radius in range(1, 7):
        for dtype in ("float64", "complex128"):
            for symmetric in (False, True):
                for index, shape in enumerate(SHAPES):
                    rng = np.random.default_rng([radius, index, symmetric, dtype == "complex128"])
                    if symmetric:
                        weights = rng.uniform(-2, 2, (3, radius))
                        stencil = hf.Stencil.star(rng.uniform(-2, 2), weights, weights)
                    else:
                        stencil = hf.Stencil.from_coefficients(rng.uniform(-2, 2, 1 + 6 * radius))
                    padded_shape = tuple(n + 2 * radius for n in shape)
                    padded = rng.standard_normal(padded_shape)
                    if dtype == "complex128":
                        padded = padded + 1j * rng.standard_normal(padded_shape)
                    name = f"r{radius}_{dtype}_{'symmetric' if symmetric else 'general'}_{index}"
                    yield name, stencil, padded


if __name__ == "__main__":
    outputs = {name: apply_padded(stencil, padded) for name, stencil, padded in cases()}
    np.savez_compressed(Path(__file__).with_name("kernel_outputs.npz"), **outputs)
    print(f"{len(outputs)} outputs written")
