"""The demo: every registered approach on an embedded default problem, checked against
the numpy reference and timed; prints a table and writes a plot.

Run by `make demo` as ``python -m hybridfd.launch -n 2 -- python -m hybridfd.demo``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from mpi4py import MPI

import hybridfd as hf
from hybridfd.timing import time_apply

DEFAULT_SHAPE = (64, 64, 64)
DEFAULT_GRIDS = 8
REPEATS = 5


def run(shape: tuple[int, int, int], grids: int, repeats: int) -> list[dict]:
    comm = MPI.COMM_WORLD
    rows = []
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
        out = np.empty_like(a)
        expected = hf.reference.apply(stencil, batch, periodic=dom.periodic) if comm.rank == 0 else None
        for approach in hf.approach_names():
            op = hf.Operator(dec, stencil, approach=approach)
            op.apply(a, out=out)
            result = dec.gather(out)
            seconds = time_apply(op, a, out, repeats)
            if comm.rank == 0:
                error = float(np.abs(result - expected).max() / np.abs(expected).max())
                rows.append(
                    {
                        "approach": approach,
                        "dtype": dtype,
                        "ranks": comm.size,
                        "process_grid": dec.grid,
                        "grids": grids,
                        "shape": shape,
                        "ms_per_grid": 1e3 * seconds / grids,
                        "mpoints_per_s": grids * np.prod(shape) / seconds / 1e6,
                        "max_relative_error": error,
                        "bit_identical_to_reference": bool(np.array_equal(result, expected)),
                        "config": op.config,
                    }
                )
    return rows


def show(rows: list[dict], plot_path: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title=f"hybridfd demo: 13-point Laplacian, {rows[0]['grids']} grids of "
        f"{'x'.join(map(str, rows[0]['shape']))}, {rows[0]['ranks']} ranks, grid {rows[0]['process_grid']}"
    )
    for column in ("approach", "dtype", "ms/grid", "Mpoints/s", "max rel. error", "== reference"):
        table.add_column(column, justify="left" if column in ("approach", "dtype") else "right")
    for row in rows:
        table.add_row(
            row["approach"],
            row["dtype"],
            f"{row['ms_per_grid']:.3f}",
            f"{row['mpoints_per_s']:.1f}",
            f"{row['max_relative_error']:.1e}",
            "yes" if row["bit_identical_to_reference"] else "no",
        )
    Console(width=120).print(table)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    approaches = sorted({row["approach"] for row in rows})
    dtypes = ("float64", "complex128")
    fig, ax = plt.subplots(figsize=(6, 3.5))
    width = 0.8 / len(dtypes)
    for k, dtype in enumerate(dtypes):
        values = [
            next(r["ms_per_grid"] for r in rows if r["approach"] == a and r["dtype"] == dtype) for a in approaches
        ]
        ax.bar(np.arange(len(approaches)) + k * width, values, width, label=dtype)
    ax.set_xticks(np.arange(len(approaches)) + width * (len(dtypes) - 1) / 2, approaches)
    ax.set_ylabel("ms per grid (median)")
    ax.set_title(f"{rows[0]['ranks']} ranks, {rows[0]['grids']} grids of {'x'.join(map(str, rows[0]['shape']))}")
    ax.legend()
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
    rows = run(tuple(args.shape), args.grids, args.repeats)
    if MPI.COMM_WORLD.rank != 0:
        return 0
    show(rows, args.output / "demo.png")
    (args.output / "demo.json").write_text(json.dumps(rows, indent=2, default=str))
    print(f"results: {args.output / 'demo.json'}")
    wrong = [row for row in rows if row["max_relative_error"] > 1e-12]
    if wrong:
        print(f"ERROR: {len(wrong)} configurations disagree with the reference")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
