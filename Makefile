# hybridfd: `make demo` and `make test` are all a fresh machine needs.
#
# MPI_HOME selects the MPI library. Unset (the default), `make setup` installs MPICH
# from PyPI (the `mpich` wheel) into .venv and builds everything against it. Set it to a
# site MPI's prefix (the directory holding bin/mpicc, e.g. MPI_HOME=/usr or
# $(dirname $(dirname $(which mpicc)))) to build mpi4py and hybridfd against that MPI.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
MPI_HOME ?=
export MPI_HOME

BUILD_DEPS := scikit-build-core nanobind ninja
RUN_DEPS := numpy pytest hypothesis ruff clang-format matplotlib rich jsonschema
SOURCES := pyproject.toml CMakeLists.txt $(shell find cpp src -type f -not -name '*.pyc' 2>/dev/null)

.PHONY: setup demo test bench lint clean vectorisation-report peers

setup: $(VENV)/.installed

$(VENV)/.deps: Makefile
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
ifeq ($(MPI_HOME),)
	$(PIP) install --quiet mpich mpi4py
else
	MPICC=$(MPI_HOME)/bin/mpicc $(PIP) install --quiet --no-binary mpi4py --no-cache-dir mpi4py
endif
	$(PIP) install --quiet $(BUILD_DEPS) $(RUN_DEPS)
	touch $@

$(VENV)/.installed: $(VENV)/.deps $(SOURCES)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PIP) install --quiet --no-build-isolation --no-deps .
	touch $@

demo: setup
	$(PY) -m hybridfd.launch -n 2 -- $(CURDIR)/$(PY) -m hybridfd.demo

test: setup
	$(PY) -m pytest

bench: setup
	$(PY) benchmarks/kernel_throughput.py
	$(PY) benchmarks/oversubscription.py
	$(PY) benchmarks/latency_hiding.py
	$(PY) benchmarks/compare_gpaw.py

lint: setup
	$(PY) -m ruff check src tests benchmarks
	$(PY) -m ruff format --check src tests benchmarks
	$(VENV)/bin/clang-format --dry-run --Werror $$(find cpp -name '*.cpp' -o -name '*.hpp')

# Evidence that the kernel runs on 256-bit vectors: the AVX instructions the compiler
# emitted for it, counted per kind (quoted in docs/benchmarks.md).
vectorisation-report: setup
	@PATH="$(CURDIR)/$(VENV)/bin:$$PATH" cmake -S . -B build/report -G Ninja -DHYBRIDFD_PYTHON=OFF \
	  -DMPI_HOME=$(or $(MPI_HOME),$(CURDIR)/$(VENV)) >/dev/null
	@cmake --build build/report --target hybridfd_core >/dev/null
	@objdump -d --no-show-raw-insn build/report/CMakeFiles/hybridfd_core.dir/cpp/src/kernel.cpp.o \
	  | grep -oE 'v(mul|add)pd|vmovupd' | sort | uniq -c
	@objdump -d --no-show-raw-insn build/report/CMakeFiles/hybridfd_core.dir/cpp/src/kernel.cpp.o \
	  | grep -E 'v(mul|add)pd' | grep -c ymm | sed 's/^/256-bit (ymm) multiplies and adds: /'

# Peer codes for side-by-side benchmarks, each in its own environment (never a
# dependency of hybridfd; shared/PEERS.md). GPAW needs libxc and BLAS/LAPACK (apt, root).
peers: .peers/gpaw/bin/gpaw

.peers/gpaw/bin/gpaw:
	apt-get install -y -q libxc-dev libblas-dev liblapack-dev
	$(PYTHON) -m venv .peers/gpaw
	PATH="$(CURDIR)/.peers/gpaw/bin:$$PATH" .peers/gpaw/bin/pip install --quiet mpi4py mpich
	PATH="$(CURDIR)/.peers/gpaw/bin:$$PATH" .peers/gpaw/bin/pip install --quiet gpaw

clean:
	rm -rf build $(VENV)
