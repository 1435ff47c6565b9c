"""hybridfd: finite-difference stencils on batches of domain-decomposed 3D grids over MPI.

Every technique of the GPAW/Blue Gene/P papers (batching, double buffering, sloped
batches, hybrid threading models, one-sided transports, topology-aware mapping) is a
switch on one :class:`Operator`. Axis order is the papers': ``[g, x, y, z]``, C order.
"""

from hybridfd import particles, reference
from hybridfd._core import (
    RingWindow,
    approach_names,
    model_names,
    mpi_library_version,
    schedule_names,
    transport_names,
    transport_support,
)
from hybridfd._version import __version__ as __version__
from hybridfd.arrays import aligned_copy, empty_aligned, empty_padded
from hybridfd.decomposition import Box, Decomposition, Layout
from hybridfd.domain import Domain
from hybridfd.groups import RankGroups
from hybridfd.halo import Halo, HaloHandle
from hybridfd.operator import Operator
from hybridfd.stencil import Stencil

__all__ = [
    "Box",
    "Decomposition",
    "Domain",
    "Halo",
    "HaloHandle",
    "Layout",
    "Operator",
    "RankGroups",
    "RingWindow",
    "Stencil",
    "aligned_copy",
    "approach_names",
    "empty_aligned",
    "empty_padded",
    "model_names",
    "mpi_library_version",
    "particles",
    "reference",
    "schedule_names",
    "transport_names",
    "transport_support",
]
