"""Every schedule x transport x batch x slope gives results bit-identical to
flat-original and to the numpy reference (GPAW journal Sect. 5 and 5.1)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from _cases import prepared

import hybridfd as hf

RANKS = (1, 2, 3, 4, 8)

GRIDS = 7  # with batch 2 or 3 and every slope, the last batch is clipped
BATCHES = (1, 2, 3, GRIDS)
SLOPES = ((0, "geometric"), (1, "geometric"), (2, "geometric"), (1, "linear"), (2, "linear"))
# (dtype, periodic, radius, shape): both dtypes, periodic and not per axis, radius 1..3,
# uneven and even splits (24 divides by 1, 2, 3, 4 and 8 ranks), star stencils and
# general ones that read every edge and corner of the halo.
CASES = [
    ("complex128", (True, False, True), ("general", 2), (25, 13, 26)),
    ("float64", (False, True, True), ("general", 1), (24, 24, 24)),
    ("float64", (True, False, True), 2, (25, 13, 26)),
    ("complex128", (False, True, False), 2, (25, 13, 26)),
    ("float64", (False, False, False), 1, (25, 13, 26)),
    ("complex128", (True, True, True), 3, (25, 13, 26)),
    ("float64", (True, True, True), 3, (24, 24, 24)),
    ("complex128", (True, False, True), 1, (24, 24, 24)),
]


def valid(batch: int, slope: int, kind: str) -> bool:
    return slope == 0 or (batch >> slope >= 1 if kind == "geometric" else batch > slope)


# A slope only changes the sizes of the batches a schedule hands its transport, so the
# whole slope grid runs with p2p; every other transport runs every schedule and batch
# with these (CI time: each transport is a third of p2p's share).
TRANSPORT_SLOPES = ((0, "geometric"), (1, "geometric"))
CONFIGS = [
    (schedule, transport, batch, slope, kind)
    for schedule, transport, batch, (slope, kind) in itertools.product(
        hf.schedule_names(), hf.transport_names(), BATCHES, SLOPES
    )
    if valid(batch, slope, kind) and (transport == "p2p" or (slope, kind) in TRANSPORT_SLOPES)
]


@pytest.fixture(scope="module")
def cases():
    """Per data case: decomposition, stencil, scattered input, flat-original's output, reference."""
    return prepared(CASES, GRIDS)


@pytest.mark.parametrize(("schedule", "transport", "batch", "slope", "kind"), CONFIGS)
def test_bit_identical_to_flat_original(cases, schedule, transport, batch, slope, kind):
    for dec, stencil, local, original, reference in cases:
        op = hf.Operator(
            dec, stencil, schedule=schedule, transport=transport, batch=batch, slope=slope, slope_kind=kind, progress=1
        )
        out = op.apply(local)
        np.testing.assert_array_equal(out, original)
        gathered = dec.gather(out)
        if dec.comm.rank == 0:
            np.testing.assert_allclose(gathered, reference, rtol=0, atol=1e-12 * np.abs(reference).max())


@pytest.mark.parametrize("approach", ["flat-optimized"])
@pytest.mark.parametrize("progress", [0, 1, 3])
def test_presets_and_progress(cases, approach, progress):
    for dec, stencil, local, original, _ in cases:
        op = hf.Operator(dec, stencil, approach=approach, progress=progress)
        assert op.config["progress"] == progress
        np.testing.assert_array_equal(op.apply(local), original)


@pytest.mark.parametrize("schedule", hf.schedule_names())
@pytest.mark.parametrize("transport", hf.transport_names())
def test_one_operator_many_batch_sizes_equals_fresh_operators(cases, schedule, transport):
    dec, stencil, local, _, _ = cases[0]
    op = hf.Operator(dec, stencil, schedule=schedule, transport=transport, batch=3, slope=1)
    for grids in (7, 2, 11, 0, 1, 7):
        many = np.concatenate([local] * 2)[:grids]
        fresh = hf.Operator(dec, stencil, schedule=schedule, transport=transport, batch=3, slope=1)
        np.testing.assert_array_equal(op.apply(many), fresh.apply(many))


@pytest.mark.parametrize("schedule", hf.schedule_names())
@pytest.mark.parametrize("transport", hf.transport_names())
def test_steady_state_apply_allocates_nothing(cases, schedule, transport):
    dec, stencil, local, _, _ = cases[1]
    op = hf.Operator(dec, stencil, schedule=schedule, transport=transport, batch=3, slope=1)
    out = np.empty_like(local)
    op.apply(local, out=out)  # the first apply with this G may set up persistent requests
    assert op._core.apply_counting_allocations(local, out, True) == 0
    smaller = local[:4].copy()
    small_out = np.empty_like(smaller)
    op.apply(smaller, out=small_out)
    assert op._core.apply_counting_allocations(smaller, small_out, True) == 0
    # The counter does count: a fresh persistent transport sets its requests up on first use.
    if transport == "persistent":
        fresh = hf.Operator(dec, stencil, schedule=schedule, transport=transport, batch=3, slope=1)
        assert fresh._core.apply_counting_allocations(local, out, True) > 0


@pytest.mark.parametrize("schedule", hf.schedule_names())
def test_neighbor_without_persistent_collectives(cases, schedule, monkeypatch):
    """The MPI-3 path of the neighbor transport (MPI_Ineighbor_alltoallw per batch), as on
    a library without MPI_Neighbor_alltoallw_init; the variable is read when it is made."""
    monkeypatch.setenv("HYBRIDFD_NEIGHBOR_PERSISTENT", "0")
    for dec, stencil, local, original, _ in cases:
        op = hf.Operator(dec, stencil, schedule=schedule, transport="neighbor", batch=3, slope=1, progress=1)
        np.testing.assert_array_equal(op.apply(local), original)
