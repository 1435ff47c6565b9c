"""Building the C++ core and the C++ projects against it, as a C++ user would (shared by
test_cpp_core.py and test_bench_driver.py through the ``installed_core`` fixture)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(cmd: list[str], **kwargs: object) -> str:
    # The limit catches a hang, not a slow build: with a cold compile cache (a new CPU is a
    # new cache namespace) and other work on the two cores, the core's build alone has taken
    # over ten minutes.
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, **kwargs)
    assert result.returncode == 0, f"$ {' '.join(cmd)}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def compiler_launcher() -> list[str]:
    """The launcher cmake puts before the compiler (the Makefile names ccache, through the
    variable cmake reads), for the tests' own compiles of the kernel's sources."""
    launcher = os.environ.get("CMAKE_CXX_COMPILER_LAUNCHER")
    return [launcher] if launcher else []


def install_core(build: Path, prefix: Path) -> tuple:
    """Configures, builds and installs the core and the MiniMD app alone (with the same MPI
    as the package)."""
    env = dict(os.environ, MPI_HOME=os.environ.get("MPI_HOME") or sys.prefix)
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    run(
        [
            "cmake",
            "-S",
            str(ROOT),
            "-B",
            str(build),
            *generator,
            "-DHYBRIDFD_TOOLS=OFF",
            f"-DCMAKE_INSTALL_PREFIX={prefix}",
        ],
        env=env,
    )
    run(["cmake", "--build", str(build), "--parallel", "2"], env=env)
    run(["cmake", "--install", str(build)], env=env)
    assert (prefix / "include" / "hybridfd" / "operator.hpp").exists()
    assert (prefix / "include" / "hybridfd" / "minimd" / "minimd.hpp").exists()
    return prefix, env, generator


def build_against(installed: tuple, project: str, build: Path) -> Path:
    """Configures and builds cpp/<project> against the installed core, as a C++ user would."""
    prefix, env, generator = installed
    source = ROOT / "cpp" / project
    run(["cmake", "-S", str(source), "-B", str(build), *generator, f"-DCMAKE_PREFIX_PATH={prefix}"], env=env)
    run(["cmake", "--build", str(build)], env=env)
    return build
