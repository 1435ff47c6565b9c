"""hybridfd-bench, the pure C++ driver (cpp/tools): built against the installed core as a
C++ user would, run under mpiexec on 2 ranks, it prints a result record that matches the
CLI's schema, its result is bit-identical to the stencil evaluated on its formula field,
and its checksum equals both the numpy reference's and the Python Operator's on the same
configuration (hybridfd.simulate.driver mirrors the field and the checksum)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from _cpp_build import build_against

from hybridfd import launch, results
from hybridfd.simulate import driver

# Each configuration: problem and operator options, as hybridfd-bench and `hybridfd run` take them.
CONFIGURATIONS = {
    "flat-original": ["--grids", "3", "--shape", "12", "10", "9"],
    "flat-optimized-complex-sloped": [
        *("--approach", "flat-optimized", "--grids", "5", "--shape", "11", "--dtype", "complex128"),
        *("--periodic", "xz", "--batch", "2", "--slope", "1"),
    ],
    "hybrid-multiple-nonperiodic-uneven": [
        *("--approach", "hybrid-multiple", "--threads", "2", "--grids", "4", "--shape", "9", "13", "10"),
        *("--periodic", "none", "--grid", "1", "2", "1"),
    ],
    "overlap-persistent-radius3": [
        *("--approach", "flat-optimized", "--schedule", "overlap", "--transport", "persistent", "--radius", "3"),
        *("--grids", "3", "--shape", "14", "--batch", "3", "--slope", "0"),
    ],
    # z cut: the z faces waited for before an interior of whole rows.
    "overlap-xy-z-cut-complex": [
        *("--approach", "flat-optimized", "--schedule", "overlap-xy", "--grid", "1", "1", "2"),
        *("--grids", "4", "--shape", "10", "9", "13", "--dtype", "complex128", "--batch", "2"),
    ],
}


@pytest.fixture(scope="module")
def bench(installed_core: tuple, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_against(installed_core, "tools", tmp_path_factory.mktemp("tools")) / "hybridfd-bench"


def launch_ok(ranks: int, argv: list[str]) -> str:
    result = launch.run(ranks, argv, timeout=180)
    assert not result.timed_out and result.returncode == 0, result.output
    return result.output


def record_of(output: str) -> dict:
    lines = [line for line in output.splitlines() if line.startswith('{"format"')]
    assert len(lines) == 1, output
    record = json.loads(lines[0])
    results.validate(record, "hybridfd-bench's record")
    return record


def option(arguments: list[str], name: str, default: str) -> list[str]:
    if name not in arguments:
        return [default]
    start = arguments.index(name) + 1
    end = next((i for i in range(start, len(arguments)) if arguments[i].startswith("--")), len(arguments))
    return arguments[start:end]


@pytest.mark.parametrize("name", CONFIGURATIONS)
def test_driver_checksum_equals_python_operator_and_reference(bench: Path, name: str) -> None:
    arguments = CONFIGURATIONS[name]
    record = record_of(launch_ok(2, [str(bench), *arguments, "--repeats", "2"]))
    (row,) = record["rows"]
    assert row["bit_identical_to_reference"] is True and row["max_relative_error"] == 0, row
    assert row["checksum"] == row["reference_checksum"], row
    assert row["ranks"] == 2 and row["compute"] == "real" and row["simulated"] is False
    assert len(row["samples_ms"]) == 2 and row["median_ms"] > 0

    shape = [int(n) for n in option(arguments, "--shape", "64")]
    periodic = option(arguments, "--periodic", "xyz")[0]
    expected = driver.reference_checksum(
        int(option(arguments, "--grids", "8")[0]),
        shape * 3 if len(shape) == 1 else shape,
        row["process_grid"],
        option(arguments, "--dtype", "float64")[0],
        tuple(axis in periodic for axis in "xyz"),
        int(option(arguments, "--radius", "2")[0]),
    )
    assert row["checksum"] == expected, (row["checksum"], expected)

    output = launch_ok(2, [sys.executable, "-m", "hybridfd.simulate.driver", *arguments])
    assert f"checksum {row['checksum']!r}" in output, (row["checksum"], output)


def test_grid_groups_each_own_their_share_of_the_grids(bench: Path) -> None:
    """--grid-groups 2 on 2 ranks (hybrid-multiple's model at scale): each rank is a group
    of its own with the whole box and grids 0-2 or 3-4; the result is the reference's and
    the checksum adds the groups' checksums in group order."""
    import hybridfd as hf

    arguments = ["--grids", "5", "--shape", "10", "9", "8", "--approach", "flat-optimized", "--grid-groups", "2"]
    (row,) = record_of(launch_ok(2, [str(bench), *arguments, "--repeats", "1"]))["rows"]
    assert row["bit_identical_to_reference"] is True and row["process_grid"] == [1, 1, 1], row
    expected = hf.reference.apply(hf.Stencil.laplace(2, 0.2), driver.field(5, (0, 0, 0), (10, 9, 8)), periodic=True)
    groups = [
        driver.partial_checksum(expected[0:3], (0, 0, 0), 0),
        driver.partial_checksum(expected[3:5], (0, 0, 0), 3),
    ]
    assert row["checksum"] == row["reference_checksum"] == driver.combine(groups)


def test_the_checksum_sees_a_wrong_point() -> None:
    values = driver.field(2, (1, 2, 3), (3, 4, 5), "complex128")
    changed = values.copy()
    changed[1, 2, 3, 4] += 1e-9
    assert driver.partial_checksum(values, (1, 2, 3)) != driver.partial_checksum(changed, (1, 2, 3))
    # a swap of two points changes it too: the weights depend on the position
    swapped = values.copy()
    swapped[0, 0, 0, 0], swapped[0, 0, 0, 1] = values[0, 0, 0, 1], values[0, 0, 0, 0]
    assert driver.partial_checksum(values, (1, 2, 3)) != driver.partial_checksum(swapped, (1, 2, 3))


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--batch", "0"], "--batch: 0 must be at least 1"),
        (["--batch", "99999999999"], "--batch: 99999999999 is out of range (at most 2147483647)"),
        (["--threads", "2x"], "--threads: '2x' is not a number"),
        (["--spacing", "inf"], "grid spacing (inf, inf, inf) must be positive and finite"),
        (["--output", "/proc/no-such-dir/run.json"], "cannot write --output /proc/no-such-dir/run.json"),
        (["--approach", "nope"], "nope"),
        (["--grid", "3", "1", "1", "--shape", "8"], "process grid (3, 1, 1)"),
        (["--compute", "modelled"], "SMPI"),
        (["--shape", "8", "8"], "--shape takes 1 or 3 values, got 2"),
        (["--grid-groups", "3"], "2 ranks do not split into groups of equal size"),
        (["--node-cores", "4"], "need --compute modelled"),
        (["--halo-copy-per-lane", "1e-7"], "--halo-copy-per-lane charges simulated CPU time: it needs --compute"),
        (["--halo-copy-per-lane", "-1"], "--halo-copy-per-lane: -1 must be at least"),
    ],
)
def test_bad_options_are_named_on_every_rank_without_hanging(bench: Path, arguments: list[str], message: str) -> None:
    result = launch.run(2, [str(bench), *arguments, "--grids", "1", "--repeats", "1"], timeout=60)
    assert not result.timed_out, result.output
    assert result.returncode == 2 and message in result.output, result.output


def test_grids_beyond_memory_are_named_before_allocating(bench: Path) -> None:
    result = launch.run(2, [str(bench), "--shape", "8", "--grids", "99999999999", "--repeats", "1"], timeout=60)
    assert not result.timed_out, result.output
    assert result.returncode == 2 and "--grids 99999999999 need" in result.output, result.output
