"""The input of the side-by-side jobs: a deterministic function of the grid index and the
global point, so every code can fill its own part and results can be compared."""

from __future__ import annotations

import numpy as np


def field(g: np.ndarray, x: np.ndarray, y: np.ndarray, z: np.ndarray, n: int) -> np.ndarray:
    t = 2 * np.pi / n
    return np.sin(t * (x + g)) * np.cos(t * y) + 0.1 * np.sin(t * z + 0.3 * g)
