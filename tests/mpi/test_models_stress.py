"""Stress: 1,000 applies under 2 ranks x 3 threads, each with a random model, schedule,
transport, number of grids G, batch and slope; every result is checked against
flat-original (bit for bit) and the numpy reference."""

from __future__ import annotations

import numpy as np
import pytest
from mpi4py import MPI

import hybridfd as hf

RANKS = (2,)

APPLIES = 1000
THREADS = 3
MAX_GRIDS = 12


def test_thousand_random_applies():
    comm = MPI.COMM_WORLD
    dom = hf.Domain((19, 11, 10), periodic=(True, False, True), dtype="complex128")
    dec = hf.Decomposition(dom, comm)
    stencil = hf.Stencil.laplace(2, spacing=(0.3, 0.4, 0.5))
    rng = np.random.default_rng(2026)  # the same draws on every rank
    full = rng.standard_normal((MAX_GRIDS, *dom.shape)) + 1j * rng.standard_normal((MAX_GRIDS, *dom.shape))
    local = dec.scatter(full if comm.rank == 0 else None)
    original = hf.Operator(dec, stencil).apply(local)
    gathered = dec.gather(original)
    if comm.rank == 0:
        reference = hf.reference.apply(stencil, full, periodic=dom.periodic)
        np.testing.assert_allclose(gathered, reference, rtol=0, atol=1e-12 * np.abs(reference).max())
    models = [m for m in hf.model_names() if m != "flat"]
    for _ in range(APPLIES):
        grids = int(rng.integers(0, MAX_GRIDS + 1))
        batch = int(rng.integers(1, MAX_GRIDS + 1))
        slope = int(rng.integers(0, batch.bit_length()))  # geometric: batch >> slope >= 1
        transport = str(rng.choice(hf.transport_names()))
        model = str(rng.choice([m for m in models if m in hf.transport_support(transport)["models"]]))
        options = {"master_share": float(rng.choice([0.0, 0.5]))} if model == "funneled-overlap" else {}
        op = hf.Operator(
            dec, stencil, "flat-optimized", model=model, threads=THREADS, batch=batch, slope=slope,
            schedule=str(rng.choice(hf.schedule_names())), transport=transport,
            progress=int(rng.integers(0, 3)), **options,
        )  # fmt: skip
        out = op.apply(local[:grids])
        assert np.array_equal(out, original[:grids]), op.config


@pytest.mark.parametrize("transport", hf.transport_names())
def test_thousand_applies_per_transport(transport):
    """Per transport: 1,000 applies with random G on Operators remade every 50 applies
    with a random supported model, schedule, batch and slope."""
    comm = MPI.COMM_WORLD
    dom = hf.Domain((13, 9, 8), periodic=(True, False, True), dtype="float64")
    dec = hf.Decomposition(dom, comm)
    stencil = hf.Stencil.laplace(2)
    rng = np.random.default_rng([2026, len(transport)])  # the same draws on every rank
    full = rng.standard_normal((MAX_GRIDS, *dom.shape))
    local = dec.scatter(full if comm.rank == 0 else None)
    original = hf.Operator(dec, stencil).apply(local)
    support = hf.transport_support(transport)
    op = None
    for index in range(APPLIES):
        if index % 50 == 0:
            batch = int(rng.integers(1, MAX_GRIDS + 1))
            model = str(rng.choice(support["models"]))
            op = hf.Operator(
                dec, stencil, "flat-optimized", model=model, threads=1 if model == "flat" else 2, batch=batch,
                slope=int(rng.integers(0, batch.bit_length())), schedule=str(rng.choice(support["schedules"])),
                transport=transport, progress=int(rng.integers(0, 3)),
            )  # fmt: skip
        grids = int(rng.integers(0, MAX_GRIDS + 1))
        assert np.array_equal(op.apply(local[:grids]), original[:grids]), (op.config, grids)
