"""Bad input raises a clear error naming the value, on every rank, before any halo
message is sent; nothing hangs (the launcher's timeout would fail this module), and a
valid apply afterwards still works (nothing was left in flight)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import hybridfd as hf

RANKS = (1, 2, 3, 4)


@pytest.fixture
def setup(comm):
    dom = hf.Domain((12, 10, 9), periodic=(True, False, True))
    dec = hf.Decomposition(dom, comm)
    op = hf.Operator(dec, hf.Stencil.laplace(2))
    yield dec, op
    # After the error, the same operator still computes the right thing.
    batch = np.random.default_rng(0).standard_normal((2, *dom.shape))
    out = dec.gather(op.apply(dec.scatter(batch if comm.rank == 0 else None)))
    if comm.rank == 0:
        np.testing.assert_array_equal(out, hf.reference.apply(op.stencil, batch, periodic=dom.periodic))


def only_on(rank: int, comm, bad, good):
    return bad if comm.rank == rank else good


def test_wrong_shape(setup):
    dec, op = setup
    wrong = np.zeros((2, 3, 3, 3))
    with pytest.raises(ValueError, match=r"input array has shape \(2, 3, 3, 3\)"):
        op.apply(wrong)


def test_wrong_shape_on_one_rank_raises_everywhere(setup, comm):
    dec, op = setup
    bad_rank = comm.size - 1
    a = only_on(bad_rank, comm, np.zeros((2, 1, 1, 1)), dec.zeros(2))
    with pytest.raises(ValueError, match=rf"rank {bad_rank}: input array has shape \(2, 1, 1, 1\)"):
        op.apply(a)


def test_wrong_dtype(setup):
    dec, op = setup
    with pytest.raises(TypeError, match="dtype float32"):
        op.apply(dec.zeros(2).astype(np.float32))
    with pytest.raises(TypeError, match="dtype complex128"):
        op.apply(dec.zeros(2), out=dec.zeros(2).astype(complex))


def test_not_an_array(setup):
    dec, op = setup
    with pytest.raises(TypeError, match="got list"):
        op.apply(dec.zeros(2).tolist())


def test_non_contiguous(setup):
    dec, op = setup
    fortran = np.asfortranarray(dec.zeros(2))
    with pytest.raises(ValueError, match="not C-contiguous"):
        op.apply(fortran)
    strided = np.zeros((4, *dec.local_shape()))[::2]
    with pytest.raises(ValueError, match="not C-contiguous"):
        op.apply(dec.zeros(2), out=strided)


def test_out_aliases_input(setup):
    dec, op = setup
    a = dec.zeros(2)
    with pytest.raises(ValueError, match="overlaps the input"):
        op.apply(a, out=a)
    big = dec.zeros(3)
    with pytest.raises(ValueError, match="overlaps the input"):
        op.apply(big[1:], out=big[:-1])


def test_out_shape_and_read_only(setup):
    dec, op = setup
    with pytest.raises(ValueError, match="output array has shape"):
        op.apply(dec.zeros(2), out=dec.zeros(3))
    frozen = dec.zeros(2)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        op.apply(dec.zeros(2), out=frozen)


def test_number_of_grids_differs_between_ranks(setup, comm):
    dec, op = setup
    if comm.size == 1:
        pytest.skip("needs two ranks to differ")  # the 2-, 3- and 4-rank runs cover it
    with pytest.raises(ValueError, match="number of grids G must be the same on every rank, got 3 on rank 0"):
        op.apply(dec.zeros(3 if comm.rank == 0 else 2))


def test_box_thinner_than_radius(comm):
    # Every box is 2 points thick along x; radius 3 needs 3.
    dec = hf.Decomposition(hf.Domain((2 * comm.size, 9, 9)), comm, grid=(comm.size, 1, 1))
    with pytest.raises(ValueError, match=r"thinner than the stencil radius 3 on axis 0"):
        hf.Operator(dec, hf.Stencil.laplace(3))


def test_box_thinner_than_radius_on_some_ranks_only(comm):
    # 3*P - 1 points over P boxes: the first boxes are 3 thick, the last is 2.
    dec = hf.Decomposition(hf.Domain((3 * comm.size - 1, 9, 9)), comm, grid=(comm.size, 1, 1))
    with pytest.raises(ValueError, match=rf"rank {comm.size - 1}: box of extent \(2, 9, 9\)"):
        hf.Operator(dec, hf.Stencil.laplace(3))


def test_thin_box_is_fine_on_an_axis_that_exchanges_nothing(comm):
    # One box, not periodic: no halos move along z, so a 1-point-thick z is allowed.
    dom = hf.Domain((4 * comm.size, 6, 1), periodic=(True, True, False))
    dec = hf.Decomposition(dom, comm, grid=(comm.size, 1, 1))
    stencil = hf.Stencil.laplace(3)
    batch = np.random.default_rng(1).standard_normal((1, *dom.shape))
    out = dec.gather(hf.Operator(dec, stencil).apply(dec.scatter(batch if comm.rank == 0 else None)))
    if comm.rank == 0:
        np.testing.assert_array_equal(out, hf.reference.apply(stencil, batch, periodic=dom.periodic))


def test_impossible_process_grid(comm):
    grid = (comm.size + 1, 1, 1)
    with pytest.raises(ValueError, match=rf"process grid \({comm.size + 1}, 1, 1\) has {comm.size + 1} processes"):
        hf.Decomposition(hf.Domain((16, 16, 16)), comm, grid=grid)
    with pytest.raises(ValueError, match=r"non-positive"):
        hf.Decomposition(hf.Domain((16, 16, 16)), comm, grid=(0, comm.size, 1))
    if comm.size > 1:  # with one rank every axis has at least as many points as parts
        with pytest.raises(ValueError, match=r"process grid \(\d+, 1, 1\) cuts axis 0 .* more parts than it has"):
            hf.Decomposition(hf.Domain((1, 8, 8)), comm, grid=(comm.size, 1, 1))


def test_domain_too_small_for_the_ranks(comm):
    if comm.size == 1:
        pytest.skip("one rank fits any domain")  # the 2-, 3- and 4-rank runs cover it
    with pytest.raises(ValueError, match=rf"cannot split a domain of shape \(1, 1, 1\) over {comm.size} ranks"):
        hf.Decomposition(hf.Domain((1, 1, 1)), comm)


@pytest.mark.parametrize("radius", [0, 7])
def test_bad_radius(radius):
    with pytest.raises(ValueError, match=f"radius {radius}"):
        hf.Stencil.laplace(radius)


def test_wrong_number_of_coefficients():
    with pytest.raises(ValueError, match="got 12 stencil coefficients"):
        hf.Stencil.from_coefficients(np.ones(12))


@pytest.mark.parametrize(
    ("option", "match"),
    [
        (
            {"approach": "flat-fastest"},
            "unknown approach 'flat-fastest'; known: flat-optimized, flat-original, hybrid-",
        ),
        (
            {"model": "hybrid"},
            "unknown model 'hybrid'; known: flat, funneled-overlap, masteronly, masteronly-threaded-comm, multiple",
        ),
        ({"approach": "hybrid-multiple", "threads": 0}, "threads 0 must be at least 1"),
        ({"approach": "hybrid-master-only", "threads": -3}, "threads -3 must be at least 1"),
        ({"threads": 2}, "model 'flat' runs one thread per rank, but threads=2 was asked for"),
        ({"approach": "hybrid-master-only", "master_share": 0.5}, "master_share applies to the funneled-overlap"),
        ({"approach": "hybrid-funneled-overlap", "master_share": 1.5}, "master_share 1.5 must be between 0"),
        ({"approach": "hybrid-funneled-overlap", "master_share": float("nan")}, "master_share nan must be between"),
        (
            {"schedule": "sideways"},
            "unknown schedule 'sideways'; known: all-dims, double-buffered, overlap, overlap-xy, serial-dims",
        ),
        (
            {"transport": "pigeon"},
            "unknown transport 'pigeon'; known: " + re.escape(", ".join(sorted(hf.transport_names()))),
        ),
        ({"batch": -2}, "batch -2 must be at least 1"),
        ({"batch": 0}, "batch 0 must be at least 1"),
        (
            {"batch": 4, "slope": 3},
            r"slope 3 \(geometric\) with batch 4 makes the first batch smaller than one grid; the largest",
        ),
        (
            {"batch": 3, "slope": 3, "slope_kind": "linear"},
            r"slope 3 \(linear\) with batch 3 .* the largest such slope is 2",
        ),
        ({"slope": -1}, "slope -1 must be 0"),
        ({"slope_kind": "steep"}, "unknown slope kind 'steep'; known: geometric, linear"),
        ({"progress": -1}, "progress -1 must be 0"),
    ],
)
def test_unknown_option(comm, option, match):
    dec = hf.Decomposition(hf.Domain((8, 8, 8)), comm)
    with pytest.raises(ValueError, match=match):
        hf.Operator(dec, hf.Stencil.laplace(1), **option)


def test_scatter_of_a_wrong_shape(setup, comm):
    dec, op = setup
    wrong = np.zeros((2, 12, 10, 8)) if comm.rank == 0 else None
    with pytest.raises(ValueError, match=r"scatter: array has shape \(2, 12, 10, 8\); the domain is \(12, 10, 9\)"):
        dec.scatter(wrong)
    with pytest.raises(TypeError, match="scatter: array has dtype complex128"):
        dec.scatter(np.zeros((12, 10, 9), complex) if comm.rank == 0 else None)


def test_gather_of_a_wrong_shape(setup, comm):
    dec, op = setup
    with pytest.raises(ValueError, match=r"gather: array has shape \(5, 5, 5\)"):
        dec.gather(np.zeros((5, 5, 5)) if comm.rank == 0 else dec.zeros())


def test_thread_count_differs_between_ranks(comm):
    if comm.size == 1:
        pytest.skip("needs two ranks to differ")  # the 2-, 3- and 4-rank runs cover it
    dec = hf.Decomposition(hf.Domain((8, 8, 8)), comm)
    threads = 2 if comm.rank == 0 else 1
    with pytest.raises(
        ValueError, match="operator setting must be the same on every rank, got rank 0: model multiple, threads 2,"
    ):
        hf.Operator(dec, hf.Stencil.laplace(1), "hybrid-multiple", threads=threads)


# Arguments that differ between ranks, or that are bad on one rank only: every rank
# raises, naming each rank's value, before any message is sent (a rank that raised alone
# would leave the others waiting in a collective; ranks that disagree would exchange
# faces their neighbours do not expect).

DIFFERING_DECOMPOSITIONS = {
    "process grid": ({"grid": (1, 1, 1)}, {"grid": None}, r"process grid \(1, 1, 1\)"),
    "shape": ({"shape": (8, 8, 10)}, {}, r"domain shape \(8, 8, 10\)"),
    "periodic": ({"periodic": False}, {}, r"periodic \(False, False, False\)"),
    "dtype": ({"dtype": "complex128"}, {}, "dtype complex128"),
}


@pytest.mark.parametrize("case", DIFFERING_DECOMPOSITIONS)
def test_decomposition_differing_between_ranks(comm, case):
    if comm.size == 1:
        pytest.skip("needs two ranks to differ")  # the 2-, 3- and 4-rank runs cover it
    last, good = comm.size - 1, {"shape": (8, 8, 8), "grid": (comm.size, 1, 1)}
    bad, _, named = DIFFERING_DECOMPOSITIONS[case]
    if case == "process grid":
        bad = {"grid": (1, comm.size, 1)}
        named = rf"process grid \(1, {comm.size}, 1\)"
    arguments = {**good, **bad} if comm.rank == last else good
    grid = arguments.pop("grid")
    with pytest.raises(ValueError, match=rf"domain and process grid must be the same on every rank, got .*{named}"):
        hf.Decomposition(hf.Domain(**arguments), comm, grid=grid)


@pytest.mark.parametrize(
    ("bad", "error", "match"),
    [
        ({"domain": "8x8x8"}, TypeError, "domain must be a hybridfd.Domain, got str"),
        ({"grid": (1, 1)}, ValueError, r"process grid must have 3 entries \(Px, Py, Pz\), got \(1, 1\)"),
        ({"grid": (1.5, 1, 1)}, TypeError, r"process grid must be 3 integers \(Px, Py, Pz\), got \(1.5, 1, 1\)"),
        ({"grid": (2**40, 1, 1)}, ValueError, r"process grid \(1099511627776, 1, 1\) has an entry beyond a C int"),
        ({"mapping": "packed"}, ValueError, "layout or mapping must be the same on every rank, got .*mapping 'packed'"),
        (
            {"topology": "/nonexistent/topology.toml"},
            ValueError,
            "layout or mapping must be the same on every rank, got .*topology '/nonexistent/topology.toml'",
        ),
    ],
)
def test_decomposition_argument_bad_on_one_rank(comm, bad, error, match):
    last = comm.size - 1
    arguments = {"domain": hf.Domain((8, 8, 8)), **(bad if comm.rank == last else {})}
    if comm.size == 1 and ("mapping" in bad or "topology" in bad):
        pytest.skip("a mapping on every rank is no error")  # the 2-, 3- and 4-rank runs cover it
    with pytest.raises(error, match=match):
        hf.Decomposition(comm=comm, **arguments)


DIFFERING_OPERATORS = {
    "radius": ({"stencil": hf.Stencil.laplace(2)}, "stencil radius 2"),
    "coefficients": ({"stencil": hf.Stencil.laplace(1, spacing=0.5)}, r"coefficients \(-24, 4,"),
    "approach": ({"approach": "flat-optimized"}, "schedule double-buffered, transport p2p, batch 8"),
    "batch": ({"approach": "flat-optimized", "batch": 3}, "batch 3"),
    "auto": ({"approach": "auto", "tune_options": {"cache": False}}, r"approach auto \(threads at most the default\)"),
}


@pytest.mark.parametrize("case", DIFFERING_OPERATORS)
def test_operator_setting_differing_between_ranks(comm, case):
    if comm.size == 1:
        pytest.skip("needs two ranks to differ")  # the 2-, 3- and 4-rank runs cover it
    dec = hf.Decomposition(hf.Domain((8, 8, 8)), comm)
    bad, named = DIFFERING_OPERATORS[case]
    good = {"stencil": hf.Stencil.laplace(1), "approach": "flat-original"}
    arguments = {**good, **bad} if comm.rank == comm.size - 1 else good
    with pytest.raises(ValueError, match=rf"operator setting must be the same on every rank, got .*{named}"):
        hf.Operator(dec, **arguments)


@pytest.mark.parametrize(
    ("bad", "error", "match"),
    [
        ({"stencil": None}, TypeError, "stencil must be a hybridfd.Stencil, got NoneType"),
        ({"approach": 3}, TypeError, "approach must be a str, got 3"),
        ({"transport": ["p2p"]}, TypeError, r"transport must be a str, got \['p2p'\]"),
        ({"batch": 2**40}, ValueError, "batch 1099511627776 is beyond the largest supported value 2147483647"),
        ({"batch": 2.5}, TypeError, "batch must be an int, got 2.5"),
        ({"slope": True}, TypeError, "slope must be an int, got True"),
        ({"threads": -(2**33)}, ValueError, "threads -8589934592 is beyond"),
        ({"master_share": "half"}, TypeError, "master_share must be a number, got 'half'"),
        (
            {"approach": "auto", "tune_options": {"trails": 2}},
            TypeError,
            "unknown tune_options 'trails'; known: cache, calibration, trials, budget, trial_grids, job_grids",
        ),
        (
            {"approach": "hybrid-master-only", "threads": 10**9},
            ValueError,
            "threads 1000000000 is more than the .* threads this process may start",
        ),
    ],
)
def test_operator_option_bad_on_one_rank(comm, bad, error, match):
    dec = hf.Decomposition(hf.Domain((8, 8, 8)), comm)
    arguments = {"stencil": hf.Stencil.laplace(1), **(bad if comm.rank == comm.size - 1 else {})}
    with pytest.raises(error, match=match):
        hf.Operator(dec, **arguments)


@pytest.mark.parametrize("collective", ["scatter", "gather", "trace"])
def test_root_out_of_range_or_differing(setup, comm, collective):
    dec, op = setup

    def call(root):
        if collective == "scatter":
            return dec.scatter(np.zeros(dec.domain.shape), root=root)
        if collective == "gather":
            return dec.gather(dec.zeros(), root=root)
        return op.trace(root=root)

    if collective == "trace":
        op.start_trace()
    last = comm.size - 1
    for root in (comm.size, -1, "0"):
        with pytest.raises(
            ValueError,
            match=rf"rank {last}: root {re.escape(repr(root))} must be a rank of the communicator: an int 0..{last}",
        ):
            call(only_on(last, comm, root, 0))
    if comm.size > 1:  # with one rank there is one root
        with pytest.raises(ValueError, match=rf"root.* must be the same on every rank, got .*{last}"):
            call(only_on(last, comm, last, 0))


def test_domain_with_more_points_than_byte_offsets_hold(comm):
    # Each extent fits 64 bits, but the grid's bytes would not.
    with pytest.raises(ValueError, match=r"domain shape \(1099511627776, 1099511627776, 8\) has more than \d+ points"):
        hf.Decomposition(hf.Domain((2**40, 2**40, 8)), comm)


def test_trace_buffers_larger_than_memory(setup, comm):
    dec, op = setup
    events = only_on(comm.size - 1, comm, 2**60, 100)
    with pytest.raises(ValueError, match=f"events per thread {2**60} for 1 threads need more than this machine's"):
        op.start_trace(events)
