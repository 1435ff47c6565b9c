"""The standard 32,000-atom LJ melt (20^3 FCC cells, density 0.8442, T 1.44, in.lj's
settings), 100 steps, hybridfd vs LAMMPS from the same state: equal at LAMMPS's printed
precision (8 significant digits) at every step up to 10, and statistically equal over the
last 50 steps. Runs in hybridfd's .venv (1 rank); LAMMPS runs on 2 ranks in its own
environment through `lammps_lj.launch` (`make test-lammps`, conftest.py).
"""

from __future__ import annotations

import lammps_lj
import numpy as np
import pytest
from mpi4py import MPI

import hybridfd as hf

STEPS = 100
THERMO_EVERY = 10
EVERY_STEP_UNTIL = 10


@pytest.fixture(scope="module")
def runs() -> tuple[list[dict], dict]:
    state = hf.particles.initial_state(cells=(20, 20, 20), density=0.8442, temperature=1.44, seed=87287)
    theirs = lammps_lj.launch(2, state, STEPS, THERMO_EVERY, EVERY_STEP_UNTIL)
    md = hf.particles.LennardJones(MPI.COMM_SELF, state, cutoff=2.5, skin=0.3, dt=0.005, reneighbor_every=20)
    ours = md.run(EVERY_STEP_UNTIL, thermo_every=1)
    ours += md.run(STEPS - EVERY_STEP_UNTIL, thermo_every=THERMO_EVERY)[1:]  # its first record is step 10 again
    return ours, theirs


def test_same_thermo_steps(runs):
    ours, theirs = runs
    steps = [*range(EVERY_STEP_UNTIL + 1), *range(2 * THERMO_EVERY, STEPS + 1, THERMO_EVERY)]
    assert [record["step"] for record in ours] == steps
    assert [record["step"] for record in theirs["thermo"]] == steps
    assert [record["step"] for record in theirs["thermo_printed"]] == steps


def test_first_steps_equal_at_printed_precision(runs):
    ours, theirs = runs
    for record, printed in zip(ours, theirs["thermo_printed"], strict=True):
        if record["step"] > EVERY_STEP_UNTIL:
            break
        for field in lammps_lj.THERMO_FIELDS:
            assert float(f"{record[field]:.8g}") == printed[field], (record["step"], field, record[field])


def test_last_steps_statistically_equal(runs):
    """Mean temperature, potential energy and pressure over the records of the last 50
    steps within 3 standard errors (the trajectories may part after some steps: the sums
    run in different orders)."""
    ours, theirs = runs
    start = STEPS - 50
    for field in ("temperature", "potential_energy", "pressure"):
        a = np.array([r[field] for r in ours if r["step"] >= start])
        b = np.array([r[field] for r in theirs["thermo"] if r["step"] >= start])
        assert len(a) == len(b) == 6
        error = np.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
        assert abs(a.mean() - b.mean()) <= 3 * error, (field, a.mean(), b.mean(), error)
