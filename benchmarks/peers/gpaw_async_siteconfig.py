"""GPAW build configuration (GPAW_CONFIG) for the second GPAW peer: its double-buffered
exchange (-DGPAW_ASYNC, c/operators.c apply_worker_cfd) with OpenMP threads over the grids
of a batch, the build the GPAW papers ran on Blue Gene/P. Read by GPAW's setup.py
(exec), so it only appends to the lists setup.py defines; `make peers-gpaw-async` uses it.
"""

# flake8: noqa
# ruff: noqa: F821
libraries += ["blas"]  # a siteconfig replaces setup.py's automatic BLAS
define_macros += [("GPAW_ASYNC", 1)]
extra_compile_args += ["-fopenmp"]
extra_link_args += ["-fopenmp"]
