"""The stencil runs that ``speedup``, ``scalability`` and ``gustafson`` share: every
variant (an approach, possibly with a batch override) of one job timed on one rank count,
interleaved, each output checked bit-identical to flat-original's.

The same cores are used two ways, as in the papers: a flat approach runs one rank per
core; a threaded one (any model but ``flat``: hybrid-multiple, hybrid-master-only, ...)
runs one rank per ``threads`` cores, each rank with ``threads`` threads (Blue Gene/P: one
rank per node of 4 cores).
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: The papers' baseline: GPAW's original operator (one grid at a time, x, y, z in turn).
BASELINE = "flat-original"


def variant(approach: str, batch: int | None = None, label: str | None = None) -> dict[str, Any]:
    """One configuration to time: ``approach`` with its preset, or with ``batch`` (and no
    slope when ``batch`` is 1: a slope needs a batch to shrink)."""
    options: dict[str, Any] = {"approach": approach}
    if batch is not None:
        options["batch"] = batch
        if batch == 1:
            options["slope"] = 0
    return {"label": label or (approach if batch is None else f"{approach} b={batch}"), "options": options}


def model_of(approach: str) -> str:
    """The threading model an approach's preset uses (asked of the Operator itself, on a
    one-rank problem, so a new approach needs no table here)."""
    from mpi4py import MPI

    import hybridfd as hf

    alone = hf.Decomposition(hf.Domain((4, 4, 4)), MPI.COMM_SELF)
    return hf.Operator(alone, hf.Stencil.laplace(1, 1.0), approach=approach).config["model"]


def placements(variants: list[dict[str, Any]], cores: int, threads: int) -> list[tuple[int, list[dict[str, Any]]]]:
    """The MPI runs that use ``cores`` cores: (ranks, variants). Flat variants run on one
    rank per core; threaded ones on cores/t ranks of t = min(cores, threads) threads."""
    from hybridfd.experiments import ExperimentInputError

    flat = [v for v in variants if model_of(v["options"]["approach"]) == "flat"]
    threaded = [v for v in variants if v not in flat]
    runs = [(cores, flat)] if flat else []
    if threaded:
        per_rank = min(cores, threads)
        if cores % per_rank:
            raise ExperimentInputError(f"{cores} cores do not split into ranks of --threads {threads} threads")
        runs.append((cores // per_rank, [dict(v, options=dict(v["options"], threads=per_rank)) for v in threaded]))
    return runs


def add_threads_argument(parser: Any) -> None:  # noqa: ANN401 - argparse
    from hybridfd._argtypes import positive_int
    from hybridfd.results import cores

    parser.add_argument(
        "--threads",
        type=positive_int,
        default=cores(),
        metavar="T",
        help=f"threads per rank of the threaded approaches (default {cores()}: this machine's cores, "
        "one rank per node)",
    )


def run_all(name: str, cores: int, threads: int, job: dict[str, Any], timeout: float) -> list[dict[str, Any]]:
    """Every variant of ``job`` on ``cores`` cores (one MPI run per placement); one dict
    per variant with its ranks, threads and process grid. With ``job["simulate"]`` the
    runs are simulated on that platform instead (hybridfd.simulate.experiments)."""
    from hybridfd.experiments import sub_run

    if job.get("simulate"):
        from hybridfd.simulate.experiments import run_all as simulated

        return simulated(cores, job, timeout, model_of)

    measured = []
    for ranks, variants in placements(job["variants"], cores, threads):
        numbers = sub_run(name, ranks, dict(job, variants=variants), timeout)
        for v in numbers["variants"]:
            threads_used = v["config"].get("threads", 1)
            measured.append(dict(v, ranks=ranks, threads=threads_used, process_grid=numbers["process_grid"]))
    return measured


def add_problem_arguments(parser: Any, shape: int, dtype: str = "float64") -> None:  # noqa: ANN401 - argparse
    from hybridfd._argtypes import positive_int
    from hybridfd.simulate.experiments import add_arguments as add_simulate_arguments

    parser.add_argument(
        "--shape", type=positive_int, default=shape, metavar="N", help=f"grids of N^3 (default {shape})"
    )
    parser.add_argument("--dtype", choices=("float64", "complex128"), default=dtype)
    parser.add_argument("--repeats", type=positive_int, default=5, help="timed rounds; medians reported (default 5)")
    add_simulate_arguments(parser)


def core_counts(args: Any, measured: list[int], simulated: list[int]) -> list[int]:  # noqa: ANN401 - argparse
    """``--cores`` as given, else the experiment's default for a measured or simulated run."""
    from hybridfd.experiments import check_ranks

    return check_ranks("--cores", args.cores or (simulated if getattr(args, "simulate", None) else measured))


def worker(comm: Any, params: dict[str, Any]) -> dict[str, Any] | None:  # noqa: ANN401 - an mpi4py communicator
    """Time each of ``params["variants"]`` on ``params["grids"]`` grids of ``params["shape"]``^3."""
    from mpi4py import MPI

    import hybridfd as hf
    from hybridfd.display import DelayedProgress
    from hybridfd.timing import apply_samples

    n = params["shape"]
    domain = hf.Domain((n, n, n), periodic=True, dtype=params["dtype"])
    decomposition = hf.Decomposition(domain, comm)
    stencil = hf.Stencil.laplace(params.get("radius", 2), 0.2)
    rng = np.random.default_rng(comm.rank)
    a = rng.standard_normal(decomposition.local_shape(params["grids"]))
    if params["dtype"] == "complex128":
        a = a + 1j * rng.standard_normal(a.shape)
    a = hf.aligned_copy(a)
    out = hf.empty_aligned(a.shape, a.dtype)
    expected = hf.Operator(decomposition, stencil, approach=BASELINE).apply(a)
    variants = params["variants"]
    operators = []
    identical = []
    for entry in variants:
        op = hf.Operator(decomposition, stencil, **entry["options"])
        op.apply(a, out=out)  # warm-up; persistent requests and buffers set up
        same = comm.allreduce(bool(np.array_equal(out, expected)), op=MPI.LAND)
        operators.append(op)
        identical.append(same)
    samples: list[list[float]] = [[] for _ in variants]
    total = params["repeats"] * len(variants)
    with DelayedProgress(f"{comm.size} ranks", total, enabled=comm.rank == 0) as progress:
        for _ in range(params["repeats"]):  # interleaved: each round times every variant once
            for k, op in enumerate(operators):
                samples[k] += apply_samples(op, a, out, 1)
                progress.advance()
    if comm.rank != 0:
        return None
    return {
        "process_grid": list(decomposition.grid),
        "variants": [
            {
                "label": entry["label"],
                "median_seconds": float(np.median(times)),
                "samples_seconds": times,
                "bit_identical_to_flat_original": same,
                "config": op.config,
            }
            for entry, times, same, op in zip(variants, samples, identical, operators, strict=True)
        ],
    }
