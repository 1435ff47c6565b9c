"""WaitTime of Fig. 5.2 (GPAW journal) by hand, at its limits, and the total-time prediction."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hybridfd.perfmodel import (
    Costs,
    Problem,
    Settings,
    batch_runs,
    batch_sizes,
    batch_table,
    halo_bytes_per_grid,
    predict,
    predict_all,
    schedule_wait_time,
    wait_time,
)
from hybridfd.perfmodel.predict import _box_problem


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


def cut_as_the_core_does(t: int, b: int, n: int, kind: str) -> list[int]:
    """cpp/src/batches.cpp's cut, batch by batch: BatchShape::size(index) (the slope's
    ramp, then b), each clipped to the grids left."""
    sizes: list[int] = []
    while sum(sizes) < t:
        index = len(sizes)
        if index < n:
            size = b >> (n - index) if kind == "geometric" else b * (index + 1) // (n + 1)
        else:
            size = b
        sizes.append(min(size, t - sum(sizes)))
    return sizes


@pytest.mark.parametrize("kind", ["geometric", "linear"])
def test_batch_table_rows_are_the_core_cut(kind) -> None:
    # Every (t, b, n) the core accepts up to t = 40, b = 9, in one table: each row,
    # without its zero padding, is the core's cut of the same arguments, and so is
    # batch_sizes (one row of it).
    triples = [
        (t, b, n) for t in range(41) for b in range(1, 10) for n in range(b if kind == "linear" else b.bit_length())
    ]
    t, b, n = (np.array(column) for column in zip(*triples, strict=True))
    table = batch_table(t, b, n, kind)
    for row, (grids, batch, slope) in zip(table, triples, strict=True):
        sizes = cut_as_the_core_does(grids, batch, slope, kind)
        assert row[: len(sizes)].tolist() == sizes
        assert not row[len(sizes) :].any()
        assert batch_sizes(grids, batch, slope, kind) == sizes
    # The same pool run-length coded (batch_runs): each row's runs, expanded, are its
    # cut, and each run follows the batch before it (a run of several, its own size).
    runs = batch_runs(t, b, n, kind)
    assert runs[0].shape[1] == n.max() + 3
    for row, sizes, counts, previous in zip(table, *runs, strict=True):
        expanded = [int(size) for size, count in zip(sizes, counts, strict=True) for _ in range(count)]
        assert expanded == [int(size) for size in row if size]
        first = np.cumsum(counts) - counts  # the index of each column's first batch
        for column in np.flatnonzero(counts):
            assert previous[column] == ([0, *expanded])[first[column]]
            assert counts[column] == 1 or sizes[column] == previous[column]


def test_batch_table_refuses_what_batch_sizes_refuses() -> None:
    with pytest.raises(ValueError, match="slope 4 \\(geometric\\) with batch 8"):
        batch_table(np.array([10, 10]), np.array([8, 8]), np.array([3, 4]))
    with pytest.raises(ValueError, match="slope 2 \\(linear\\) with batch 2"):
        batch_table(10, 2, 2, "linear")
    with pytest.raises(TypeError, match="batch size b must be ints"):
        batch_table(10, 2.0, 0)


def test_halo_bytes_per_grid() -> None:
    # Box (4, 5, 6), radius 2, float64: faces of 30, 24, 20 points, two each, x 2 x 8 bytes.
    every = ((True, True),) * 3
    assert halo_bytes_per_grid((4, 5, 6), 2, 8, every) == (30 + 24 + 20) * 2 * 2 * 8
    # Only the x axis exchanges, one side: 30 points x 2 x 16 bytes.
    assert halo_bytes_per_grid((4, 5, 6), 2, 16, ((False, True), (False, False), (False, False))) == 960


COSTS = Costs(
    latency=1e-5, bandwidth=1e9, compute_per_point=1e-9, pack_per_byte=1e-10, sync=1e-6, cores=4, ranks_per_host=2
)
PROBLEM = Problem(
    grids=64,
    points=24**3,
    bytes_per_grid=6 * 24 * 24 * 2 * 8,
    interior_points=20**3,
    z_bytes_per_grid=2 * 24 * 24 * 2 * 8,
    interior_points_xy=20 * 20 * 24,
)


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
    for schedule in ("all-dims", "double-buffered", "overlap", "overlap-xy"):
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


def documented(
    costs: Costs, problem: Problem, model: str, schedule: str, batch: int, slope: int, threads: int
) -> float:
    """predict_all's docstring, one setting at a time in plain Python: Fig. 5.2's
    schedule_wait_time over the schedule's batch_sizes for double-buffered, each batch's
    exchange less its interior's compute for overlap, the z share of it in full and the
    rest less its interior's for overlap-xy, every exchange in full otherwise;
    plus compute, one copy per remote halo byte, the messages' CPU cost and the team's
    synchronisations."""
    per_grid = costs.compute_per_point * problem.points * max(1.0, costs.ranks_per_host * threads / costs.cores)
    grids = math.ceil(problem.grids / threads) if model == "multiple" else problem.grids
    workers = {"flat": 1, "multiple": 1, "funneled-overlap": max(threads - 1, 1)}.get(model, threads)
    per_grid /= workers
    sizes = batch_sizes(grids, batch, slope)
    syncs = {"flat": 0, "multiple": 1}.get(model, len(sizes))
    remote = problem.bytes_per_grid - problem.self_bytes_per_grid
    B = costs.bandwidth / remote if remote else math.inf
    l = costs.latency if remote else 0.0  # noqa: E741 (the paper's l)
    # Overlapping schedules: Fig. 5.2 with the share h of each transfer that moves while
    # computing (bandwidth B/h), the rest, (1 - h) s/B per batch, paid in the wait.
    h = costs.hidden_share
    unhidden = (1 - h) * grids / B
    if schedule == "double-buffered":
        waiting = schedule_wait_time(l, B / h if h else math.inf, per_grid, sizes) + unhidden
    elif schedule == "overlap":
        share = problem.interior_points / problem.points
        waiting = sum(max(0.0, l + h * s / B - per_grid * share * s) for s in sizes) + unhidden
    elif schedule == "overlap-xy":
        # The z faces' share of every transfer waited for in full, the rest behind the
        # interior of whole rows.
        z = problem.z_bytes_per_grid / remote if remote else 0.0
        share = problem.interior_points_xy / problem.points
        waiting = sum(max(0.0, l + h * (1 - z) * s / B - per_grid * share * s) for s in sizes)
        waiting += unhidden + h * z * grids / B
    else:
        waiting = sum((3 if schedule == "serial-dims" else 1) * l + s / B for s in sizes)
    packing = costs.pack_per_byte * remote * grids
    messaging = costs.per_message * problem.messages_per_batch * len(sizes)
    return waiting + per_grid * grids + packing + messaging + costs.sync * syncs


# Three ranks x up to three threads on four cores (oversubscribed from two threads on),
# a third of the halo to the rank itself, 8 messages per batch; 37 grids, so that batches
# and threads leave ragged ends.
RAGGED = Problem(
    grids=37,
    points=24**3,
    bytes_per_grid=6 * 24 * 24 * 2 * 8,
    interior_points=20**3,
    messages_per_batch=8,
    self_bytes_per_grid=2 * 24 * 24 * 2 * 8,
    z_bytes_per_grid=2 * 24 * 24 * 2 * 8,
    interior_points_xy=20 * 20 * 24,
)
BUSY = Costs(**{**COSTS.__dict__, "ranks_per_host": 3, "per_message": 4e-7, "hidden_share": 0.3})
MODELS = ("flat", "multiple", "masteronly", "masteronly-threaded-comm", "funneled-overlap")
SCHEDULES = ("serial-dims", "all-dims", "double-buffered", "overlap", "overlap-xy")


@pytest.mark.parametrize(("costs", "problem"), [(COSTS, PROBLEM), (BUSY, RAGGED)])
def test_every_row_is_the_documented_formula(costs, problem) -> None:
    rows = [
        (model, schedule, batch, slope, threads)
        for model in MODELS
        for schedule in SCHEDULES
        for threads in (1, 2, 3)
        for batch in (1, 2, 4, 8, 16, 32)
        for slope in range(min(3, batch.bit_length() - 1) + 1)
    ]
    settings = Settings(*zip(*rows, strict=True))
    got = predict_all(costs, problem, settings)
    assert got.shape == (len(rows),)
    for value, row in zip(got.tolist(), rows, strict=True):
        assert value == pytest.approx(documented(costs, problem, *row), rel=1e-12), row
        # One setting alone is the same row: predict is predict_all of one row (summed
        # over fewer padding columns, so equal to the last bits).
        model, schedule, batch, slope, threads = row
        alone = predict(costs, problem, model=model, schedule=schedule, batch=batch, slope=slope, threads=threads)
        assert alone == pytest.approx(value, rel=1e-14)  # the sum over fewer padding columns


def test_settings_need_columns_of_one_length_and_threads() -> None:
    with pytest.raises(ValueError, match="one length"):
        Settings(("flat",), ("all-dims", "overlap"), (1,), (0,), (1,))
    with pytest.raises(ValueError, match="threads must be at least 1, got 0"):
        predict(COSTS, PROBLEM, model="flat", schedule="all-dims", batch=1, slope=0, threads=0)
    assert predict_all(COSTS, Problem(0, 8, 8, 0), Settings(("flat",), ("overlap",), (2,), (1,), (1,))).tolist() == [
        0.0
    ]


def test_without_progress_double_buffering_waits_as_long_as_all_dims() -> None:
    # No latency and a network that moves nothing while the rank computes (h = 0): every
    # batch's transfer is paid in its wait, so double-buffering (sloped or not) and
    # overlap wait exactly as long as all-dims, s/B per grid; h = 1 hides all but the
    # first batch's.
    costs = Costs(**{**COSTS.__dict__, "latency": 0.0, "hidden_share": 0.0})
    exposed = predict(costs, PROBLEM, model="flat", schedule="all-dims", batch=8, slope=0)
    for schedule, slope in (("double-buffered", 0), ("double-buffered", 2), ("overlap", 0), ("overlap-xy", 0)):
        got = predict(costs, PROBLEM, model="flat", schedule=schedule, batch=8, slope=slope)
        messages = costs.per_message * PROBLEM.messages_per_batch * (len(batch_sizes(64, 8, slope)) - 8)
        assert got == pytest.approx(exposed + messages, rel=1e-12)
    # A fast link (8 grids' compute covers 8 grids' transfer): h = 1 waits for the first
    # batch only, h = 0 for all of them.
    fast = {**costs.__dict__, "bandwidth": 1e11}
    transfer = PROBLEM.bytes_per_grid / 1e11
    base = predict(Costs(**fast), PROBLEM, model="flat", schedule="all-dims", batch=8, slope=0) - 64 * transfer
    for share, waited in ((1.0, 8 * transfer), (0.0, 64 * transfer), (0.5, 8 * transfer + 0.5 * 56 * transfer)):
        costs = Costs(**{**fast, "hidden_share": share})
        got = predict(costs, PROBLEM, model="flat", schedule="double-buffered", batch=8, slope=0)
        assert got == pytest.approx(base + waited, rel=1e-12), share


def test_the_hidden_share_is_a_share() -> None:
    with pytest.raises(ValueError, match="hidden_share must be a number in \\[0, 1\\], got 1.5"):
        Costs(**{**COSTS.__dict__, "hidden_share": 1.5})


def test_many_grids_are_ranked_in_constant_memory() -> None:
    # 10^11 grids in batches of one: the runs hold 3 columns, and the prediction is the
    # documented formula's (a column per batch could not be allocated).
    sizes, counts, _ = batch_runs(10**11, 1, 0)
    assert sizes.shape == (1, 3) and counts.sum() == 10**11
    problem = Problem(grids=10**11, points=24**3, bytes_per_grid=2 * 24 * 24 * 2 * 8, interior_points=20 * 24 * 24)
    got = predict(COSTS, problem, model="flat", schedule="double-buffered", batch=1, slope=0)
    per_grid = COSTS.compute_per_point * problem.points
    B = COSTS.bandwidth / problem.bytes_per_grid
    h = COSTS.hidden_share
    first = COSTS.latency + h / B
    steady = max(0.0, COSTS.latency + h / B - per_grid)
    waiting = first + (10**11 - 1) * steady + (1 - h) * 10**11 / B
    expected = waiting + (per_grid + COSTS.pack_per_byte * problem.bytes_per_grid) * 10**11
    assert got == pytest.approx(expected + COSTS.per_message * problem.messages_per_batch * 10**11, rel=1e-12)


def test_a_box_s_interiors_are_cut_only_where_it_sends_to_another_rank() -> None:
    # A 10 x 12 x 14 box, radius 2, float64: x sends both ways, y to the rank itself
    # (a periodic axis in one box), z one way (a non-periodic edge). The overlap
    # schedules cut x and z, overlap-xy x only; only z's one face counts as z bytes.
    exchanges = ((True, True), (True, True), (False, True))
    to_itself = ((False, False), (True, True), (False, False))
    box = _box_problem((10, 12, 14), 2, 8, exchanges, to_itself, 5)
    assert box.interior_points == 6 * 12 * 10
    assert box.interior_points_xy == 6 * 12 * 14
    assert box.z_bytes_per_grid == 10 * 12 * 2 * 8
    assert box.self_bytes_per_grid == 2 * 10 * 14 * 2 * 8
    assert box.messages_per_batch == 2 * 3
