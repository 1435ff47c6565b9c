"""The test problem of ``hybridfd-bench`` (cpp/tools/test_field.hpp), mirrored exactly.

The driver's input is a formula of the global point (integer arithmetic, one division),
and its result is summarised by a checksum: per rank, the sum in C order (grid, x, y, z,
lane) of each float64 lane times a weight of its global position, added one after
another; then the ranks' sums added in rank order. numpy's ``cumsum`` adds one element
after another, so Python gets the same bits as C++ (``sum`` would add pairwise).

``python -m hybridfd.simulate.driver [options of hybridfd-bench]`` under mpiexec prints
the Python Operator's checksum of the same configuration (the test compares the two).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import numpy as np

FIELD_MODULUS = 8191


def _coordinates(
    grids: int, offset: Sequence[int], extent: Sequence[int], lanes: int, first_grid: int = 0
) -> tuple[np.ndarray, ...]:
    """Global (g, x, y, z, lane) of a box's lanes, broadcastable to (G, nx, ny, nz, lanes)."""
    g = (first_grid + np.arange(grids, dtype=np.int64)).reshape(-1, 1, 1, 1, 1)
    x = (offset[0] + np.arange(extent[0], dtype=np.int64)).reshape(1, -1, 1, 1, 1)
    y = (offset[1] + np.arange(extent[1], dtype=np.int64)).reshape(1, 1, -1, 1, 1)
    z = (offset[2] + np.arange(extent[2], dtype=np.int64)).reshape(1, 1, 1, -1, 1)
    lane = np.arange(lanes, dtype=np.int64).reshape(1, 1, 1, 1, -1)
    return g, x, y, z, lane


def _lanes(dtype: str) -> int:
    return 2 if np.dtype(dtype) == np.complex128 else 1


def field(grids: int, offset: Sequence[int], extent: Sequence[int], dtype: str = "float64") -> np.ndarray:
    """The driver's input on a box: (G, nx, ny, nz) of ``dtype`` (field_value in C++)."""
    g, x, y, z, lane = _coordinates(grids, offset, extent, _lanes(dtype))
    h = (
        3 * x * x + 5 * y * y + 7 * z * z + x * y + 2 * y * z + 11 * g * x + 13 * g + 17 * lane + 19 * z
    ) % FIELD_MODULUS
    lanes = h.astype(np.float64) / float(FIELD_MODULUS) - 0.5
    return np.ascontiguousarray(lanes).view(dtype)[..., 0]


def partial_checksum(values: np.ndarray, offset: Sequence[int], first_grid: int = 0) -> float:
    """One rank's part of the checksum: ``values`` is its (G, nx, ny, nz) box at ``offset``
    of grids ``first_grid`` on (a grid group of hybridfd-bench --grid-groups)."""
    if values.size == 0:
        return 0.0
    lanes = np.ascontiguousarray(values).view(np.float64).reshape(*values.shape, -1)
    g, x, y, z, lane = _coordinates(values.shape[0], offset, values.shape[1:], lanes.shape[-1], first_grid)
    weights = (1 + (x + 2 * y + 3 * z + 5 * g + 7 * lane) % 8).astype(np.float64)
    return float(np.cumsum((lanes * weights).ravel())[-1])


def combine(partials: Sequence[float]) -> float:
    """The ranks' partial checksums added in rank order, as the driver does."""
    total = 0.0
    for partial in partials:
        total += partial
    return total


def boxes(shape: Sequence[int], grid: Sequence[int]) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """(offset, extent) of every rank of a Cartesian communicator, in its rank order
    (row-major coordinates, as MPI_Cart_create without reordering)."""
    from hybridfd.decomposition import split_axis

    result = []
    for coords in np.ndindex(*grid):
        parts = [split_axis(int(shape[a]), int(grid[a]), int(coords[a])) for a in range(3)]
        result.append((tuple(p[0] for p in parts), tuple(p[1] for p in parts)))
    return result


def reference_checksum(
    grids: int,
    shape: Sequence[int],
    grid: Sequence[int],
    dtype: str = "float64",
    periodic: Sequence[bool] = (True, True, True),
    radius: int = 2,
    spacing: float = 0.2,
) -> float:
    """The checksum of the numpy reference (hybridfd.reference) on the whole field."""
    import hybridfd as hf

    stencil = hf.Stencil.laplace(radius, spacing)
    expected = hf.reference.apply(stencil, field(grids, (0, 0, 0), shape, dtype), periodic=tuple(periodic))
    partials = []
    for offset, extent in boxes(shape, grid):
        region = tuple(slice(o, o + n) for o, n in zip(offset, extent, strict=True))
        partials.append(partial_checksum(expected[(slice(None), *region)], offset))
    return combine(partials)


def _arguments(argv: Sequence[str]) -> argparse.Namespace:
    from hybridfd._argtypes import periodic_axes

    parser = argparse.ArgumentParser(prog="python -m hybridfd.simulate.driver", description=__doc__)
    parser.add_argument("--grids", type=int, default=8)
    parser.add_argument("--shape", type=int, nargs="+", default=[64])
    parser.add_argument("--dtype", default="float64")
    parser.add_argument("--periodic", type=periodic_axes, default=(True, True, True))
    parser.add_argument("--radius", type=int, default=2)
    parser.add_argument("--spacing", type=float, default=0.2)
    parser.add_argument("--grid", type=int, nargs=3)
    for name in ("approach", "model", "schedule", "transport", "slope-kind"):
        parser.add_argument(f"--{name}")
    for name in ("threads", "batch", "slope", "progress"):
        parser.add_argument(f"--{name}", type=int)
    parser.add_argument("--master-share", type=float)
    args = parser.parse_args(argv)
    args.shape = tuple(args.shape * 3 if len(args.shape) == 1 else args.shape)
    return args


def operator_checksum(argv: Sequence[str]) -> float:
    """Collective: the Python Operator's checksum of the driver's problem for the same
    options (``hybridfd-bench``'s problem and operator options)."""
    from mpi4py import MPI

    from hybridfd.build import build

    args = _arguments(argv)
    args.approach = args.approach or "flat-original"  # the driver's default
    _, decomposition, _, op = build(args, tuple(args.shape), MPI.COMM_WORLD)
    box = decomposition.box()
    a = field(args.grids, box.offset, box.extent, args.dtype)
    out = op.apply(a, out=np.empty_like(a))
    partials = decomposition.comm.gather(partial_checksum(out, box.offset), root=0)
    return decomposition.comm.bcast(combine(partials) if decomposition.comm.rank == 0 else None, root=0)


if __name__ == "__main__":
    value = operator_checksum(sys.argv[1:])
    from mpi4py import MPI

    if MPI.COMM_WORLD.rank == 0:
        print(f"checksum {value!r}")
