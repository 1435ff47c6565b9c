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
def installed_core(tmp_path_factory: pytest.TempPathFactory) -> Path:
    build = tmp_path_factory.mktemp("core-build")
    prefix = tmp_path_factory.mktemp("core-prefix")
    env = dict(os.environ, MPI_HOME=os.environ.get("MPI_HOME") or sys.prefix)
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    run(["cmake", "-S", str(ROOT), "-B", str(build / "core"), *generator, f"-DCMAKE_INSTALL_PREFIX={prefix}"], env=env)
    run(["cmake", "--build", str(build / "core"), "--parallel", "2"], env=env)
    run(["cmake", "--install", str(build / "core")], env=env)
    assert (prefix / "include" / "hybridfd" / "operator.hpp").exists()
    examples = build / "examples"
    run(
        [
            "cmake",
            "-S",
            str(ROOT / "cpp" / "examples"),
            "-B",
            str(examples),
            *generator,
            f"-DCMAKE_PREFIX_PATH={prefix}",
        ],
        env=env,
    )
    run(["cmake", "--build", str(examples)], env=env)
    return examples


@pytest.mark.parametrize("ranks", [1, 3])
def test_cpp_example_runs_without_python(installed_core: Path, ranks: int) -> None:
    result = launch.run(ranks, [str(installed_core / "laplace_apply")], timeout=120)
    assert not result.timed_out, result.output
    assert result.returncode == 0, result.output
    assert "ok" in result.output and f"{ranks} ranks" in result.output, result.output
