"""Simulation at Blue Gene/P scale (GPAW journal Sect. 7; docs/simulation.md): the pure
C++ driver ``hybridfd-bench`` (cpp/tools) run by SimGrid's SMPI on platforms generated
from the mapping topology presets.

- :mod:`hybridfd.simulate.driver`: the driver's test field and checksum, mirrored
  exactly in Python, and the Python Operator's checksum of the same configuration;
- :mod:`hybridfd.simulate.platform`: SimGrid platform files from a
  :class:`~hybridfd.mapping.Topology` (``bluegene-p``, ``host``).
"""
