"""The kernel compiles, warning-free, for the wide-vector width this machine does not run.

The kernel (cpp/src/kernel) has a path per vector width: AVX2 (x86-64-v3, the 4-lane row
slide) and AVX-512 (x86-64-v4, with wide_vector.hpp's 8-lane sweeps: column_sweep.hpp,
streamed_planes.hpp). The kernel's tests run the width this machine has (`-march=native`);
the other would otherwise break unseen, and the machines this runs on have either. So the
other width's objects are compiled for real (-O2: GCC's -Wmaybe-uninitialized needs the
optimiser), two translation units at a time, with the build's warnings as errors, and
must hold the registers its width implies (zmm for AVX-512; ymm and no zmm for AVX2)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _cpp_build import compiler_launcher

ROOT = Path(__file__).resolve().parents[1]
# mpi.h (the kernel's headers declare MPI types): the MPICH wheel's in the environment,
# or the site MPI's that MPI_HOME names (Makefile).
MPI_INCLUDES = [Path(sys.prefix) / "include"]
if os.environ.get("MPI_HOME"):
    MPI_INCLUDES.append(Path(os.environ["MPI_HOME"]) / "include")


def machine_has_avx512() -> bool:
    flags = next(line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags"))
    return "avx512f" in flags.split()


def test_kernel_compiles_for_the_other_vector_width(tmp_path: Path) -> None:
    march, register, absent = ("x86-64-v3", "ymm", "zmm") if machine_has_avx512() else ("x86-64-v4", "zmm", None)
    compiler = shutil.which("c++") or shutil.which("g++")
    assert compiler is not None, "no C++ compiler on PATH"
    command = [*compiler_launcher(), compiler, "-std=c++20", "-O2", f"-march={march}", "-ffp-contract=off"]
    command += ["-Wall", "-Wextra", "-Werror"]
    command += [f"-I{ROOT / 'cpp' / 'include'}", *(f"-I{path}" for path in MPI_INCLUDES)]

    def compiled(source: Path) -> str:
        target = tmp_path / f"{source.stem}_{march}.o"
        completed = subprocess.run(
            [*command, "-c", str(source), "-o", str(target)], capture_output=True, text=True, timeout=900
        )
        assert completed.returncode == 0, f"{source.name}: {completed.stderr[-4000:]}"
        return subprocess.run(["objdump", "-d", str(target)], capture_output=True, text=True, check=True).stdout

    sources = sorted((ROOT / "cpp" / "src" / "kernel").glob("*.cpp"))
    with ThreadPoolExecutor(2) as pool:
        disassembly = "".join(pool.map(compiled, sources))
    assert f"%{register}" in disassembly, f"{march}: no {register} in the objects"
    assert absent is None or f"%{absent}" not in disassembly, f"{march}: {absent} in the objects"
