"""The halo exchange on its own (hf.Halo): every ghost layer against numpy's padding of the
whole grid, for every schedule, transport and model, split phase and pipelined, Bloch
phases on edges and corners, and bad input refused on every rank."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from _cases import batch_of, general_stencil
from mpi4py import MPI

import hybridfd as hf

RANKS = (1, 2, 3, 4)

SIZE = MPI.COMM_WORLD.size
SHAPE = (11, 9, 10)
GRIDS = 5
# (periodic, widths, corners, process grid)
CASES = [
    ((True, True, True), (2, 1, 2), True, None),
    ((True, False, True), (1, 2, 1), True, (1, 1, SIZE)),
    ((False, False, False), (1, 1, 1), True, (SIZE, 1, 1)),
    ((True, True, False), (2, 0, 1), True, None),
    ((True, False, True), (1, 1, 2), False, None),
]


def window(dec: hf.Decomposition, padded_full: np.ndarray, widths) -> np.ndarray:
    """This rank's padded grids cut from the whole padded batch."""
    box = dec.box()
    return padded_full[
        (slice(None), *(slice(o, o + n + 2 * w) for o, n, w in zip(box.offset, box.extent, widths, strict=True)))
    ]


def faces_only(widths, shape) -> np.ndarray:
    """The points a halo without corners fills: the box and its six faces."""
    n = shape[-3:]
    inside = [slice(w, m - w) for w, m in zip(widths, n, strict=True)]
    mask = np.zeros(n, dtype=bool)
    for axis in range(3):
        index = list(inside)
        index[axis] = slice(None)
        mask[tuple(index)] = True
    return mask


def prepared(case, dtype: str, seed: int):
    periodic, widths, corners, grid = case
    dec = hf.Decomposition(hf.Domain(SHAPE, periodic=periodic, dtype=dtype), MPI.COMM_WORLD, grid=grid)
    full = batch_of((GRIDS, *SHAPE), dtype, seed)
    expected = window(dec, hf.reference.pad(full, widths, periodic), widths)
    return dec, full, expected


def filled(halo: hf.Halo, dec: hf.Decomposition, full: np.ndarray) -> np.ndarray:
    a = halo.empty(GRIDS)
    halo.interior(a)[...] = dec.scatter(full if MPI.COMM_WORLD.rank == 0 else None)
    return a


def assert_ghosts(a: np.ndarray, expected: np.ndarray, widths, corners: bool) -> None:
    if corners:
        np.testing.assert_array_equal(a, expected)
    else:
        mask = faces_only(widths, a.shape)
        np.testing.assert_array_equal(a[:, mask], expected[:, mask])


CONFIGS = [
    (model, schedule, transport)
    for model, schedule, transport in itertools.product(hf.model_names(), hf.schedule_names(), hf.transport_names())
    if model in hf.transport_support(transport)["models"] and schedule in hf.transport_support(transport)["schedules"]
]


@pytest.mark.parametrize(("model", "schedule", "transport"), CONFIGS)
def test_every_strategy_fills_every_ghost(comm, model, schedule, transport):
    threads = 1 if model == "flat" else 2
    for seed, case in enumerate(CASES):
        periodic, widths, corners, _ = case
        dtype = ("float64", "complex128")[seed % 2]
        dec, full, expected = prepared(case, dtype, seed)
        halo = hf.Halo(
            dec, widths, corners, model=model, threads=threads, schedule=schedule, transport=transport, batch=2, slope=1
        )
        assert_ghosts(halo.exchange(filled(halo, dec, full)), expected, widths, corners)


@pytest.mark.parametrize("approach", hf.approach_names())
def test_split_phase_and_pipeline_equal_the_exchange(comm, approach):
    threads = {} if approach.startswith("flat") else {"threads": 2}
    for seed, case in enumerate(CASES):
        periodic, widths, corners, _ = case
        dec, full, expected = prepared(case, "complex128", seed)
        halo = hf.Halo(dec, widths, corners, approach, **threads)
        a = filled(halo, dec, full)
        handle = halo.start(a)
        assert halo._core.started
        assert handle.finish() is a
        assert_ghosts(a, expected, widths, corners)
        b = filled(halo, dec, full)
        batches: list[tuple[int, int]] = []

        def compute(
            first: int, last: int, b=b, batches=batches, expected=expected, widths=widths, corners=corners
        ) -> None:
            # Called as soon as the batch's ghosts are in: they are, already.
            assert_ghosts(b[first:last], expected[first:last], widths, corners)
            batches.append((first, last))

        halo.pipeline(b, compute)
        covered = sorted(batches)
        assert covered[0][0] == 0 and covered[-1][1] == GRIDS
        assert all(prev[1] == nxt[0] for prev, nxt in itertools.pairwise(covered))


def test_a_start_holds_more_grids_later(comm):
    dec, full, expected = prepared(CASES[0], "float64", 0)
    halo = hf.Halo(dec, CASES[0][1], True, "flat-optimized")
    for grids in (1, 3, GRIDS, 2):
        a = filled(halo, dec, full)[:grids]
        halo.start(a).finish()
        np.testing.assert_array_equal(a, expected[:grids])


@pytest.mark.parametrize("approach", ["flat-original", "flat-optimized", "hybrid-master-only"])
def test_pipeline_with_a_user_kernel_equals_the_operator(comm, approach):
    """The worked example of docs/concepts.md: a user's numpy kernel on the padded grids,
    batch by batch, gives the Operator's result bit for bit (the 19-point stencil there,
    and a general one of reach 2)."""
    offsets = [(x, y, z) for x in (-1, 0, 1) for y in (-1, 0, 1) for z in (-1, 0, 1) if abs(x) + abs(y) + abs(z) <= 2]
    weights = [-6.0 if offset == (0, 0, 0) else 1 / 3 for offset in offsets]
    for stencil in (hf.Stencil.from_offsets(offsets, weights), general_stencil(seed=4, reach=2)):
        check_user_kernel(comm, approach, stencil)


def check_user_kernel(comm, approach: str, stencil: hf.Stencil) -> None:
    dec = hf.Decomposition(hf.Domain(SHAPE, periodic=(True, False, True), dtype="float64"), MPI.COMM_WORLD)
    full = batch_of((GRIDS, *SHAPE), "float64", 7)
    local = dec.scatter(full if comm.rank == 0 else None)
    threads = {} if approach.startswith("flat") else {"threads": 2}
    halo = hf.Halo.for_stencil(dec, stencil, approach, **threads)
    a = halo.empty(GRIDS)
    halo.interior(a)[...] = local
    out = np.empty_like(local)

    def compute(first: int, last: int) -> None:
        out[first:last] = hf.reference.apply_padded(stencil, a[first:last])

    halo.pipeline(a, compute)
    np.testing.assert_array_equal(out, hf.Operator(dec, stencil).apply(local))


def test_bloch_phases_multiply_edges_and_corners_once_per_boundary(comm):
    periodic = (True, True, True)
    dec = hf.Decomposition(hf.Domain(SHAPE, periodic=periodic, dtype="complex128"), MPI.COMM_WORLD)
    rng = np.random.default_rng(3)
    phases = rng.uniform(-2, 2, (3, 2)) + 1j * rng.uniform(-2, 2, (3, 2))
    full = batch_of((GRIDS, *SHAPE), "complex128", 3)
    widths = (2, 1, 2)
    expected = window(dec, hf.reference.pad(full, widths, periodic, phases), widths)
    for approach in ("flat-original", "flat-optimized"):
        halo = hf.Halo(dec, widths, True, approach)
        np.testing.assert_array_equal(halo.exchange(filled(halo, dec, full), phases=phases), expected)
        a = filled(halo, dec, full)
        halo.start(a, phases=phases).finish()
        np.testing.assert_array_equal(a, expected)


def test_for_stencil_exchanges_what_the_stencil_reads(comm):
    dec = hf.Decomposition(hf.Domain(SHAPE, periodic=True, dtype="float64"), MPI.COMM_WORLD)
    star = hf.Halo.for_stencil(dec, hf.Stencil.laplace(2))
    assert star.widths == (2, 2, 2) and len(star.messages) == 6
    diagonal = hf.Stencil.from_offsets([(0, 0, 0), (1, 1, 0), (-1, -1, 0), (0, 0, 3)], [1.0, 2.0, 2.0, 3.0])
    halo = hf.Halo.for_stencil(dec, diagonal)
    assert halo.widths == (1, 1, 3)
    # The xy edges the diagonal points to and the faces under them, and their opposites.
    directions = {direction for direction, _, _ in halo.messages}
    assert directions == {(1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1), (1, 1, 0), (-1, -1, 0)}
    assert len(hf.Halo(dec, (1, 1, 1), True).messages) == 26
    # empty(): zeroed, C-contiguous, the first grid's interior on a cache line.
    for grids in (None, 3):
        a = halo.empty(grids)
        assert a.shape == ((3,) if grids else ()) + halo.padded_shape and a.flags.c_contiguous and not a.any()
        assert halo.interior(a).__array_interface__["data"][0] % 64 == 0


def bad_arrays(halo: hf.Halo) -> list[tuple[object, type, str]]:
    shape = halo.padded_shape
    good = halo.empty(2)
    read_only = halo.empty(2)
    read_only.flags.writeable = False
    return [
        (np.zeros((2, shape[0] + 1, shape[1], shape[2])), ValueError, "padded array has shape"),
        (np.zeros((2, *shape), dtype=np.complex128), TypeError, "padded array has dtype complex128"),
        (good[:, ::-1], ValueError, "not C-contiguous"),
        (read_only, ValueError, "read-only"),
        ([1.0, 2.0], TypeError, "must be a numpy.ndarray, got list"),
    ]


@pytest.mark.parametrize("index", range(5))
@pytest.mark.parametrize("call", ["exchange", "start", "pipeline"])
def test_bad_array_on_one_rank_raises_on_every_rank(comm, index, call):
    dec = hf.Decomposition(hf.Domain(SHAPE, periodic=True, dtype="float64"), MPI.COMM_WORLD)
    halo = hf.Halo(dec, (1, 2, 1), True, "flat-optimized")
    bad, error, message = bad_arrays(halo)[index]
    mine = bad if comm.rank == SIZE - 1 else halo.empty(2)
    run = {
        "exchange": lambda: halo.exchange(mine),
        "start": lambda: halo.start(mine),
        "pipeline": lambda: halo.pipeline(mine, lambda first, last: None),
    }[call]
    with pytest.raises(error, match=message):
        run()
    assert not halo._core.started
    halo.exchange(halo.empty(2))  # nothing left half done


def test_split_phase_misuse_raises_on_every_rank(comm):
    dec = hf.Decomposition(hf.Domain(SHAPE, periodic=True, dtype="float64"), MPI.COMM_WORLD)
    halo = hf.Halo(dec, (1, 1, 1), True)
    with pytest.raises(ValueError, match="finish without a start"):
        halo._core.finish()
    a, b = halo.empty(2), halo.empty(2)
    handle = halo.start(a)
    for misuse in (lambda: halo.start(b), lambda: halo.exchange(b), lambda: halo.pipeline(b, print)):
        with pytest.raises(ValueError, match="while an exchange is started"):
            misuse()
    handle.finish()
    with pytest.raises(TypeError, match="compute must be callable"):
        halo.pipeline(a, None)


@pytest.mark.parametrize(
    ("widths", "corners", "error", "message"),
    [
        ((7, 1, 1), True, ValueError, r"halo widths \(7, 1, 1\) must each be 0..6"),
        ((-1, 1, 1), True, ValueError, r"halo widths \(-1, 1, 1\) must each be 0..6"),
        ((0, 0, 0), True, ValueError, "leave nothing to exchange"),
        ((1, 1), True, TypeError, "widths must be three ints"),
        ((1, 1, 1), "yes", TypeError, "corners must be a bool"),
    ],
)
def test_bad_widths_raise_on_every_rank(comm, widths, corners, error, message):
    dec = hf.Decomposition(hf.Domain(SHAPE, periodic=True, dtype="float64"), MPI.COMM_WORLD)
    good = ((1, 1, 1), True)
    mine = (widths, corners) if comm.rank == 0 else good
    with pytest.raises(error, match=message):
        hf.Halo(dec, *mine)


def test_a_box_thinner_than_the_widths_is_named(comm):
    dec = hf.Decomposition(
        hf.Domain((2 * SIZE, 8, 8), periodic=True, dtype="float64"), MPI.COMM_WORLD, grid=(SIZE, 1, 1)
    )
    with pytest.raises(ValueError, match="thinner than the halo width 3 on axis 0"):
        hf.Halo(dec, (3, 1, 1), True)


def test_a_compute_that_raises_on_one_rank_raises_on_every_rank(comm):
    """The exchange runs to its end, so no rank waits for messages never sent; then the
    failing rank raises its own exception and the others a ValueError naming it."""
    dec = hf.Decomposition(hf.Domain(SHAPE, periodic=True, dtype="float64"), MPI.COMM_WORLD)
    halo = hf.Halo(dec, (1, 1, 1), True, "flat-optimized", batch=1, slope=0)
    calls = []

    def compute(first: int, last: int) -> None:
        calls.append(first)
        if comm.rank == SIZE - 1 and first == 1:
            raise ZeroDivisionError("the user's kernel failed")

    expected = ZeroDivisionError if comm.rank == SIZE - 1 else ValueError
    with pytest.raises(expected, match="the user's kernel failed"):
        halo.pipeline(halo.empty(GRIDS), compute)
    assert calls == ([0, 1] if comm.rank == SIZE - 1 else list(range(GRIDS)))
    halo.exchange(halo.empty(2))
