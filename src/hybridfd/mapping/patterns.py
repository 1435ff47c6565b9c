"""Communication patterns of Cartesian process grids: who sends how many bytes to whom.

A process is named by its position in the process grid, numbered in row-major (C)
order, which is the rank ``MPI_Cart_create`` gives it with ``reorder = 0``. A pattern
is three equal-length arrays: ``src``, ``dst`` (positions) and ``nbytes`` per message.

- :func:`stencil_pattern`: the halo exchange of one apply (GPAW journal Sect. 4.1), the
  six faces of every box as the halo plan sends them: along axis a, the face is the
  box's cross-section, ``radius`` planes deep, so it carries
  ``extent_b * extent_c * radius * itemsize`` bytes per grid. A periodic axis of one
  box exchanges with itself by a copy (no message); a non-periodic edge sends nothing.
- :func:`cannon_pattern`: Cannon's algorithm on a periodic 2D grid as in CP2K's DBCSR
  (CP2K seed Fig. 1): every process sends one block right and one block up per step
  and receives from left and below, so it talks to four neighbours.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class CommPattern:
    """Messages between the positions of a process grid (one exchange step)."""

    grid: tuple[int, ...]
    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray
    name: str

    @property
    def processes(self) -> int:
        return int(np.prod(self.grid))

    @property
    def total_bytes(self) -> int:
        return int(self.nbytes.sum())

    def scaled(self, factor: int) -> CommPattern:
        """The same messages, each ``factor`` times larger (e.g. radius or number of grids)."""
        return CommPattern(self.grid, self.src, self.dst, self.nbytes * int(factor), self.name)

    def undirected(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each communicating pair (i < j) once with the bytes of both directions summed."""
        lo, hi = np.minimum(self.src, self.dst), np.maximum(self.src, self.dst)
        pairs, inverse = np.unique(np.stack([lo, hi], axis=1), axis=0, return_inverse=True)
        weights = np.bincount(inverse.ravel(), weights=self.nbytes, minlength=len(pairs)).astype(np.int64)
        return pairs[:, 0], pairs[:, 1], weights


def _grid(grid: Sequence[int], ndim: int | None = None) -> tuple[int, ...]:
    grid = tuple(int(p) for p in grid)
    if (ndim is not None and len(grid) != ndim) or not 1 <= len(grid) <= 3 or any(p < 1 for p in grid):
        need = f"{ndim}" if ndim else "1 to 3"
        raise ValueError(f"process grid must have {need} positive entries, got {grid!r}")
    return grid


def _neighbour_messages(
    grid: tuple[int, ...], periodic: Sequence[bool], sizes: list[np.ndarray], directions: Sequence[tuple[int, int]]
) -> CommPattern:
    coords = np.indices(grid).reshape(len(grid), -1)
    positions = np.arange(coords.shape[1])
    src, dst, nbytes = [], [], []
    for (axis, step), size in zip(directions, sizes, strict=True):
        target = coords.copy()
        target[axis] += step
        if periodic[axis]:
            target[axis] %= grid[axis]
        keep = (target[axis] >= 0) & (target[axis] < grid[axis])
        neighbour = np.ravel_multi_index(tuple(np.where(keep, target, 0)), grid)
        keep &= neighbour != positions  # a one-box periodic axis copies, it sends nothing
        src.append(positions[keep])
        dst.append(neighbour[keep])
        nbytes.append(size[keep])
    return CommPattern(
        grid,
        np.concatenate(src).astype(np.int64),
        np.concatenate(dst).astype(np.int64),
        np.concatenate(nbytes).astype(np.int64),
        "",
    )


def stencil_pattern(
    shape: Sequence[int],
    grid: Sequence[int],
    periodic: Sequence[bool] = (True, True, True),
    radius: int = 1,
    itemsize: int = 8,
    grids: int = 1,
) -> CommPattern:
    """The six-neighbour halo exchange of ``grids`` grids of ``shape`` cut by ``grid``.

    Box extents follow the decomposition's split (the first ``N mod P`` boxes of an axis
    get one extra point), so uneven splits give each face its own size.
    """
    grid = _grid(grid, 3)
    shape = tuple(int(n) for n in shape)
    if len(shape) != 3 or any(n < p for n, p in zip(shape, grid, strict=True)):
        raise ValueError(f"domain shape {shape!r} cannot be cut by process grid {grid!r}")
    coords = np.indices(grid).reshape(3, -1)
    extents = [shape[a] // grid[a] + (coords[a] < shape[a] % grid[a]) for a in range(3)]
    per_point = int(radius) * int(itemsize) * int(grids)
    face = [extents[(a + 1) % 3] * extents[(a + 2) % 3] * per_point for a in range(3)]
    directions = [(a, step) for a in range(3) for step in (-1, 1)]
    pattern = _neighbour_messages(grid, periodic, [face[a] for a, _ in directions], directions)
    return CommPattern(pattern.grid, pattern.src, pattern.dst, pattern.nbytes, "stencil")


def cannon_pattern(grid: Sequence[int], message_bytes: int = 1) -> CommPattern:
    """Cannon's shifts on a periodic 2D ``grid`` (rows, columns): each process sends
    ``message_bytes`` to its right neighbour (column + 1) and to the one above (row + 1)."""
    grid = _grid(grid, 2)
    size = np.full(int(np.prod(grid)), int(message_bytes), dtype=np.int64)
    pattern = _neighbour_messages(grid, (True, True), [size, size], [(1, 1), (0, 1)])
    return CommPattern(pattern.grid, pattern.src, pattern.dst, pattern.nbytes, "cannon")


def neighbour_pattern(grid: Sequence[int]) -> CommPattern:
    """One byte to every face neighbour of a periodic grid: the shape of a pattern without its sizes."""
    grid = _grid(grid)
    size = np.ones(int(np.prod(grid)), dtype=np.int64)
    directions = [(a, step) for a in range(len(grid)) for step in (-1, 1)]
    pattern = _neighbour_messages(grid, (True,) * len(grid), [size] * len(directions), directions)
    return CommPattern(pattern.grid, pattern.src, pattern.dst, pattern.nbytes, "neighbours")
