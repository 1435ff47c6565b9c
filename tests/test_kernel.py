"""The C++ kernel alone vs the numpy reference on padded grids: bit-identical, every
radius, both dtypes, row lengths that exercise the vector loop's remainder, grids small
enough for the L2 and larger ones, whose output is streamed."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

import hybridfd as hf
from hybridfd import _probes
from hybridfd.arrays import empty_aligned
from hybridfd.kernel import apply_padded


def random_padded(shape: tuple[int, int, int], radius: int, dtype: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    padded_shape = tuple(n + 2 * radius for n in shape)
    padded = rng.standard_normal(padded_shape)
    if dtype == "complex128":
        padded = padded + 1j * rng.standard_normal(padded_shape)
    return padded


def make_stencil(radius: int, symmetric: bool) -> hf.Stencil:
    rng = np.random.default_rng(radius)
    if symmetric:
        weights = rng.uniform(-2, 2, (3, radius))
        return hf.Stencil.star(rng.uniform(-2, 2), weights, weights)
    return hf.Stencil.from_coefficients(rng.uniform(-2, 2, 1 + 6 * radius))


@pytest.mark.parametrize("symmetric", [False, True], ids=["general", "symmetric"])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("radius", range(1, 7))
@pytest.mark.parametrize("shape", [(1, 1, 1), (3, 4, 5), (2, 3, 17), (5, 2, 33)])
def test_kernel_is_bit_identical_to_reference(dtype, radius, shape, symmetric):
    stencil = make_stencil(radius, symmetric)
    assert stencil.symmetric == symmetric
    padded = random_padded(shape, radius, dtype, seed=radius * 100 + sum(shape))
    out = apply_padded(stencil, padded)
    np.testing.assert_array_equal(out, hf.reference.apply_padded(stencil, padded))


def test_kernel_rejects_bad_arrays():
    stencil = hf.Stencil.laplace(2)
    padded = np.zeros((8, 8, 8))
    with pytest.raises(ValueError, match=r"padded input has shape \(8, 8, 8\)"):
        apply_padded(stencil, padded, out=np.zeros((3, 4, 4)))
    with pytest.raises(TypeError, match="float32"):
        apply_padded(stencil, padded.astype(np.float32))
    with pytest.raises(ValueError, match="not C-contiguous"):
        apply_padded(stencil, np.asfortranarray(padded))
    with pytest.raises(ValueError, match="overlaps"):
        apply_padded(stencil, padded, out=padded.reshape(-1)[:64].reshape(4, 4, 4))


def test_arithmetic_peak_is_measured():
    multiply_add, fused = _probes.measure_arithmetic_peak(0.02)
    assert multiply_add > 0.1 and fused > 0.1  # GFLOP/s; a real core does far more


def test_issue_rate_is_measured():
    """Instructions per ns of a register-only loop: well above one even on a shared core
    (about 7 here when another hardware thread shares it, 14 alone)."""
    assert 1.0 < _probes.measure_issue_rate(0.005) < 200.0


def last_level_share_from_sysfs() -> int:
    """cpu0's deepest data or unified cache, over the CPUs that share it, read here
    independently of the core's reader; 2 MiB where Linux does not tell."""
    share, deepest = 2 << 20, 0
    caches = Path("/sys/devices/system/cpu/cpu0/cache")
    for index in sorted(caches.glob("index*"), key=lambda path: int(path.name[5:])):
        try:
            level = int((index / "level").read_text())
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip()
            shared = (index / "shared_cpu_list").read_text().strip()
        except OSError:
            continue
        if kind == "Instruction" or level <= deepest or not size.endswith("K"):
            continue
        cpus = 0
        for part in shared.split(","):
            first, _, last = part.partition("-")
            cpus += int(last or first) - int(first) + 1
        deepest, share = level, int(size[:-1]) * 1024 // cpus
    return share


def test_cache_sizes_are_the_systems():
    """L1 and L2 as glibc reads them from the CPU (getconf), else the documented
    fallbacks; the last level's share as sysfs says."""
    level1, level2, share = hf._core.cache_sizes()
    assert share == last_level_share_from_sysfs()
    for value, name, fallback in ((level1, "LEVEL1_DCACHE_SIZE", 32 << 10), (level2, "LEVEL2_CACHE_SIZE", 1 << 20)):
        answer = subprocess.run(["getconf", name], capture_output=True, text=True, check=False).stdout.strip()
        system = int(answer) if answer.isdigit() else 0
        assert value == (system if system > 0 else fallback), name


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("from_memory", [None, False, True])
def test_timed_kernel_and_copy_compute_what_they_time(dtype, threads, from_memory):
    """The C++-timed loops of the benchmarks leave the kernel's output bit for bit the
    reference (every slab, either path) and the copy's target equal to its source."""
    stencil = make_stencil(2, symmetric=True)
    padded = random_padded((11, 9, 13), 2, dtype, seed=threads)
    out = np.zeros((11, 9, 13), dtype=dtype)
    seconds = _probes.kernel_seconds(stencil._core, padded, out, 0.001, threads, from_memory)
    assert 0 < seconds < 1
    np.testing.assert_array_equal(out, hf.reference.apply_padded(stencil, padded))
    source = padded.reshape(-1).view(np.float64)
    target = np.zeros_like(source)
    assert 0 < _probes.copy_seconds(source, target, 0.001, threads) < 1
    np.testing.assert_array_equal(target, source)


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("count", [0, 1, 7, 8, 9, 23, 64, 1001])
def test_stream_copy_on_threads_copies_every_value_and_no_more(threads, count):
    # Parts meet at multiples of 8 values: counts below, at and past a multiple, with
    # more threads than lines (a part may be empty). The target is the front of a larger
    # array whose rest must stay untouched.
    source = np.arange(1.0, count + 1.0)
    whole = np.full(count + 16, -1.0)
    _probes.stream_copy(source, whole[:count], threads)
    np.testing.assert_array_equal(whole[:count], source)
    assert (whole[count:] == -1.0).all()


def test_copy_on_threads_names_a_team_size_it_cannot_have():
    source = np.zeros(64)
    for copy in (_probes.stream_copy, lambda s, t, n: _probes.copy_seconds(s, t, 0.01, n)):
        with pytest.raises(ValueError, match="threads 0"):
            copy(source, np.zeros(64), 0)


@pytest.mark.parametrize("seconds", [0.0, -1.0, float("nan"), 1e9])
def test_timed_loops_name_a_bad_duration(seconds):
    stencil = make_stencil(2, symmetric=True)
    padded, out = np.zeros((8, 8, 8)), np.zeros((4, 4, 4))
    match = re.escape(f"seconds {seconds:g} to time for must lie in (0, 3600]")
    with pytest.raises(ValueError, match=match):
        _probes.kernel_seconds(stencil._core, padded, out, seconds)
    with pytest.raises(ValueError, match=match):
        _probes.copy_seconds(padded.reshape(-1), np.zeros(512), seconds)
    with pytest.raises(ValueError, match=match):
        _probes.measure_arithmetic_peak(seconds)
    with pytest.raises(ValueError, match=match):
        _probes.measure_issue_rate(seconds)
    with pytest.raises(ValueError, match="copy_seconds: source has 512 values, target 511"):
        _probes.copy_seconds(padded.reshape(-1), np.zeros(511), 0.01)


def test_symmetric_form_is_the_paired_sum():
    # One point, radius 1 along z only: centre*a + c*(lower + upper), not c*lower + c*upper.
    # With these values the two forms round differently, so the test tells them apart.
    stencil = hf.Stencil.star(1.0, [[0.0], [0.0], [0.1]], [[0.0], [0.0], [0.1]])
    assert stencil.symmetric
    padded = np.zeros((3, 3, 3))
    padded[1, 1] = [0.1, 0.0, 0.7]
    out = apply_padded(stencil, padded)
    paired = 0.0 + 0.1 * (0.1 + 0.7)
    separate = (0.0 + 0.1 * 0.1) + 0.1 * 0.7
    assert paired != separate
    assert out[0, 0, 0] == paired
    assert hf.Stencil.laplace(3, (0.1, 0.2, 0.3)).symmetric
    assert not hf.Stencil.from_coefficients(np.arange(13.0)).symmetric


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("radius", range(1, 7))
@pytest.mark.parametrize("shape", [(3, 4, 5), (2, 3, 17), (6, 5, 33), (16, 16, 16)])
def test_isotropic_stencil_is_bit_identical_to_reference(dtype, radius, shape):
    """Every axis's coefficients equal (a Laplacian on a cubic grid): rows in cache slide
    with one copy of them for all three axes (row_slide.hpp: slide_padded_in_cache for
    padded grids, both dtypes; slide_rows for float64 boxes)."""
    rng = np.random.default_rng(10 + radius)
    weights = np.tile(rng.uniform(-2, 2, radius), (3, 1))
    padded = random_padded(shape, radius, dtype, seed=radius)
    for stencil in (hf.Stencil.star(rng.uniform(-2, 2), weights, weights), hf.Stencil.laplace(radius, 0.3)):
        expected = hf.reference.apply_padded(stencil, padded)
        for threads in (1, 2):
            np.testing.assert_array_equal(apply_padded(stencil, padded, threads=threads), expected)


@pytest.mark.parametrize("form", ["symmetric", "general"])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize(("threads", "from_memory"), [(1, False), (2, False), (1, True)])
def test_a_coefficient_of_negative_zero_keeps_its_sign(form, dtype, threads, from_memory):
    # On an input of -0.0 the y pair's (-0.0 + -0.0) * -0.0 is +0.0, which turns the sum
    # to +0.0; a weight of +0.0 in its place (the x axis's, were the axes taken for equal
    # by ==, or -0.0 broadcast as 0.0 + -0.0) would leave it -0.0.
    minus = [[0.0], [-0.0], [0.0]]
    plus = [[0.0], [-0.0], [0.0]] if form == "symmetric" else [[0.25], [-0.0], [0.0]]
    stencil = hf.Stencil.star(1.0, minus, plus)
    assert stencil.symmetric == (form == "symmetric")
    padded = np.full((10, 10, 18), -0.0, dtype=dtype)
    expected = hf.reference.apply_padded(stencil, padded)
    assert not np.signbit(expected.view(np.float64)).any()
    out = apply_padded(stencil, padded, threads=threads, from_memory=from_memory)
    np.testing.assert_array_equal(out.view(np.uint64), expected.view(np.uint64))


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("from_memory", [False, True])
def test_minus_and_plus_that_differ_in_the_sign_of_a_zero_are_summed_as_written(dtype, from_memory):
    # Centre 0.0 on an input of -0.0 starts each sum at -0.0. The x pair as written,
    # +0.0 * -0.0 + -0.0 * -0.0, adds -0.0 and then +0.0, which turns the sum to +0.0;
    # paired, +0.0 * (-0.0 + -0.0) would add -0.0 and leave it -0.0. The y and z pairs
    # (1.0) add -0.0, which keeps either sign.
    stencil = hf.Stencil.star(0.0, [[0.0], [1.0], [1.0]], [[-0.0], [1.0], [1.0]])
    assert not stencil.symmetric
    padded = np.full((10, 10, 18), -0.0, dtype=dtype)
    expected = hf.reference.apply_padded(stencil, padded)
    assert not np.signbit(expected.view(np.float64)).any()
    out = apply_padded(stencil, padded, from_memory=from_memory)
    np.testing.assert_array_equal(out.view(np.uint64), expected.view(np.uint64))


def test_stored_outputs_reproduce_bit_for_bit():
    """Outputs stored from the kernel (tests/data/kernel_outputs.npz, made by
    tests/data/make_kernel_outputs.py): every change to the kernel must reproduce them
    exactly."""
    import importlib.util

    data = Path(__file__).parent / "data"
    spec = importlib.util.spec_from_file_location("make_kernel_outputs", data / "make_kernel_outputs.py")
    assert spec is not None and spec.loader is not None
    maker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(maker)
    cases = maker.cases
    stored = np.load(data / "kernel_outputs.npz")
    names = []
    for name, stencil, padded in cases():
        np.testing.assert_array_equal(apply_padded(stencil, padded), stored[name], err_msg=name)
        names.append(name)
    assert sorted(names) == sorted(stored.files)


def assert_region_written(out: np.ndarray, whole: np.ndarray, begin: tuple, extent: tuple) -> None:
    """``out``, filled with NaN before the kernel computed the region at ``begin`` of
    ``extent`` into it, holds ``whole``'s values there and NaN everywhere else."""
    inside = tuple(slice(b, b + e) for b, e in zip(begin, extent, strict=True))
    np.testing.assert_array_equal(out[inside], whole[inside], err_msg=f"{out.shape} region {begin} + {extent}")
    out[inside] = np.nan
    assert np.isnan(out).all(), f"points outside region {begin} + {extent} were written"


def misaligned_view(shape: tuple[int, int, int], dtype: str, misalignment: int) -> np.ndarray:
    """A C-contiguous array of ``shape`` whose data start ``misalignment`` bytes past a
    64-byte boundary (a cache line), rounded down to what whole items allow (complex128:
    a multiple of 16)."""
    size = int(np.prod(shape))
    buffer = np.empty(size + 8, dtype=dtype)
    start = (misalignment - buffer.ctypes.data) % 64 // buffer.itemsize
    return buffer[start : start + size].reshape(shape)


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("radius", [1, 2, 3, 6])
@pytest.mark.parametrize("threads", [1, 2])
def test_streamed_output_is_bit_identical_to_reference(dtype, radius, threads):
    """Grids larger than the L2 from memory, whose output the kernel writes with streaming
    stores (three planes at a time up to radius 3, streamed_planes.hpp; one plane at a
    time beyond, row_slide.hpp): bit for bit the reference, with the output at every offset
    from 32-byte alignment the dtype allows and rows of every length mod 4."""
    level2 = os.sysconf("SC_LEVEL2_CACHE_SIZE") if "SC_LEVEL2_CACHE_SIZE" in os.sysconf_names else 0
    level2 = level2 if level2 > 0 else 1 << 20
    stencil = make_stencil(radius, symmetric=radius != 3)
    itemsize = 16 if dtype == "complex128" else 8
    for nz, misalignment in zip((97, 98, 99, 100), (0, 8, 16, 24), strict=True):
        ny = 13
        shape = (level2 // (ny * nz * itemsize) + 2, ny, nz)
        padded = random_padded(shape, radius, dtype, seed=radius * 1000 + nz)
        out = misaligned_view(shape, dtype, misalignment)
        apply_padded(stencil, padded, out, threads=threads, from_memory=True)
        np.testing.assert_array_equal(out, hf.reference.apply_padded(stencil, padded), err_msg=f"{shape}")


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("radius", [1, 2, 3, 6])
@pytest.mark.parametrize("from_memory", [False, True], ids=["in_cache", "from_memory"])
def test_grid_and_output_beyond_the_level2_stream_the_output(dtype, radius, from_memory):
    """A grid that fits the L2 but not together with its padded input: its output is
    streamed, in cache by the columns where every store is a whole line (column_sweep.hpp,
    AVX-512), from memory by the three-plane sweep (streamed_planes.hpp) or the row slide.
    Rows of whole lines and not, the output on a line and 16 bytes past one, one and two
    threads, whole grids and regions of whole rows cut in x and y: bit for bit the
    reference, nothing outside the region written."""
    _, level2, _ = hf._core.cache_sizes()
    stencil = make_stencil(radius, symmetric=radius != 2)
    itemsize = 16 if dtype == "complex128" else 8
    for nz in (64 // itemsize * 4, 64 // itemsize * 4 + 3):
        ny = 12
        nx = int(0.75 * level2) // (ny * nz * itemsize)  # the output three quarters of the L2
        shape = (nx, ny, nz)
        assert nx * ny * nz * itemsize <= level2 < (nx * ny * nz + np.prod([n + 2 * radius for n in shape])) * itemsize
        padded = random_padded(shape, radius, dtype, seed=radius * 10 + nz)
        expected = hf.reference.apply_padded(stencil, padded)
        for misalignment in (0, 16):
            for threads in (1, 2):
                out = misaligned_view(shape, dtype, misalignment)
                apply_padded(stencil, padded, out, threads=threads, from_memory=from_memory)
                where = f"{shape}, output {misalignment} bytes past a line, {threads} threads"
                np.testing.assert_array_equal(out, expected, err_msg=where)
            begin, extent = (1, 2, 0), (nx - 3, ny - 5, nz)
            out = misaligned_view(shape, dtype, misalignment)
            out[...] = np.nan
            apply_padded(stencil, padded, out, region=(begin, extent), from_memory=from_memory)
            assert_region_written(out, expected, begin, extent)


@pytest.mark.parametrize("symmetric", [False, True], ids=["general", "symmetric"])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("radius", [1, 2, 3])
def test_streamed_planes_every_row_length_band_and_plane_count(dtype, radius, symmetric):
    """Grids larger than the L2 from memory, which an AVX-512 build sweeps in rows of three
    planes at a time, in bands of rows, prefetching the next step's planes
    (streamed_planes.hpp; an AVX2 build slides rows, row_slide.hpp): rows of every length
    modulo 8 lanes (the last vectors masked),
    about two and a half bands of rows (bands fit 2r + 6 planes' rows in half the L2),
    plane counts of every remainder modulo 3, over one and two threads (x-slabs that start
    mid-grid), and regions of whole rows cut in x and y."""
    level2 = os.sysconf("SC_LEVEL2_CACHE_SIZE") if "SC_LEVEL2_CACHE_SIZE" in os.sysconf_names else 0
    level2 = level2 if level2 > 0 else 1 << 20
    stencil = make_stencil(radius, symmetric)
    itemsize = 16 if dtype == "complex128" else 8
    for index, nz in enumerate([1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 24, 31, 47]):
        row_bytes = (nz + 2 * radius) * itemsize
        band = max(radius, level2 // 2 // ((2 * radius + 6) * row_bytes) - 2 * radius)
        ny = 5 * band // 2 + 1
        nx = level2 // (ny * nz * itemsize) + 1
        nx += (index - nx) % 3  # every remainder modulo 3 in turn
        shape = (nx, ny, nz)
        padded = random_padded(shape, radius, dtype, seed=radius * 100 + nz)
        expected = hf.reference.apply_padded(stencil, padded)
        for threads in (1, 2):
            out = apply_padded(stencil, padded, threads=threads, from_memory=True)
            np.testing.assert_array_equal(out, expected, err_msg=f"{shape}, {threads} threads")
        begin, extent = (1, band - 1, 0), (nx - 2, ny - band, nz)
        out = np.full(shape, np.nan, dtype=dtype)
        apply_padded(stencil, padded, out, region=(begin, extent), from_memory=True)
        assert_region_written(out, expected, begin, extent)


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("radius", [1, 2, 3])
def test_streamed_planes_at_every_offset_in_a_line(dtype, radius):
    """Rows whole cache lines apart (padded rows of a multiple of 8 float64 lanes: 4
    complex128 points), which the three-plane sweep starts with a masked vector up to the next line
    (streamed_planes.hpp), where the output allows it: input and output at every offset
    in a line the dtype allows, whole grids and regions that start and end mid-vector, bit
    for bit the reference and nothing outside the region written."""
    level2 = os.sysconf("SC_LEVEL2_CACHE_SIZE") if "SC_LEVEL2_CACHE_SIZE" in os.sysconf_names else 0
    level2 = level2 if level2 > 0 else 1 << 20
    stencil = make_stencil(radius, symmetric=radius != 2)
    itemsize = 16 if dtype == "complex128" else 8
    nz = 24 - 2 * radius if dtype == "complex128" else 40 - 2 * radius
    assert (nz + 2 * radius) * itemsize % 64 == 0
    ny = 9
    shape = (level2 // (ny * nz * itemsize) + 2, ny, nz)
    source = random_padded(shape, radius, dtype, seed=radius * 7 + nz)
    expected = hf.reference.apply_padded(stencil, source)
    begin, extent = (1, 2, 3), (shape[0] - 2, ny - 3, nz - 5)
    for input_offset in range(0, 64, itemsize):
        padded = misaligned_view(source.shape, dtype, input_offset)
        padded[...] = source
        for output_offset in range(0, 64, itemsize):
            out = misaligned_view(shape, dtype, output_offset)
            apply_padded(stencil, padded, out, from_memory=True)
            np.testing.assert_array_equal(out, expected, err_msg=f"input at {input_offset}, output at {output_offset}")
            out[...] = np.nan
            apply_padded(stencil, padded, out, region=(begin, extent), from_memory=True)
            assert_region_written(out, expected, begin, extent)


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("radius", range(1, 7))
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_any_region_any_threads_equals_the_whole_box(dtype, radius, threads):
    """Regions 1, 2 or 3 points thick and of odd sizes, split over threads: each point as
    computed with the whole box, and nothing outside the region written."""
    rng = np.random.default_rng(radius * 10 + threads)
    shape = (11, 6, 23)
    stencil = make_stencil(radius, symmetric=radius % 2 == 0)
    padded = random_padded(shape, radius, dtype, seed=radius)
    whole = apply_padded(stencil, padded)
    for _ in range(12):
        extent = tuple(int(rng.choice([1, 2, 3, int(rng.integers(1, n + 1))])) for n in shape)
        begin = tuple(int(rng.integers(0, n - e + 1)) for n, e in zip(shape, extent, strict=True))
        out = np.full(shape, np.nan, dtype=dtype)
        apply_padded(stencil, padded, out, region=(begin, extent), threads=threads)
        assert_region_written(out, whole, begin, extent)


@pytest.mark.parametrize("symmetric", [False, True], ids=["general", "symmetric"])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("radius", [1, 2, 3])
def test_every_column_width_and_band_equals_the_reference(dtype, radius, symmetric):
    """Grids in cache, which an AVX-512 build sweeps in columns of 8 lanes along y, two
    planes at a time, in bands of rows (column_sweep.hpp; an AVX2 build slides rows,
    row_slide.hpp): rows of every length modulo 8 lanes (the last column masked), an
    odd number of planes, more rows than one band holds (bands fit 2r + 2 planes' rows in
    the L1: with a 32-48 KiB L1, 2-34 rows of 40 and 47 lanes), and regions that start
    and end at every lane modulo 8; from memory, output rows of whole lines streamed."""
    stencil = make_stencil(radius, symmetric)
    for nz in [*range(1, 18), 40, 47]:
        shape = (6, 75, nz)
        padded = random_padded(shape, radius, dtype, seed=radius * 100 + nz)
        whole = apply_padded(stencil, padded)
        np.testing.assert_array_equal(whole, hf.reference.apply_padded(stencil, padded), err_msg=f"{shape}")
        # From memory the columns prefetch the next x-step's planes (every two-plane step
        # but the last); the values must not change.
        np.testing.assert_array_equal(apply_padded(stencil, padded, from_memory=True), whole, err_msg=f"{shape}")
        for from_memory in (False, True):
            begin = (1, 3, nz // 3)
            extent = (5 - from_memory, 70, nz - nz // 3 - (nz > 2))
            out = np.full(shape, np.nan, dtype=dtype)
            apply_padded(stencil, padded, out, region=(begin, extent), from_memory=from_memory)
            assert_region_written(out, whole, begin, extent)
        if nz * np.dtype(dtype).itemsize % 64 == 0:
            # Output rows of whole lines, on a line: from memory the columns stream them,
            # here a region of whole rows cut in x and y.
            out = empty_aligned(shape, dtype)
            out[...] = np.nan
            begin, extent = (1, 3, 0), (4, 70, nz)
            apply_padded(stencil, padded, out, region=(begin, extent), from_memory=True)
            assert_region_written(out, whole, begin, extent)


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("radius", [1, 2])
def test_grid_from_memory_taller_than_a_band_equals_the_reference(dtype, radius):
    """A grid from memory slides in bands of y rows that fit half the core's share of the
    last-level cache (row_slide.hpp, from_memory_blocking_budget_bytes; an AVX-512 build
    sweeps padded grids in three planes at a time instead, and its bands fit the L2):
    here two bands and a half, the whole grid on one and two threads (streamed output),
    a region of whole rows that starts and ends inside bands, and one that cuts rows
    (plain stores)."""
    _, level2, last_level_share = hf._core.cache_sizes()
    nz = 7
    lanes = 2 if dtype == "complex128" else 1
    row_bytes = (nz + 2 * radius) * lanes * 8
    planes_read = 2 * radius + 2 if lanes == 1 else 2 * radius + 1
    band = max(level2, last_level_share) // 2 // (planes_read * row_bytes) - 2 * radius
    shape = (3, 5 * band // 2, nz)
    stencil = make_stencil(radius, symmetric=True)
    padded = random_padded(shape, radius, dtype, seed=radius + 10)
    expected = hf.reference.apply_padded(stencil, padded)
    for threads in (1, 2):
        out = apply_padded(stencil, padded, threads=threads, from_memory=True)
        np.testing.assert_array_equal(out, expected, err_msg=f"{shape}, {threads} threads")
    for begin, extent in (((1, band // 2, 0), (2, band + 9, nz)), ((0, band - 3, 2), (3, band + 5, nz - 3))):
        out = np.full(shape, np.nan, dtype=dtype)
        apply_padded(stencil, padded, out, region=(begin, extent), from_memory=True)
        assert_region_written(out, expected, begin, extent)


@pytest.mark.parametrize("form", ["general", "symmetric", "isotropic"])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("radius", [1, 2])
def test_grid_in_cache_taller_than_a_band_equals_the_reference(dtype, radius, form):
    """A padded grid applied in cache (from_memory False) is swept in bands of y rows that
    fit the L2 (row_slide.hpp, slide_padded_in_cache): here three bands and a part, the
    whole grid and a region that starts and ends inside bands, an odd number of planes."""
    level2 = hf._core.cache_sizes()[1]
    nz = 21
    lanes = 2 if dtype == "complex128" else 1
    row_bytes = (nz + 2 * radius) * lanes * 8
    band = level2 // 2 // ((2 * radius + 2) * row_bytes) - 2 * radius  # two planes at a time
    shape = (3, 3 * band + band // 2, nz)
    if form == "isotropic":
        stencil = hf.Stencil.laplace(radius, 0.7)
    else:
        stencil = make_stencil(radius, form == "symmetric")
    padded = random_padded(shape, radius, dtype, seed=radius)
    whole = apply_padded(stencil, padded, from_memory=False)
    np.testing.assert_array_equal(whole, hf.reference.apply_padded(stencil, padded))
    begin, extent = (1, band // 2, 3), (1, 2 * band + 7, nz - 5)
    out = np.full(shape, np.nan, dtype=dtype)
    apply_padded(stencil, padded, out, region=(begin, extent), from_memory=False)
    assert_region_written(out, whole, begin, extent)


@pytest.mark.parametrize(
    ("region", "match"),
    [
        (
            ((0, 0, 0), (12, 6, 23)),
            r"region at \(0, 0, 0\) of extent \(12, 6, 23\) is not inside the box \(11, 6, 23\)",
        ),
        (((-1, 0, 0), (2, 2, 2)), r"region at \(-1, 0, 0\)"),
        (((0, 5, 0), (1, 2, 1)), r"of extent \(1, 2, 1\) is not inside"),
    ],
)
def test_region_outside_the_box_is_refused(region, match):
    stencil = make_stencil(2, symmetric=True)
    padded = random_padded((11, 6, 23), 2, "float64", seed=0)
    with pytest.raises(ValueError, match=match):
        apply_padded(stencil, padded, np.zeros((11, 6, 23)), region=region)
    with pytest.raises(ValueError, match="threads 0 must be at least 1"):
        apply_padded(stencil, padded, threads=0)
    with pytest.raises(TypeError, match="from_memory must be a bool or None, got 'yes'"):
        apply_padded(stencil, padded, from_memory="yes")


@pytest.mark.parametrize(
    ("arguments", "error", "match"),
    [
        # begin + extent would overflow int64 and pass a naive bound check.
        ({"region": ((2**62, 0, 0), (2**62, 1, 1))}, ValueError, r"region at \(4611686018427387904, 0, 0\)"),
        ({"region": ((0, 0), (1, 1, 1))}, TypeError, r"region must be \(\(x0, y0, z0\), \(ex, ey, ez\)\)"),
        ({"region": "all"}, TypeError, "region must be .* got 'all'"),
        ({"threads": 2.0}, TypeError, "threads must be an int .* got 2.0"),
        ({"threads": 10**9}, ValueError, "threads 1000000000 is more than the .* threads this process may start"),
        ({"stencil": None}, TypeError, "stencil must be a hybridfd.Stencil, got NoneType"),
    ],
)
def test_bad_kernel_arguments_are_named(arguments, error, match):
    padded = random_padded((4, 4, 4), 1, "float64", seed=0)
    arguments = {"stencil": make_stencil(1, symmetric=True), **arguments}
    out = np.full((4, 4, 4), 7.0)
    with pytest.raises(error, match=match):
        apply_padded(arguments.pop("stencil"), padded, out, **arguments)
    assert (out == 7.0).all()  # nothing was written
