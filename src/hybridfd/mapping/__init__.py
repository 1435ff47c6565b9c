"""Topology-aware process mapping (CP2K seed Sect. 3.3, 4; GPAW journal Sect. 3.1, 5).

A :class:`Topology` describes the network (torus or mesh of multicore nodes), a
strategy (:func:`strategy_names`) places the positions of a Cartesian process grid on
its cores, :mod:`~hybridfd.mapping.metrics` scores a placement (hop-bytes, link loads,
dilation), and :func:`reorder_communicator` applies one to a communicator. MPICH and
Open MPI ignore ``MPI_Cart_create``'s ``reorder``, so the reordered communicator is
made here, with ``MPI_Comm_split`` keyed by the mapped position.
"""

from hybridfd.mapping.apply import MappingInfo, reorder_communicator
from hybridfd.mapping.metrics import Metrics, evaluate
from hybridfd.mapping.patterns import CommPattern, cannon_pattern, neighbour_pattern, stencil_pattern
from hybridfd.mapping.strategies import Mapping, compute_mapping, strategy_names
from hybridfd.mapping.topology import PRESETS, Topology

__all__ = [
    "PRESETS",
    "CommPattern",
    "Mapping",
    "MappingInfo",
    "Metrics",
    "Topology",
    "cannon_pattern",
    "compute_mapping",
    "evaluate",
    "neighbour_pattern",
    "reorder_communicator",
    "stencil_pattern",
    "strategy_names",
]
