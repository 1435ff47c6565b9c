"""The table of benchmarks/simulated_sensitivity.py from hand-made rows: the five headline
columns at the largest core count, a speedup column per core count between the ends, and
the "needed" values interpolated between the simulated knob values."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import simulated_sensitivity as sensitivity  # noqa: E402


def rows_of(times: dict[tuple[float, str, int], float]) -> list[dict[str, Any]]:
    """Overhead rows with ms per apply ``times[(value, approach, cores)]``."""
    return [
        {"knob": "overhead", "value_s": value, "approach": approach, "cores": cores, "ms": ms}
        for (value, approach, cores), ms in times.items()
    ]


def cells(table: str, first: str) -> list[str]:
    """The cells after knob and value of the table's line that starts with ``first``."""
    line = next(line for line in table.splitlines() if line.startswith(first))
    return [cell.strip() for cell in line.strip("|").split("|")][2:]


def compute_ms(cores: int) -> float:
    """The apply's compute time alone (what the utilisations divide by)."""
    speed = sensitivity.experiments.MACHINES["bluegene-p"].core_speed
    return 1e3 * sensitivity.GRIDS * sensitivity.SHAPE**3 * sensitivity.FLOPS_PER_POINT / cores / speed


def test_a_middle_core_count_adds_its_speedup_column_and_keeps_the_largest_counts_columns() -> None:
    high = compute_ms(16384)
    times = {}
    for value, slow in ((0.0, 1.0), (1e-4, 1.5)):  # at 100 us everything at 16k is 1.5x slower
        times[(value, "hybrid-multiple", 1024)] = 16 * high
        times[(value, "hybrid-multiple", 4096)] = 4 * high * (1.0 if value == 0 else 1.25)
        times[(value, "hybrid-multiple", 16384)] = high * slow
        times[(value, "flat-original", 16384)] = 2 * high * slow
        times[(value, "flat-optimized", 16384)] = high * slow * (1.0 if value == 0 else 1.2)
    table = sensitivity.table(rows_of(times), 1024, 16384, [1024, 4096, 16384])
    header = table.splitlines()[0]
    assert "hybrid-multiple speedup 1,024->4,096 (x 4 cores) | hybrid-multiple speedup 1,024->16,384" in header
    assert cells(table, "| overhead | 0 us") == ["4.00", "16.00", "100%", "50%", "2.00x", "1.00x"]
    assert cells(table, "| overhead | 100 us") == ["3.20", "10.67", "67%", "33%", "2.00x", "1.20x"]
    # the paper gives no value at the middle count: neither it nor a needed value has a cell
    assert cells(table, "| paper")[0] == ""
    need = cells(table, "| overhead: needed")
    assert need[0] == ""
    # utilisation of flat-original: 50 % at 0, 33.3 % at 100 us: 36 % at 84 us
    assert need[3] == "84 us"


def test_without_a_middle_core_count_the_table_is_the_two_ends() -> None:
    high = compute_ms(16384)
    times = {
        (value, approach, cores): ms
        for value in (0.0, 1e-4)
        for (approach, cores), ms in {
            ("hybrid-multiple", 1024): 16 * high,
            ("hybrid-multiple", 16384): high * (1 + 1e4 * value),
            ("flat-original", 16384): 2 * high,
            ("flat-optimized", 16384): high,
        }.items()
    }
    two_ends = sensitivity.table(rows_of(times), 1024, 16384)
    assert two_ends == sensitivity.table(rows_of(times), 1024, 16384, [1024, 16384])
    assert cells(two_ends, "| overhead | 100 us")[0] == "8.00"
    assert len(cells(two_ends, "| paper")) == 5


def test_the_halo_copy_knob_charges_every_approach_through_the_machine(monkeypatch) -> None:
    """A halo-copy point simulates with Machine.halo_copy at the value (the driver's
    --halo-copy-per-lane, part of the cache key), for every approach; its rows are written
    in ns and the needed values interpolated like the other knobs'."""
    seen = []

    def fake_simulate(approach, cores, grids, cache, driver, machine, **_) -> tuple[float, float]:
        seen.append((approach, machine.halo_copy, machine.driver_arguments()))
        return 100.0 + grids, 0.0

    monkeypatch.setattr(sensitivity, "simulate_point", fake_simulate)
    for approach in sensitivity.PAYS["halo-copy"]:
        row = sensitivity.point("halo-copy", 84.19e-9, approach, 16384, Path("."), Path("."))
        assert row["halo_copy_s"] == 84.19e-9 and row["knob"] == "halo-copy"
    assert {approach for approach, _, _ in seen} == {"hybrid-multiple", "flat-original", "flat-optimized"}
    assert all(value == 84.19e-9 and arguments == ["--halo-copy-per-lane", "8.419e-08"] for _, value, arguments in seen)

    high = compute_ms(16384)
    times = {}
    for value, slow in ((0.0, 1.0), (1e-7, 2.0)):
        times[(value, "hybrid-multiple", 1024)] = 16 * high * (1.0 if value == 0 else 1.5)
        times[(value, "hybrid-multiple", 16384)] = high * slow
        times[(value, "flat-original", 16384)] = 2 * high * slow
        times[(value, "flat-optimized", 16384)] = high * slow
    rows = [
        {"knob": "halo-copy", "value_s": value, "approach": approach, "cores": cores, "ms": ms}
        for (value, approach, cores), ms in times.items()
    ]
    table = sensitivity.table(rows, 1024, 16384)
    assert cells(table, "| halo-copy | 100 ns") == ["12.00", "50%", "25%", "2.00x", "1.00x"]
    # hybrid-multiple's utilisation: 100 % at 0, 50 % at 100 ns: 70 % at 60 ns
    assert cells(table, "| halo-copy: needed")[1] == "60 ns"
