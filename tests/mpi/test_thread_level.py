"""The Operator asks for the MPI thread level its model needs and refuses, on every rank
and naming both levels, to run under a lower one. MPI starts here at MPI_THREAD_FUNNELED
(mpi4py reads MPI4PY_RC_THREAD_LEVEL, like setting mpi4py.rc.thread_level before
importing mpi4py.MPI)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from mpi4py import MPI

import hybridfd as hf

RANKS = (1, 2)
ENVIRONMENT = {"MPI4PY_RC_THREAD_LEVEL": "funneled"}


@pytest.fixture(scope="module")
def problem():
    comm = MPI.COMM_WORLD
    assert MPI.Query_thread() == MPI.THREAD_FUNNELED
    dom = hf.Domain((14, 9, 11), periodic=(True, True, False), dtype="complex128")
    dec = hf.Decomposition(dom, comm)
    stencil = hf.Stencil.laplace(2)
    full = np.random.default_rng(3).standard_normal((5, *dom.shape)) * (1 + 0.5j)
    local = dec.scatter(full if comm.rank == 0 else None)
    return dec, stencil, local, hf.Operator(dec, stencil).apply(local)


@pytest.mark.parametrize("model", ["multiple", "masteronly-threaded-comm"])
def test_models_needing_multiple_are_refused(problem, model):
    dec, stencil, _, _ = problem
    with pytest.raises(
        ValueError,
        match=rf"model '{model}' with 2 threads needs MPI_THREAD_MULTIPLE, but MPI was initialised with "
        "MPI_THREAD_FUNNELED",
    ):
        hf.Operator(dec, stencil, "flat-optimized", model=model, threads=2)


@pytest.mark.parametrize("model", ["masteronly", "funneled-overlap"])
@pytest.mark.parametrize("threads", [2, 3])
def test_funneled_models_run(problem, model, threads):
    dec, stencil, local, original = problem
    op = hf.Operator(dec, stencil, "flat-optimized", model=model, threads=threads, batch=2)
    assert (op.config["thread_level"], op.config["mpi_thread_level"]) == ("MPI_THREAD_FUNNELED",) * 2
    np.testing.assert_array_equal(op.apply(local), original)


def test_one_thread_needs_no_threading_support(problem):
    dec, stencil, local, original = problem
    op = hf.Operator(dec, stencil, "hybrid-multiple", threads=1)
    assert op.config["thread_level"] == "MPI_THREAD_SINGLE"
    np.testing.assert_array_equal(op.apply(local), original)


def test_funneled_model_applied_from_another_thread_is_refused(problem):
    dec, stencil, local, original = problem
    op = hf.Operator(dec, stencil, "hybrid-master-only", threads=2)
    errors: list[BaseException] = []

    def apply() -> None:
        try:
            op.apply(local)
        except ValueError as error:
            errors.append(error)

    worker = threading.Thread(target=apply)
    worker.start()
    worker.join()
    assert len(errors) == 1
    assert "model 'masteronly' under MPI_THREAD_FUNNELED must be applied by the thread that initialised MPI" in str(
        errors[0]
    )
    np.testing.assert_array_equal(op.apply(local), original)  # from the main thread: fine
