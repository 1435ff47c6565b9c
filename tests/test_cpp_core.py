"""The C++ core is a CMake library usable without Python: build it on its own (as a
C++ user would, with the same MPI), install it, build the example against the
installed package with find_package(hybridfd), and run it under mpiexec."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hybridfd import launch

ROOT = Path(__file__).resolve().parents[1]


def run(cmd: list[str], **kwargs: object) -> str:
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kwargs)
    assert result.returncode == 0, f"$ {' '.join(cmd)}\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def installed_core(tmp_path_factory: pytest.TempPathFactory) -> tuple:
    build = tmp_path_factory.mktemp("core-build")
    prefix = tmp_path_factory.mktemp("core-prefix")
    env = dict(os.environ, MPI_HOME=os.environ.get("MPI_HOME") or sys.prefix)
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    run(["cmake", "-S", str(ROOT), "-B", str(build / "core"), *generator, f"-DCMAKE_INSTALL_PREFIX={prefix}"], env=env)
    run(["cmake", "--build", str(build / "core"), "--parallel", "2"], env=env)
    run(["cmake", "--install", str(build / "core")], env=env)
    assert (prefix / "include" / "hybridfd" / "operator.hpp").exists()
    return prefix, env, generator


def build_against(installed: tuple, project: str, build: Path) -> Path:
    """Configures and builds cpp/<project> against the installed core, as a C++ user would."""
    prefix, env, generator = installed
    source = ROOT / "cpp" / project
    run(["cmake", "-S", str(source), "-B", str(build), *generator, f"-DCMAKE_PREFIX_PATH={prefix}"], env=env)
    run(["cmake", "--build", str(build)], env=env)
    return build


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


def test_thread_team_passes_exceptions_to_the_caller(cpp_tests: Path) -> None:
    assert run([str(cpp_tests / "thread_team_test")], env=dict(os.environ, OMP_WAIT_POLICY="passive")) == "ok\n"


@pytest.mark.parametrize("ranks", [1, 2])
def test_every_model_bit_identical_from_cpp_alone(cpp_tests: Path, ranks: int) -> None:
    result = launch.run(ranks, [str(cpp_tests / "models_test")], timeout=300)
    assert not result.timed_out, result.output
    assert result.returncode == 0 and "ok (" in result.output, result.output


@pytest.mark.parametrize("ranks", [1, 2])
def test_tracer_buffers_from_cpp_alone(cpp_tests: Path, ranks: int) -> None:
    result = launch.run(ranks, [str(cpp_tests / "tracer_test")], timeout=120)
    assert not result.timed_out, result.output
    assert result.returncode == 0 and "ok" in result.output, result.output
