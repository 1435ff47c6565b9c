"""Domain: the global grid (shape, periodicity per axis, dtype)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

SUPPORTED_DTYPES = ("float64", "complex128")


def _three(value: object, name: str) -> tuple:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) != 3:
        raise ValueError(f"{name} must have 3 entries (x, y, z), got {value!r}")
    return tuple(value)


@dataclass(frozen=True)
class Domain:
    """A global grid of ``shape = (Nx, Ny, Nz)`` points.

    ``periodic`` is one flag or one per axis; a non-periodic axis has zero ghost values
    beyond its ends (GPAW's zero boundary). ``dtype`` is ``"float64"`` or ``"complex128"``.
    """

    shape: tuple[int, int, int]
    periodic: tuple[bool, bool, bool] = (True, True, True)
    dtype: str = "float64"

    def __post_init__(self) -> None:
        shape = _three(self.shape, "domain shape")
        if not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 1 for n in shape):
            raise ValueError(f"domain shape must be 3 positive integers, got {self.shape!r}")
        # The core takes 64-bit extents (and checks that the grid's bytes fit them).
        if not all(n < 2**63 for n in shape):
            raise ValueError(f"domain shape {self.shape!r} has an extent beyond 64 bits")
        periodic = self.periodic
        if isinstance(periodic, (bool, np.bool_)):
            periodic = (bool(periodic),) * 3
        periodic = _three(periodic, "periodic")
        if not all(isinstance(p, (bool, np.bool_)) for p in periodic):
            raise ValueError(f"periodic must be booleans, got {self.periodic!r}")
        try:
            dtype = np.dtype(self.dtype).name
        except TypeError as error:
            raise TypeError(f"dtype {self.dtype!r} is not a numpy dtype") from error
        if dtype not in SUPPORTED_DTYPES:
            raise TypeError(f"dtype {dtype!r} is not supported; use one of {SUPPORTED_DTYPES}")
        object.__setattr__(self, "shape", tuple(int(n) for n in shape))
        object.__setattr__(self, "periodic", tuple(bool(p) for p in periodic))
        object.__setattr__(self, "dtype", dtype)
