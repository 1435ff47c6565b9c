"""The demo: every registered approach on an embedded default problem, checked against
the numpy reference and timed; prints a table and writes a plot.

Run by `make demo` as ``python -m hybridfd.launch -n 2 -- python -m hybridfd.demo``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from mpi4py import MPI

import hybridfd as hf
from hybridfd.timing import time_apply

DEFAULT_SHAPE = (64, 64, 64)
DEFAULT_GRIDS = 8
REPEATS = 5
#: Approaches whose float64 apply is traced for the profile panel (GPAW journal Fig. 7.1).
PROFILED = ("flat-original", "flat-optimized", "hybrid-multiple")


def wait_sleeping(comm: MPI.Comm) -> None:
    """A barrier that sleeps while it waits, so that a rank with nothing to do leaves its
    core to the threads of the rank that works (a plain barrier polls)."""
    request = comm.Ibarrier()
    while not request.Test():
        time.sleep(0.001)


def traced_apply(op: hf.Operator, a: np.ndarray, out: np.ndarray) -> list[dict] | None:
    """One traced apply of ``op``: its timeline lanes (hybridfd.trace) on rank 0 of
    ``op``'s communicator, None elsewhere."""
    op.start_trace()
    op.decomposition.comm.Barrier()
    op.apply(a, out=out)
    op.stop_trace()
    trace = op.trace()
    return None if trace is None else trace.timeline()


def run(shape: tuple[int, int, int], grids: int, repeats: int) -> tuple[list[dict], dict[str, list[dict]]]:
    comm = MPI.COMM_WORLD
    rows = []
    profiles = {}
    stencil = hf.Stencil.laplace(2, 0.2)
    for dtype in ("float64", "complex128"):
        dom = hf.Domain(shape, periodic=True, dtype=dtype)
        dec = hf.Decomposition(dom, comm)
        batch = None
        if comm.rank == 0:
            rng = np.random.default_rng(2009)
            batch = rng.standard_normal((grids, *shape))
            if dtype == "complex128":
                batch = batch + 1j * rng.standard_normal(batch.shape)
        a = dec.scatter(batch)
        out = hf.empty_aligned(a.shape, a.dtype)
        expected = hf.reference.apply(stencil, batch, periodic=dom.periodic) if comm.rank == 0 else None
        # The same cores two ways: flat approaches on every rank (one thread each), hybrid
        # ones on rank 0 alone with a thread per rank of the job (the others wait).
        alone = hf.Decomposition(dom, MPI.COMM_SELF) if comm.rank == 0 else None
        for approach in hf.approach_names():
            hybrid = approach.startswith("hybrid-")
            if hybrid and comm.rank != 0:
                wait_sleeping(comm)
                continue
            if hybrid:
                op = hf.Operator(alone, stencil, approach=approach, threads=comm.size)
                a_here, out_here = hf.aligned_copy(batch), hf.empty_aligned(batch.shape, batch.dtype)
            else:
                op = hf.Operator(dec, stencil, approach=approach)
                a_here, out_here = a, out
            op.apply(a_here, out=out_here)
            result = out_here if hybrid else dec.gather(out_here)
            seconds = time_apply(op, a_here, out_here, repeats)
            if dtype == "float64" and approach in PROFILED:
                lanes = traced_apply(op, a_here, out_here)
                if lanes is not None:
                    profiles[approach] = lanes
            if hybrid:
                wait_sleeping(comm)
            if comm.rank == 0:
                error = float(np.abs(result - expected).max() / np.abs(expected).max())
                rows.append(
                    {
                        "approach": approach,
                        "dtype": dtype,
                        "ranks": op.decomposition.size,
                        "threads": op.config["threads"],
                        "process_grid": op.decomposition.grid,
                        "grids": grids,
                        "shape": shape,
                        "ms_per_grid": 1e3 * seconds / grids,
                        "mpoints_per_s": grids * np.prod(shape) / seconds / 1e6,
                        "max_relative_error": error,
                        "bit_identical_to_reference": bool(np.array_equal(result, expected)),
                        "config": op.config,
                    }
                )
    for row in rows:
        original = next(r for r in rows if r["approach"] == "flat-original" and r["dtype"] == row["dtype"])
        row["speedup_vs_flat_original"] = original["ms_per_grid"] / row["ms_per_grid"]
    return rows, profiles


def show(rows: list[dict], profiles: dict[str, list[dict]], plot_path: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title=f"hybridfd demo: 13-point Laplacian, {rows[0]['grids']} grids of "
        f"{'x'.join(map(str, rows[0]['shape']))}, {rows[0]['ranks']} cores used as ranks x threads"
    )
    columns = ("approach", "dtype", "ranks x threads", "ms/grid", "Mpoints/s", "vs flat-original", "max rel. error")
    for column in (*columns, "== reference"):
        table.add_column(column, justify="left" if column in ("approach", "dtype") else "right")
    for row in rows:
        table.add_row(
            row["approach"],
            row["dtype"],
            f"{row['ranks']} x {row['threads']}",
            f"{row['ms_per_grid']:.3f}",
            f"{row['mpoints_per_s']:.1f}",
            f"{row['speedup_vs_flat_original']:.2f}x",
            f"{row['max_relative_error']:.1e}",
            "yes" if row["bit_identical_to_reference"] else "no",
        )
    Console(width=150).print(table)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from hybridfd.trace import plot_timeline

    approaches = list(dict.fromkeys(row["approach"] for row in rows))
    dtypes = ("float64", "complex128")
    fig, (ax, profile_ax) = plt.subplots(1, 2, figsize=(14, 4.5), gridspec_kw={"width_ratios": [3, 2]})
    width = 0.8 / len(dtypes)
    for k, dtype in enumerate(dtypes):
        values = [
            next(r["ms_per_grid"] for r in rows if r["approach"] == a and r["dtype"] == dtype) for a in approaches
        ]
        ax.bar(np.arange(len(approaches)) + k * width, values, width, label=dtype)
    first = {a: next(r for r in rows if r["approach"] == a) for a in approaches}
    labels = [f"{a}\n{first[a]['ranks']} x {first[a]['threads']}" for a in approaches]
    ax.set_xticks(
        np.arange(len(approaches)) + width * (len(dtypes) - 1) / 2, labels, fontsize=7, rotation=20, ha="right"
    )
    ax.set_ylabel("ms per grid (median)")
    ax.set_title(
        f"{rows[0]['grids']} grids of {'x'.join(map(str, rows[0]['shape']))}: flat on {rows[0]['ranks']} ranks, "
        f"hybrid on 1 rank x {rows[0]['ranks']} threads"
    )
    ax.legend()
    # The profile: each traced approach's one float64 apply, its lanes stacked, on one time axis.
    lanes = [
        dict(lane, label=f"{approach} r{lane['rank']} t{lane['thread']}")
        for approach in PROFILED
        if approach in profiles
        for lane in profiles[approach]
    ]
    plot_timeline(profile_ax, lanes, "profile: one float64 apply each (hybridfd.trace)")
    profile_ax.tick_params(axis="y", labelsize=6)
    fig.tight_layout()
    plot_path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(plot_path, dpi=120)
    print(f"plot: {plot_path}")


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m hybridfd.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--shape", type=int, nargs=3, default=DEFAULT_SHAPE, metavar=("NX", "NY", "NZ"))
    parser.add_argument("--grids", type=int, default=DEFAULT_GRIDS)
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--output", type=Path, default=Path("results"))
    args = parser.parse_args()
    rows, profiles = run(tuple(args.shape), args.grids, args.repeats)
    if MPI.COMM_WORLD.rank != 0:
        return 0
    show(rows, profiles, args.output / "demo.png")
    (args.output / "demo.json").write_text(json.dumps(rows, indent=2, default=str))
    print(f"results: {args.output / 'demo.json'}")
    print(
        "scale up: more grids or larger ones with --grids G --shape NX NY NZ, more ranks with "
        "`python -m hybridfd.launch -n N -- python -m hybridfd.demo`; a whole trace: `hybridfd trace --help`"
    )
    wrong = [row for row in rows if row["max_relative_error"] > 1e-12]
    if wrong:
        print(f"ERROR: {len(wrong)} configurations disagree with the reference")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
