"""hf.particles.initial_state equals, bit for bit, the plain numpy definition of the melt's
start that the LAMMPS comparison uses (benchmarks/peers/lammps_lj.py `reference_state`;
numpy only, so this runs without LAMMPS)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import hybridfd as hf

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from peers import lammps_lj  # noqa: E402  (numpy only at import)


@pytest.mark.parametrize(
    ("cells", "density", "temperature", "seed"),
    [((20, 20, 20), 0.8442, 1.44, 87287), ((3, 4, 5), 0.8442, 1.44, 87287), ((2, 6, 3), 0.5, 3.0, 11)],
)
def test_initial_state_is_the_reference(cells, density, temperature, seed):
    ours = hf.particles.initial_state(cells=cells, density=density, temperature=temperature, seed=seed)
    reference = lammps_lj.reference_state(cells, density=density, temperature=temperature, seed=seed)
    for field in lammps_lj.STATE_FIELDS:
        np.testing.assert_array_equal(getattr(ours, field), reference[field], err_msg=field)
    assert ours.tags.dtype == reference["tags"].dtype == np.int64
