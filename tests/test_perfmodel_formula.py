"""WaitTime of Fig. 5.2 (GPAW journal) by hand, at its limits, and the total-time prediction."""

from __future__ import annotations

import math

import pytest

from hybridfd.perfmodel import Costs, Problem, batch_sizes, halo_bytes_per_grid, predict, schedule_wait_time, wait_time


def test_hand_computed_slope_one() -> None:
    # l=1, B=2, C=0.5, t=32, b=4, n=1:
    # line 1: 1 + 4/(2*2) = 2; line 2 (i=1): max(0, 1 + 4/2 - 0.5*4/2) = 2;
    # line 3: max(0, 1 + 4/2 - 0.5*4) * (32/4 + 1 - 4) = 1 * 5 = 5.
    assert wait_time(1.0, 2.0, 0.5, 32, 4, 1) == 9.0


def test_hand_computed_slope_two() -> None:
    # l=0.5, B=4, C=0.25, t=64, b=8, n=2:
    # line 1: 0.5 + 8/(4*4) = 1; line 2: i=1: 0.5 + 8/4 - 0.25*8/2 = 1.5, i=2: 0.5 + 8/8 - 0.25*8/4 = 1;
    # line 3: max(0, 0.5 + 2 - 2) * (8 + 1 - 8) = 0.5.
    assert wait_time(0.5, 4.0, 0.25, 64, 8, 2) == 4.0


def test_hidden_terms_clip_at_zero() -> None:
    # Compute (C b = 40) covers every exchange (l + b/B = 3): only line 1 remains.
    assert wait_time(1.0, 2.0, 10.0, 40, 4, 1) == 1.0 + 4 / 4


def test_printed_step_count_can_go_negative() -> None:
    # b = t with n = 1: the printed factor t/b + 1 - 2^(n+1) is -2 (see the docstring).
    # line 1: 1 + 4/4 = 2; line 2: max(0, 1 + 2 - 1) = 2; line 3: 1 * (-2).
    assert wait_time(1.0, 2.0, 0.5, 4, 4, 1) == 2.0


@pytest.mark.parametrize(("t", "b"), [(1, 1), (8, 1), (8, 2), (64, 8), (60, 12)])
@pytest.mark.parametrize(("l", "B", "C"), [(1e-5, 1e3, 1e-4), (1e-5, 1e4, 1e-5), (0.0, 1e2, 1e-3)])
def test_n0_is_the_double_buffered_loop(l, B, C, t, b) -> None:  # noqa: E741 (the paper's l)
    # n = 0: first batch in full, then t/b - 1 steps of max(0, l + b/B - C b); the
    # schedule's own batch sequence gives the same sum.
    expected = l + b / B + max(0.0, l + b / B - C * b) * (t / b - 1)
    assert wait_time(l, B, C, t, b, 0) == pytest.approx(expected, rel=1e-15)
    assert schedule_wait_time(l, B, C, batch_sizes(t, b, 0)) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_one_batch_of_everything_waits_for_all(n) -> None:
    # b = t, n = 0: one exchange of every grid, nothing to overlap with: l + t/B.
    if n == 0:
        assert wait_time(2e-6, 1e4, 1e-3, 16, 16, 0) == 2e-6 + 16 / 1e4
    # The schedule itself never waits more than one exchange of all grids, sloped or not.
    sizes = batch_sizes(16, 16, n)
    assert sum(sizes) == 16
    assert schedule_wait_time(2e-6, 1e4, 1e-3, sizes) <= 2e-6 * len(sizes) + 16 / 1e4 + 1e-18


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_infinite_bandwidth_leaves_latency_only(n) -> None:
    l, C, t, b = 3e-6, 1e-6, 64, 8  # noqa: E741
    value = (
        l + sum(max(0.0, l - C * b / 2**i) for i in range(1, n + 1)) + max(0.0, l - C * b) * (t / b + 1 - 2 ** (n + 1))
    )
    assert wait_time(l, math.inf, C, t, b, n) == pytest.approx(value, rel=1e-15)
    assert wait_time(l, 1e300, C, t, b, n) == pytest.approx(value, rel=1e-12)


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_zero_latency_with_hidden_compute_leaves_the_first_batch(n) -> None:
    # l -> 0 and C > 2/B: every later exchange is hidden, only b/(2^n B) is waited for:
    # sloping divides the unhidden wait by 2^n, the paper's point.
    B, C, t, b = 1e3, 3e-3, 64, 8
    assert wait_time(0.0, B, C, t, b, n) == pytest.approx(b / (2**n * B), rel=1e-15)
    assert wait_time(1e-300, B, C, t, b, n) == pytest.approx(b / (2**n * B), rel=1e-12)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((-1.0, 1.0, 1.0, 4, 2, 0), "latency l must be at least 0, got -1.0"),
        ((0.0, 0.0, 1.0, 4, 2, 0), "bandwidth B must be greater than 0, got 0.0"),
        ((0.0, 1.0, math.nan, 4, 2, 0), "compute time per grid C must be finite, got nan"),
        ((0.0, 1.0, 1.0, 4, 8, 0), "batch size b=8 is larger than the total grids t=4"),
        ((0.0, 1.0, 1.0, 4, 2, -1), "slope n must be at least 0, got -1"),
        ((0.0, 1.0, 1.0, 0, 1, 0), "total grids t must be at least 1, got 0"),
    ],
)
def test_bad_values_are_named(args, message) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        wait_time(*args)


def test_counts_must_be_ints() -> None:
    with pytest.raises(TypeError, match="batch size b must be an int"):
        wait_time(0.0, 1.0, 1.0, 4, 2.0, 0)


def test_batch_sizes_follow_the_core() -> None:
    # cpp/src/batches.cpp: geometric b>>(n-i), linear b(i+1)/(n+1), last batch clipped.
    assert batch_sizes(20, 8, 2) == [2, 4, 8, 6]
    assert batch_sizes(20, 6, 2, "linear") == [2, 4, 6, 6, 2]
    assert batch_sizes(3, 8, 3) == [1, 2]
    assert batch_sizes(0, 4, 0) == []
    with pytest.raises(ValueError, match="slope 4 \\(geometric\\) with batch 8"):
        batch_sizes(10, 8, 4)


def test_halo_bytes_per_grid() -> None:
    # Box (4, 5, 6), radius 2, float64: faces of 30, 24, 20 points, two each, x 2 x 8 bytes.
    every = ((True, True),) * 3
    assert halo_bytes_per_grid((4, 5, 6), 2, 8, every) == (30 + 24 + 20) * 2 * 2 * 8
    # Only the x axis exchanges, one side: 30 points x 2 x 16 bytes.
    assert halo_bytes_per_grid((4, 5, 6), 2, 16, ((False, True), (False, False), (False, False))) == 960


COSTS = Costs(
    latency=1e-5, bandwidth=1e9, compute_per_point=1e-9, pack_per_byte=1e-10, sync=1e-6, cores=4, ranks_per_host=2
)
PROBLEM = Problem(grids=64, points=24**3, bytes_per_grid=6 * 24 * 24 * 2 * 8, interior_points=20**3)


def test_flat_double_buffered_adds_compute_and_packing_to_the_wait() -> None:
    per_grid = COSTS.compute_per_point * PROBLEM.points
    wait = schedule_wait_time(COSTS.latency, COSTS.bandwidth / PROBLEM.bytes_per_grid, per_grid, batch_sizes(64, 8, 1))
    # Every face goes to another rank: each halo byte is copied once (packed; the stencil
    # reads the received message in place).
    expected = wait + per_grid * 64 + COSTS.pack_per_byte * PROBLEM.bytes_per_grid * 64
    got = predict(COSTS, PROBLEM, model="flat", schedule="double-buffered", batch=8, slope=1)
    assert got == pytest.approx(expected, rel=1e-15)


def test_faces_to_the_rank_itself_cost_no_copy_and_no_message() -> None:
    # y and z periodic in one box: two thirds of the halo bytes never leave the rank.
    itself = PROBLEM.bytes_per_grid * 2 // 3
    problem = Problem(**{**PROBLEM.__dict__, "self_bytes_per_grid": itself})
    assert problem.remote_bytes_per_grid == PROBLEM.bytes_per_grid - itself
    per_grid = COSTS.compute_per_point * PROBLEM.points
    remote = problem.remote_bytes_per_grid
    wait = sum(COSTS.latency + s * remote / COSTS.bandwidth for s in batch_sizes(64, 8, 0))
    expected = wait + per_grid * 64 + COSTS.pack_per_byte * remote * 64
    got = predict(COSTS, problem, model="flat", schedule="all-dims", batch=8, slope=0)
    assert got == pytest.approx(expected, rel=1e-12)
    # A box that is its own neighbour on every axis waits for nothing.
    alone = Problem(**{**PROBLEM.__dict__, "self_bytes_per_grid": PROBLEM.bytes_per_grid})
    got = predict(COSTS, alone, model="flat", schedule="all-dims", batch=8, slope=0)
    assert got == pytest.approx(per_grid * 64, rel=1e-12)


def test_serial_dims_pays_three_latencies_per_batch() -> None:
    all_dims = predict(COSTS, PROBLEM, model="flat", schedule="all-dims", batch=1, slope=0)
    serial = predict(COSTS, PROBLEM, model="flat", schedule="serial-dims", batch=1, slope=0)
    assert serial - all_dims == pytest.approx(2 * COSTS.latency * 64, rel=1e-9)


def test_masteronly_synchronises_once_per_batch() -> None:
    # Two threads on four cores with two ranks: no oversubscription, compute halves.
    base = predict(COSTS, PROBLEM, model="flat", schedule="all-dims", batch=8, slope=0)
    master = predict(COSTS, PROBLEM, model="masteronly", schedule="all-dims", batch=8, slope=0, threads=2)
    compute = COSTS.compute_per_point * PROBLEM.points * 64
    assert master == pytest.approx(base - compute / 2 + 8 * COSTS.sync, rel=1e-12)


def test_each_batch_pays_its_messages_on_the_cpu() -> None:
    # 12 messages per batch (six faces, each a send and a receive) at 0.5 us each: the
    # cost grows with the number of batches, and no schedule hides it.
    costs = Costs(**{**COSTS.__dict__, "per_message": 5e-7})
    problem = Problem(**{**PROBLEM.__dict__, "messages_per_batch": 12})
    for schedule in ("all-dims", "double-buffered", "overlap"):
        for batch, batches in ((1, 64), (8, 8), (64, 1)):
            without = predict(COSTS, problem, model="flat", schedule=schedule, batch=batch, slope=0)
            with_messages = predict(costs, problem, model="flat", schedule=schedule, batch=batch, slope=0)
            assert with_messages - without == pytest.approx(batches * 12 * 5e-7, rel=1e-9)


def test_costs_reject_bad_values() -> None:
    with pytest.raises(ValueError, match="bandwidth must be > 0 bytes/s, got 0"):
        Costs(latency=0, bandwidth=0, compute_per_point=0, pack_per_byte=0, sync=0, cores=1, ranks_per_host=1)
    with pytest.raises(ValueError, match="cost latency must be a finite number >= 0, got -1"):
        Costs(latency=-1, bandwidth=1, compute_per_point=0, pack_per_byte=0, sync=0, cores=1, ranks_per_host=1)
    with pytest.raises(ValueError, match="cost per_message must be a finite number >= 0, got nan"):
        Costs(**{**COSTS.__dict__, "per_message": float("nan")})
