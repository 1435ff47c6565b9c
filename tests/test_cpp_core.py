"""The C++ core is a CMake library usable without Python: build it on its own (as a
C++ user would, with the same MPI), install it, build the example and the C++ tests
(the core's and the MiniMD app's, hybridfd::minimd) against the installed package with
find_package(hybridfd), and run them under mpiexec."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _cpp_build import build_against, run

from hybridfd import launch


@pytest.fixture(scope="module")
def examples(installed_core: tuple, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_against(installed_core, "examples", tmp_path_factory.mktemp("examples"))


@pytest.fixture(scope="module")
def cpp_tests(installed_core: tuple, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_against(installed_core, "tests", tmp_path_factory.mktemp("cpp-tests"))


@pytest.mark.parametrize("ranks", [1, 3])
def test_cpp_example_runs_without_python(examples: Path, ranks: int) -> None:
    result = launch.run(ranks, [str(examples / "laplace_apply")], timeout=120)
    assert not result.timed_out, result.output
    assert result.returncode == 0, result.output
    assert "ok" in result.output and f"{ranks} ranks" in result.output, result.output


def test_kernel_reads_ghosts_apart_from_the_box_bit_identically(cpp_tests: Path) -> None:
    assert run([str(cpp_tests / "kernel_box_input_test")]) == "ok\n"


def test_thread_team_passes_exceptions_to_the_caller(cpp_tests: Path) -> None:
    assert run([str(cpp_tests / "thread_team_test")], env=dict(os.environ, OMP_WAIT_POLICY="passive")) == "ok\n"


@pytest.mark.parametrize("ranks", [1, 2])
def test_every_model_bit_identical_from_cpp_alone(cpp_tests: Path, ranks: int) -> None:
    result = launch.run(ranks, [str(cpp_tests / "models_test")], timeout=300)
    assert not result.timed_out, result.output
    assert result.returncode == 0 and "ok (" in result.output, result.output


@pytest.mark.parametrize("ranks", [1, 3])
def test_halo_exchange_from_cpp_alone(cpp_tests: Path, ranks: int) -> None:
    result = launch.run(ranks, [str(cpp_tests / "halo_test")], timeout=300)
    assert result.returncode == 0 and f"ok, {ranks} ranks" in result.output, result.output


@pytest.mark.parametrize("ranks", [1, 2])
def test_tracer_buffers_from_cpp_alone(cpp_tests: Path, ranks: int) -> None:
    result = launch.run(ranks, [str(cpp_tests / "tracer_test")], timeout=120)
    assert not result.timed_out, result.output
    assert result.returncode == 0 and "ok" in result.output, result.output


def test_errors_name_the_callers_ranks_from_cpp_alone(cpp_tests: Path) -> None:
    """A Decomposition built by a C++ user on their communicator, with a Layout that
    renumbers it, and the Operator on it name that communicator's ranks in their errors."""
    result = launch.run(3, [str(cpp_tests / "rank_names_test")], timeout=120)
    assert not result.timed_out, result.output
    assert result.returncode == 0 and "ok" in result.output, result.output


@pytest.mark.parametrize("ranks", [1, 2])
def test_minimd_app_links_and_runs_from_cpp_alone(cpp_tests: Path, ranks: int) -> None:
    """The installed hybridfd::minimd target: a melt with every particle exchange,
    bit-identical to one rank."""
    result = launch.run(ranks, [str(cpp_tests / "minimd_test")], timeout=300)
    assert not result.timed_out, result.output
    assert result.returncode == 0 and "ok (" in result.output, result.output
