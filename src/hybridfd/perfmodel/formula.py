"""The WaitTime formula of the Blue Gene/P paper (Fig. 5.2) and the batch sequence it models.

The GPAW journal paper, Sect. 5.1.2: with double
buffering, the exchange of batch k+1 is in flight while batch k is computed; the time a
rank spends waiting for halos that computation did not hide is WaitTime. hybridfd's
``double-buffered`` schedule is exactly that loop (post k+1, wait k, compute k).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise

import numpy as np


def _check(name: str, value: float, *, low: float, strict: bool = False, allow_inf: bool = False) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number, got {value!r}") from None
    if math.isnan(number) or (math.isinf(number) and not allow_inf):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if number < low or (strict and number == low):
        relation = "greater than" if strict else "at least"
        raise ValueError(f"{name} must be {relation} {low:g}, got {value!r}")
    return number


def _count(name: str, value: int, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int (it counts grids or steps), got {value!r}")
    if value < low:
        raise ValueError(f"{name} must be at least {low}, got {value}")
    return value


def wait_time(l: float, B: float, C: float, t: int, b: int, n: int) -> float:  # noqa: E741 (the paper's l)
    r"""WaitTime(l, B, C, t, b, n) exactly as Fig. 5.2 of the GPAW journal prints it:

    .. math::

        \mathrm{WaitTime} = l + \frac{b}{2^n B}
          + \sum_{i=1}^{n} \max\left(0,\ l + \frac{b}{2^{i-1} B} - \frac{C b}{2^i}\right)
          + \max\left(0,\ l + \frac{b}{B} - C b\right)\left(\frac{t}{b} + 1 - 2^{n+1}\right)

    Units (the paper leaves them implicit; b and t count grids, so B and C are per grid):

    - ``l``: latency of one halo exchange, in seconds (all faces of a batch are posted
      together, so one exchange pays it once);
    - ``B``: bandwidth in grids per second: the link's bytes per second divided by one
      grid's halo bytes (:func:`hybridfd.perfmodel.halo_bytes_per_grid`: face points x
      radius x itemsize, summed over the box's exchanging faces). ``math.inf`` is allowed
      (the limit B -> infinity);
    - ``C``: seconds to apply the stencil to one grid of the rank's box (seconds per point
      x the box's points);
    - ``t``: grids in the job (the paper's "total stencil size"); ``b``: batch size, grids
      per message; ``n``: number of initial batch-size increases (the slope).

    Derivation of the three lines, for the sloped sequence b/2^n, b/2^(n-1), ..., b/2, b,
    b, ... that the paper describes (hybridfd's ``geometric`` slope):

    1. ``l + b/(2^n B)``: the first batch, b/2^n grids, is exchanged before anything can
       be computed, so its whole latency and transfer time are waited for.
    2. Step i = n, ..., 1 of the slope: the batch of b/2^(i-1) grids is in flight while
       the previous one, b/2^i grids, is computed for C b/2^i seconds; the wait is what
       the computation does not cover, ``l + b/(2^(i-1) B) - C b/2^i``, or 0 when it
       covers all of it.
    3. The steady state: a batch of b grids in flight while b grids are computed, each
       step waiting ``max(0, l + b/B - C b)``, times the printed step count
       ``t/b + 1 - 2^(n+1)``. At n = 0 that is t/b - 1, exactly the number of batches
       after the first. For n >= 1 the printed count subtracts 2^(n+1) - 2 more batches
       for the slope, although the slope's b(1 - 2^-n) grids fill less than one batch
       (the exact count is t/b - 2 + 2^-n); the factor can then even be negative (b = t,
       n >= 1). This function keeps the paper's formula as printed;
       :func:`schedule_wait_time` counts the batches the schedule really runs.

    Left out, as the paper says: the CPU cost of double buffering and sloping (packing,
    posting) and memory effects in the stencil; :func:`hybridfd.perfmodel.predict` adds
    them.
    """
    l = _check("latency l", l, low=0.0)  # noqa: E741
    B = _check("bandwidth B", B, low=0.0, strict=True, allow_inf=True)
    C = _check("compute time per grid C", C, low=0.0)
    t = _count("total grids t", t, 1)
    b = _count("batch size b", b, 1)
    n = _count("slope n", n, 0)
    if b > t:
        raise ValueError(f"batch size b={b} is larger than the total grids t={t}")
    first = l + b / (2**n * B)
    slope = sum(max(0.0, l + b / (2 ** (i - 1) * B) - C * b / 2**i) for i in range(1, n + 1))
    steady = max(0.0, l + b / B - C * b) * (t / b + 1 - 2 ** (n + 1))
    return first + slope + steady


def batch_sizes(t: int, b: int, n: int, kind: str = "geometric") -> list[int]:
    """Grids per batch, in order, as hybridfd's schedules cut ``t`` grids (cpp/src/batches.cpp).

    ``geometric``: b >> n, b >> (n-1), ..., b >> 1, then b; ``linear`` (GPAW's chunk
    increment): b(i+1)/(n+1) for i < n, then b. The last batch holds the grids left.
    """
    t = _count("total grids t", t, 0)
    b = _count("batch size b", b, 1)
    n = _count("slope n", n, 0)
    if kind not in ("geometric", "linear"):
        raise ValueError(f"unknown slope kind {kind!r}; known: geometric, linear")
    largest = b - 1 if kind == "linear" else b.bit_length() - 1
    if n > largest:
        raise ValueError(f"slope {n} ({kind}) with batch {b} makes the first batch smaller than one grid")

    # One row of batch_table, the cut the tuner's pools make for many candidates at once.
    return [int(size) for size in batch_table(t, b, n, kind)[0] if size]


def schedule_wait_time(l: float, B: float, C: float, sizes: Sequence[int]) -> float:  # noqa: E741
    """Fig. 5.2's reasoning applied to the batches a schedule really runs (``sizes``, in grids).

    The first batch is waited for in full (line 1); batch k >= 1 is in flight while batch
    k-1 is computed, so it costs ``max(0, l + s_k/B - C s_(k-1))`` (lines 2 and 3). Same
    units as :func:`wait_time`; equal to it when n = 0 and b divides t.
    """
    l = _check("latency l", l, low=0.0)  # noqa: E741
    B = _check("bandwidth B", B, low=0.0, strict=True, allow_inf=True)
    C = _check("compute time per grid C", C, low=0.0)
    if len(sizes) == 0:
        return 0.0
    if not all(type(size) is int and size >= 1 for size in sizes):  # one pass; the message names the first bad one
        for index, size in enumerate(sizes):
            _count(f"batch {index} size", size, 1)
    total = l + sizes[0] / B
    for previous, current in pairwise(sizes):
        total += max(0.0, l + current / B - C * previous)
    return total


def _batch_columns(t: object, b: object, n: object, kind: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t, b, n) checked and broadcast to flat int64 arrays of one length."""
    if kind not in ("geometric", "linear"):
        raise ValueError(f"unknown slope kind {kind!r}; known: geometric, linear")
    t, b, n = (np.asarray(v) for v in (t, b, n))
    for name, value in (("total grids t", t), ("batch size b", b), ("slope n", n)):
        if value.dtype.kind not in "iu":
            raise TypeError(f"{name} must be ints (they count grids or steps), got {value.dtype}")
    t, b, n = np.broadcast_arrays(t.astype(np.int64), b.astype(np.int64), n.astype(np.int64))
    t, b, n = t.reshape(-1), b.reshape(-1), n.reshape(-1)
    if (t < 0).any() or (b < 1).any() or (n < 0).any():
        raise ValueError("t must be at least 0, b at least 1 and n at least 0 in every row")
    smallest = b >> n if kind == "geometric" else b // (n + 1)  # the ramp's first batch
    if (smallest < 1).any():
        bad = int(np.argmax(smallest < 1))
        raise ValueError(f"slope {n[bad]} ({kind}) with batch {b[bad]} makes the first batch smaller than one grid")
    return t, b, n


def _cut(t: np.ndarray, raw: np.ndarray) -> np.ndarray:
    """Batches meant to hold ``raw`` grids (per row, in order) cut to the ``t`` grids there
    are: each holds what is left after the batches before it, at most its raw size."""
    before = np.cumsum(raw, axis=1) - raw
    return np.minimum(raw, np.maximum(t[:, None] - before, 0))


def _ramp(b: np.ndarray, n: np.ndarray, j: np.ndarray, kind: str) -> np.ndarray:
    """The raw size of ramp batch ``j`` (< n) of batch b and slope n."""
    if kind == "geometric":
        return b[:, None] >> np.maximum(n[:, None] - j, 0)
    return b[:, None] * (j + 1) // (n[:, None] + 1)


def batch_table(t: object, b: object, n: object, kind: str = "geometric") -> np.ndarray:
    """:func:`batch_sizes` for many (t, b, n) at once: row k holds the grids per batch of
    ``t[k]`` grids cut with batch ``b[k]`` and slope ``n[k]`` (arrays of ints, or one int
    for all), in order, padded with zeros (a zero is a batch not run).

    Batch j of the sequence is meant to hold ``raw_j`` grids (the slope's ramp, then b);
    it holds what is left of t after the batches before it, at most ``raw_j``: that cuts
    the slope short when t is small and leaves the rest in the last batch, as
    :func:`batch_sizes` does. A column per batch: for many grids in small batches, see
    :func:`batch_runs`.
    """
    t, b, n = _batch_columns(t, b, n, kind)
    # Each batch holds at least one grid, so n + ceil(t/b) columns hold every sequence.
    columns = int((n + -(-t // b)).max(initial=0))
    j = np.arange(columns)[None, :]
    raw = np.where(j < n[:, None], _ramp(b, n, j, kind), b[:, None])
    return _cut(t, raw)


def batch_runs(t: object, b: object, n: object, kind: str = "geometric") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`batch_table` run-length coded, in max(n) + 3 columns whatever t: per row,
    ``sizes``, ``counts`` (how many batches of that size run there, one after another;
    0: none) and ``previous``, the size of the batch run just before each column's
    first batch (0 for the first). The columns: the ramp (right-aligned, so that the
    full batches follow its last), one full batch, the other full batches, and the
    grids left over. Batches after the first full one all follow a batch of their own
    size, so Fig. 5.2's waits are the same for each of them: the tuner ranks a pool of
    ``t`` grids at a cost that does not grow with t.
    """
    t, b, n = _batch_columns(t, b, n, kind)
    width = int(n.max(initial=0))
    # Column i of the ramp block holds ramp batch j = i - (width - n) where j >= 0.
    j = np.arange(width)[None, :] - (width - n[:, None])
    ramp = _cut(t, np.where(j >= 0, _ramp(b, n, np.maximum(j, 0), kind), 0))
    left = t - ramp.sum(axis=1)
    full, rest = left // b, left % b
    sizes = np.concatenate([ramp, b[:, None], b[:, None], rest[:, None]], axis=1)
    counts = np.concatenate(
        [
            (ramp > 0).astype(np.int64),
            np.minimum(full, 1)[:, None],
            np.maximum(full - 1, 0)[:, None],
            (rest > 0)[:, None],
        ],
        axis=1,
    ).astype(np.int64)
    sizes = np.where(counts > 0, sizes, 0)
    # The last column that runs before each one.
    columns = np.arange(sizes.shape[1])[None, :]
    ran = np.maximum.accumulate(np.where(counts > 0, columns, -1), axis=1)
    before = np.concatenate([np.full((len(t), 1), -1), ran[:, :-1]], axis=1)
    previous = np.where(before >= 0, np.take_along_axis(sizes, np.maximum(before, 0), axis=1), 0)
    return sizes, counts, previous
