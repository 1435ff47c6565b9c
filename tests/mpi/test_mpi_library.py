"""mpi4py and the C++ core load one and the same MPI library."""

from __future__ import annotations

from pathlib import Path

from mpi4py import MPI

import hybridfd as hf
from hybridfd import _core

RANKS = (1, 2)


def test_same_library_version_string():
    assert _core.mpi_library_version() == MPI.Get_library_version()


def test_only_one_libmpi_is_mapped():
    maps = Path("/proc/self/maps").read_text().splitlines()
    libraries = {line.split()[-1] for line in maps if "libmpi" in line.rsplit("/", 1)[-1]}
    assert len(libraries) == 1, libraries


def test_communicator_crosses_into_cpp(comm):
    # A duplicate made by mpi4py is used by C++ (size and a collective), and the Cartesian
    # communicator made by C++ is used by mpi4py.
    dup = comm.Dup()
    try:
        assert _core.comm_size(dup) == dup.size
        _core.agree_on_problems(dup, 0, "", 42, "answer")  # an allreduce inside C++
    finally:
        dup.Free()
    dec = hf.Decomposition(hf.Domain((8, 8, 8)), comm)
    assert dec.comm.size == comm.size
    assert dec.comm.Get_topology() == MPI.CART
    assert dec.comm.allreduce(1) == comm.size
