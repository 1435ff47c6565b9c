"""approach="auto" under mpiexec: results equal the reference, the cache is used the second
time, and every rank makes the same choice even when their timings disagree."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import hybridfd as hf
from hybridfd import tune

RANKS = (2,)


@pytest.fixture
def directory(comm) -> Iterator[Path]:
    # Only rank 0 reads and writes the cache and calibration; the others get its path
    # so that every rank passes the same options.
    path = Path(comm.bcast(tempfile.mkdtemp(prefix="hybridfd-tune-") if comm.rank == 0 else None, root=0))
    yield path
    comm.Barrier()
    if comm.rank == 0:
        shutil.rmtree(path)


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_auto_matches_the_reference_then_comes_from_the_cache(comm, dtype, directory):
    shape, periodic, grids = (16, 12, 10), (True, False, True), 6
    dom = hf.Domain(shape, periodic=periodic, dtype=dtype)
    dec = hf.Decomposition(dom, comm)
    stencil = hf.Stencil.laplace(2, 0.25)
    rng = np.random.default_rng(7)
    batch = rng.standard_normal((grids, *shape))
    if dtype == "complex128":
        batch = batch + 1j * rng.standard_normal(batch.shape)
    options = {"cache": directory / "tune.json", "calibration": directory / "calibration.json", "budget": 3.0}

    op = hf.Operator(dec, stencil, approach="auto", threads=2, tune_options=options)
    assert op.config["approach_source"] is None  # tunes at the first apply
    local = dec.scatter(batch if comm.rank == 0 else None)
    out = dec.gather(op.apply(local))
    config = op.config
    assert config["approach_source"] == "tuner"
    assert config["approach"] in hf.approach_names()
    assert config["tuning"]["trials"]
    reference_op = hf.Operator(dec, stencil, approach="flat-original")
    flat = dec.gather(reference_op.apply(local))
    if comm.rank == 0:
        expected = hf.reference.apply(stencil, batch, periodic=periodic)
        np.testing.assert_allclose(out, expected, rtol=0, atol=1e-12 * np.abs(expected).max())
        # Whatever the tuner chose, the result is bit-identical to flat-original.
        np.testing.assert_array_equal(out, flat)

    again = hf.Operator(dec, stencil, approach="auto", threads=2, grids=grids, tune_options=options)
    assert again.config["approach_source"] == "cache"
    assert again.config["tuning"]["cache_status"] == "hit"
    for key in ("model", "schedule", "transport", "batch", "slope", "threads"):
        assert again.config[key] == config[key]
    # Every rank reports the same choice.
    assert comm.allgather(again.config["batch"]) == [config["batch"]] * comm.size
    again_out = dec.gather(again.apply(local))
    if comm.rank == 0:
        np.testing.assert_array_equal(again_out, flat)


def test_all_ranks_agree_when_their_timings_differ(comm):
    candidates = tune.candidates(
        32, 1, models=["flat"], schedules=hf.schedule_names(), transport="p2p", approaches=tune.presets()
    )
    ranked = tune.rank(candidates, lambda c: float(c.batch))

    def measure(c: tune.Candidate) -> float:
        # Each rank's own timings favour another batch size.
        favourite = 2 ** (comm.rank % 6)
        return abs(c.batch - favourite) + 0.01 * c.slope

    winner, _, measured, trials = tune.choose(comm, ranked, measure, trials=6, budget=60, transports=("persistent",))
    winners = comm.allgather((winner, measured, [(t.candidate, t.measured) for t in trials]))
    assert all(w == winners[0] for w in winners)
    # The slowest rank's time decides: batch b costs max over ranks |b - 2^rank|.
    assert measured == min(t.measured for t in trials if t.measured is not None)


def test_auto_refuses_settings_it_chooses_itself_on_every_rank(comm):
    dec = hf.Decomposition(hf.Domain((8, 8, 8)), comm)
    with pytest.raises(ValueError, match="approach='auto' chooses .* but batch, slope were given"):
        hf.Operator(dec, hf.Stencil.laplace(1, 1.0), approach="auto", batch=4, slope=1)
    with pytest.raises(ValueError, match="grids 0 must be a positive int"):
        hf.Operator(dec, hf.Stencil.laplace(1, 1.0), approach="auto", grids=0)
    with pytest.raises(ValueError, match="grids and tune_options apply to approach='auto' only"):
        hf.Operator(dec, hf.Stencil.laplace(1, 1.0), approach="flat-original", grids=4)


def test_tuning_for_different_grids_raises_on_every_rank(comm):
    dec = hf.Decomposition(hf.Domain((8, 8, 8)), comm)
    with pytest.raises(ValueError, match="the grids must be the same on every rank"):
        tune.tune(dec, hf.Stencil.laplace(1, 1.0), comm.rank + 1, cache=False)
