"""An Operator and the problem it applies to, from the options ``hybridfd run`` and
``hybridfd-bench`` share (shape, periodicity, dtype, process grid, stencil radius and
spacing; approach and its overrides): what the command line builds, and what
:mod:`hybridfd.simulate.driver` builds to compare its checksum with the C++ driver's."""

from __future__ import annotations

import argparse

from hybridfd.decomposition import Decomposition
from hybridfd.domain import Domain
from hybridfd.operator import Operator
from hybridfd.stencil import Stencil


def build(args: argparse.Namespace, shape: tuple[int, int, int], comm: object) -> tuple:
    """(domain, decomposition, stencil, operator) from the problem and operator options;
    a bad value raises ValueError or TypeError alike on every rank, before any message."""
    domain = Domain(shape, periodic=args.periodic, dtype=args.dtype)
    decomposition = Decomposition(domain, comm, grid=args.grid)
    stencil = Stencil.laplace(args.radius, args.spacing)
    op = Operator(
        decomposition,
        stencil,
        approach=args.approach,
        model=args.model,
        threads=args.threads,
        master_share=args.master_share,
        schedule=args.schedule,
        transport=args.transport,
        batch=args.batch,
        slope=args.slope,
        slope_kind=args.slope_kind,
        progress=args.progress,
    )
    return domain, decomposition, stencil, op
