"""Rank groups that each own a share of the grids: the GPAW papers' flat-optimized-grouped
experiment (journal Sect. 7.2, "four sub-groups").

Flat ranks split into groups; each group decomposes the whole domain over its own ranks
and owns a contiguous share of the grids. The domain is then cut into as many boxes as a
group has ranks, the partitioning level of hybrid-multiple with that many ranks and the
group count as threads, so flat and hybrid can be compared at equal box sizes.
"""

from __future__ import annotations

from mpi4py import MPI

from hybridfd._collective import Problem, agree


class RankGroups:
    """``comm``'s ranks split into ``groups`` equal groups of consecutive ranks. Collective.

    ``comm`` is the group's communicator (give it to :class:`hybridfd.Decomposition`),
    ``index`` this rank's group, ``grids(G)`` the slice of the G grids the group owns.
    """

    def __init__(self, comm: MPI.Comm, groups: int) -> None:
        problem = None
        if not isinstance(groups, int) or groups < 1 or comm.size % groups:
            problem = Problem(f"groups {groups!r} must be a positive divisor of the number of ranks {comm.size}")
        agree(comm, problem, groups if isinstance(groups, int) else 0, "groups")
        self.count = groups
        self.index = comm.rank // (comm.size // groups)
        self.comm = comm.Split(self.index, comm.rank)

    def grids(self, total: int) -> slice:
        """The grids of ``total`` this rank's group owns: a contiguous share, sizes differing by at most one."""
        return slice(total * self.index // self.count, total * (self.index + 1) // self.count)
