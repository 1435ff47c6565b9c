"""The wide-vector sweeps (cpp/src/kernel: column_sweep.hpp, streamed_planes.hpp) called
directly, on whichever width this machine builds (wide_vector.hpp: 8 lanes with AVX-512,
4 with AVX2), vs the numpy reference, bit for bit.

The kernel chooses a sweep only where it beats the row slide (on AVX-512 machines);
elsewhere test_kernel.py exercises the row slide alone, and the sweeps and wide_vector.hpp's
masks would go untested. tests/kernel_sweeps/driver.cpp exposes them to ctypes; every
sweep, radius 1-3, both point widths, general and symmetric stencils, runs on whole grids
and sub-boxes (1, 2, 3 points thick), rows that end inside a vector, rows whole vectors
apart at every offset within a line (the streamed sweep's masked head vector), outputs at
every 8-byte offset (its store pieces), long rows (its segments) and small budgets (its
bands). Nothing outside the region may change, in the output or around it."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import hybridfd as hf
from hybridfd.arrays import placed_flat

ROOT = Path(__file__).resolve().parents[1]

SENTINEL = 12345.0
GUARD = 64  # float64 lanes of sentinel either side of the output
# The driver's sweeps (tests/kernel_sweeps/driver.cpp, enum Sweep).
KINDS = {
    "columns": 0,
    "columns_prefetching": 1,
    "streamed_planes": 2,
    "columns_streamed": 3,
    "columns_prefetching_streamed": 4,
}


def load_driver(library: Path) -> ctypes.CDLL:
    """The driver's functions with their C types."""
    driver = ctypes.CDLL(str(library))
    pointer, int64 = ctypes.c_void_p, ctypes.c_int64
    driver.hybridfd_test_sweep.argtypes = [ctypes.c_int] * 3 + [pointer, pointer, int64, int64, pointer, pointer]
    driver.hybridfd_test_sweep.argtypes += [int64, int64, int64]
    driver.hybridfd_test_sweep.restype = ctypes.c_int
    driver.hybridfd_test_columns_stream.argtypes = [pointer, int64, int64, pointer]
    driver.hybridfd_test_columns_stream.restype = ctypes.c_int
    return driver


def machine_lanes() -> int:
    flags = next(line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags"))
    return 8 if "avx512f" in flags.split() else 4 if "avx2" in flags.split() else 0


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    """The driver, built as the kernel is (-march=native, no FMA contraction), warnings as errors."""
    compiler = shutil.which("c++") or shutil.which("g++")
    assert compiler is not None, "no C++ compiler on PATH"
    library = tmp_path_factory.mktemp("kernel_sweeps") / "sweeps.so"
    command = [compiler, "-std=c++20", "-O2", "-march=native", "-ffp-contract=off", "-Wall", "-Wextra", "-Werror"]
    command += ["-fPIC", "-shared", f"-I{ROOT / 'cpp' / 'include'}", f"-I{ROOT / 'cpp' / 'src'}"]
    command += [str(ROOT / "tests" / "kernel_sweeps" / "driver.cpp"), "-o", str(library)]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-4000:]
    return load_driver(library)


def test_driver_has_the_machines_vector_width(sweeps: ctypes.CDLL) -> None:
    assert sweeps.hybridfd_test_lanes() == machine_lanes()


def make_stencil(radius: int, symmetric: bool) -> hf.Stencil:
    rng = np.random.default_rng(radius + 10 * symmetric)
    if symmetric:
        weights = rng.uniform(-2, 2, (3, radius))
        return hf.Stencil.star(rng.uniform(-2, 2), weights, weights)
    return hf.Stencil.from_coefficients(rng.uniform(-2, 2, 1 + 6 * radius))


def sweep_region(
    driver: ctypes.CDLL,
    kind: str,
    stencil: hf.Stencil,
    shape: tuple[int, int, int],
    begin: tuple[int, int, int],
    extent: tuple[int, int, int],
    dtype: str,
    input_offset: int,
    output_offset: int,
    budget_bytes: int,
    seed: int,
) -> bool:
    """Sweeps one region of a random padded grid and checks it against the reference;
    whether the sweep streamed its output (the streamed kinds, where every store is a
    whole line)."""
    radius, point_lanes = stencil.radius, 2 if dtype == "complex128" else 1
    padded_shape = tuple(n + 2 * radius for n in shape)
    rng = np.random.default_rng(seed)
    padded = placed_flat(int(np.prod(padded_shape)) * np.dtype(dtype).itemsize, dtype, past=input_offset).reshape(
        padded_shape
    )
    padded[...] = rng.standard_normal(padded_shape)
    if dtype == "complex128":
        padded += 1j * rng.standard_normal(padded_shape)
    around = placed_flat(
        (int(np.prod(shape)) + 2 * GUARD // point_lanes) * np.dtype(dtype).itemsize,
        dtype,
        past=output_offset - 8 * GUARD,
    )
    around[...] = SENTINEL
    out = around[GUARD // point_lanes : -GUARD // point_lanes].reshape(shape)

    stride_y = padded_shape[2] * point_lanes
    stride_x = padded_shape[1] * stride_y
    out_stride_y = shape[2] * point_lanes
    out_stride_x = shape[1] * out_stride_y
    centre_lane = (begin[0] + radius) * stride_x + (begin[1] + radius) * stride_y + (begin[2] + radius) * point_lanes
    out_lane = begin[0] * out_stride_x + begin[1] * out_stride_y + begin[2] * point_lanes
    box = np.array([extent[0], extent[1], extent[2] * point_lanes], dtype=np.int64)
    out_address = out.ctypes.data + 8 * out_lane
    streamed = kind.endswith("_streamed") and bool(
        driver.hybridfd_test_columns_stream(out_address, out_stride_x, out_stride_y, box.ctypes.data)
    )
    # Streamed where every store is a whole 64-byte line: 8-lane vectors, rows of whole
    # vectors, each on a line.
    whole_lines = out_address % 64 == 0 and out_stride_x % 8 == 0 and out_stride_y % 8 == 0 and box[2] % 8 == 0
    assert streamed == (kind.endswith("_streamed") and machine_lanes() == 8 and whole_lines)
    served = driver.hybridfd_test_sweep(
        KINDS[kind],
        radius,
        point_lanes,
        np.ascontiguousarray(stencil.coefficients).ctypes.data,
        padded.ctypes.data + 8 * centre_lane,
        stride_x,
        stride_y,
        box.ctypes.data,
        out.ctypes.data + 8 * out_lane,
        out_stride_x,
        out_stride_y,
        budget_bytes,
    )
    lanes_here = machine_lanes()
    if lanes_here == 0 or radius * point_lanes > lanes_here:
        # Not served (no wide vectors, or a point's reach beyond the vector beside it): the
        # driver says so and writes nothing.
        assert served == 1
        assert (around == SENTINEL).all()
        return False
    assert served == 0
    expected = np.full(shape, SENTINEL, dtype=dtype)
    region = tuple(slice(b, b + e) for b, e in zip(begin, extent, strict=True))
    expected[region] = hf.reference.apply_padded(stencil, padded)[region]
    where = f"{kind} r={radius} {dtype} shape={shape} region={begin}+{extent} offsets={input_offset},{output_offset}"
    np.testing.assert_array_equal(out, expected, err_msg=where)
    assert (around[: GUARD // point_lanes] == SENTINEL).all(), f"{where}: wrote before the output"
    assert (around[-GUARD // point_lanes :] == SENTINEL).all(), f"{where}: wrote past the output"
    return streamed


def whole(shape: tuple[int, int, int]) -> tuple:
    return shape, (0, 0, 0), shape


def geometries(radius: int, dtype: str) -> list[tuple]:
    """(shape, begin, extent, input offset, output offset, budget bytes) to sweep."""
    point_lanes = 2 if dtype == "complex128" else 1
    # Rows 32 float64 lanes long, padded: whole vectors apart on either width.
    on_vectors = (3, 5, 32 // point_lanes - 2 * radius)
    cases = [
        (*whole((1, 1, 1)), 16, 16, 1 << 18),
        (*whole((3, 4, 5)), 16, 16, 1 << 18),
        (*whole((2, 3, 17)), 0, 8, 1 << 18),
        (*whole((5, 2, 33)), 8, 24, 1 << 18),
        (*whole((7, 9, 40)), 16, 16, 1),  # bands of r rows
        (*whole((5, 40, 60)), 16, 16, 1 << 18),  # column bands (the L1)
        (*whole((4, 3, 700 // point_lanes)), 16, 16, 1 << 18),  # streamed segments (the L1)
        ((6, 7, 21), (1, 2, 3), (3, 1, 15), 16, 16, 1 << 18),
        ((6, 7, 21), (2, 0, 5), (2, 7, 2), 16, 0, 1 << 18),
        ((6, 7, 21), (0, 3, 0), (6, 3, 21), 16, 16, 1 << 18),
        ((9, 8, 19), (4, 1, 1), (1, 6, 17), 16, 40, 1),
    ]
    cases += [(*whole(on_vectors), offset, offset, 1 << 18) for offset in range(0, 64, 8)]
    cases += [(*whole(on_vectors), 16, offset, 1 << 18) for offset in range(0, 64, 8)]
    # Output rows of whole lines (16 float64 lanes), on a line or not: the streamed
    # columns stream only the former (column_sweep::stores_whole_lines).
    on_lines = 16 // point_lanes
    cases += [(*whole((3, 5, on_lines)), 16, offset, 1 << 18) for offset in (0, 16, 32)]
    cases += [(*whole((5, 40, on_lines)), 8, 0, 1 << 18)]  # column bands
    cases += [((6, 7, on_lines), (1, 2, 0), (4, 3, on_lines), 16, 0, 1 << 18)]  # whole rows, cut in x and y
    cases += [((6, 7, 3 * on_lines), (1, 2, on_lines), (4, 3, on_lines), 16, 0, 1 << 18)]  # rows cut at lines
    rng = np.random.default_rng(radius)
    for _ in range(6):
        shape = tuple(int(n) for n in rng.integers(1, 14, 3))
        begin = tuple(int(rng.integers(0, n)) for n in shape)
        extent = tuple(int(rng.integers(1, n - b + 1)) for n, b in zip(shape, begin, strict=True))
        cases.append((shape, begin, extent, 16, 16, int(rng.choice([1, 1 << 18]))))
    return cases


@pytest.mark.parametrize("symmetric", [False, True], ids=["general", "symmetric"])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("radius", [1, 2, 3])
@pytest.mark.parametrize("kind", list(KINDS))
def test_sweep_is_bit_identical_to_reference(sweeps, kind, radius, dtype, symmetric):
    stencil = make_stencil(radius, symmetric)
    assert stencil.symmetric == symmetric
    streamed = 0
    for number, (shape, begin, extent, input_offset, output_offset, budget) in enumerate(geometries(radius, dtype)):
        streamed += sweep_region(
            sweeps, kind, stencil, shape, begin, extent, dtype, input_offset, output_offset, budget, seed=number
        )
    # With 8-lane vectors the streamed kinds stream the geometries of output rows on
    # lines (at least the four written for them).
    if kind.endswith("_streamed") and machine_lanes() == 8:
        assert streamed >= 4
