"""Collective agreement on bad input, shared with the C++ core (see cpp errors.hpp).

Each rank checks its own arguments; one small allreduce then tells every rank whether
any rank found a problem, and every rank raises the same error naming the ranks. The
ranks named are ranks of the communicator given: a Decomposition agrees over its
``_user_comm``, in the order of the communicator the caller gave it, not over its
renumbered Cartesian one.
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from hybridfd import _core

_VALUE, _TYPE = 1, 2


class Problem(Exception):
    """Raised by a local check; turned into a collective ValueError/TypeError by :func:`agree`."""

    def __init__(self, message: str, kind: type[Exception] = ValueError) -> None:
        super().__init__(message)
        self.kind = _TYPE if issubclass(kind, TypeError) else _VALUE


def agree(comm: MPI.Comm, problem: Problem | None, value: int = 0, value_name: str = "") -> None:
    """Collective: raise on every rank if any rank has a problem or ``value`` differs between ranks."""
    if problem is None:
        _core.agree_on_problems(comm, 0, "", value, value_name)
    else:
        _core.agree_on_problems(comm, problem.kind, str(problem), value, value_name)


def agree_on_setting(comm: MPI.Comm, problem: Problem | None, setting: str, setting_name: str) -> None:
    """Collective: raise on every rank if any rank has a problem or ``setting`` (a
    description in words) differs between ranks; the error shows each rank's setting."""
    kind, message = (0, "") if problem is None else (problem.kind, str(problem))
    _core.agree_on_setting(comm, kind, message, setting, setting_name)


def checked_root(comm: MPI.Comm, root: object) -> tuple[int, Problem | None]:
    """``root`` as an int, or -1 and a Problem naming it unless it is a rank of ``comm``
    (the caller's communicator, whose ranks ``root`` names). The callers agree on it too:
    ranks with different roots would wait for each other."""
    if isinstance(root, bool) or not isinstance(root, (int, np.integer)) or not 0 <= root < comm.size:
        return -1, Problem(f"root {root!r} must be a rank of the communicator: an int 0..{comm.size - 1}")
    return int(root), None
