"""Collective agreement on bad input, shared with the C++ core (see cpp errors.hpp).

Each rank checks its own arguments; one small allreduce then tells every rank whether
any rank found a problem, and every rank raises the same error naming the ranks. The
ranks named are ranks of ``comm``, or ``rank_names[r]`` for rank r of ``comm`` when
given: a Decomposition agrees over its renumbered Cartesian communicator, the one the
core's agreements use (so Python's checks and the core's meet), and names each rank by
its rank in the communicator the caller gave (``Decomposition._agree``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from mpi4py import MPI

from hybridfd import _core

_VALUE, _TYPE = 1, 2


class Problem(Exception):
    """Raised by a local check; turned into a collective ValueError/TypeError by :func:`agree`."""

    def __init__(self, message: str, kind: type[Exception] = ValueError) -> None:
        super().__init__(message)
        self.kind = _TYPE if issubclass(kind, TypeError) else _VALUE


def agree(
    comm: MPI.Comm, problem: Problem | None, value: int = 0, value_name: str = "", rank_names: Sequence[int] = ()
) -> None:
    """Collective: raise on every rank if any rank has a problem or ``value`` differs between ranks.

    The error names rank r of ``comm`` ``rank_names[r]`` (default: r)."""
    kind, message = (0, "") if problem is None else (problem.kind, str(problem))
    _core.agree_on_problems(comm, kind, message, value, value_name, list(rank_names))


def agree_on_setting(
    comm: MPI.Comm, problem: Problem | None, setting: str, setting_name: str, rank_names: Sequence[int] = ()
) -> None:
    """Collective: raise on every rank if any rank has a problem or ``setting`` (a
    description in words) differs between ranks; the error shows each rank's setting.
    Ranks are named as by :func:`agree`."""
    kind, message = (0, "") if problem is None else (problem.kind, str(problem))
    _core.agree_on_setting(comm, kind, message, setting, setting_name, list(rank_names))


def checked_root(size: int, root: object) -> tuple[int, Problem | None]:
    """``root`` as an int, or -1 and a Problem naming it unless it is a rank of a
    communicator of ``size`` ranks. The callers agree on it too: ranks with different
    roots would wait for each other."""
    if isinstance(root, bool) or not isinstance(root, (int, np.integer)) or not 0 <= root < size:
        return -1, Problem(f"root {root!r} must be a rank of the communicator: an int 0..{size - 1}")
    return int(root), None
