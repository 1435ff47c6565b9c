"""How the simulated Fig. 7.4 headline numbers (2,816 grids of 192^3, 1,024 to 16,384 Blue
Gene/P cores) move when a cost that the model charges at microseconds is raised: a
sensitivity study, not a fit (docs/simulation.md, "Sensitivity: what would the paper's
16k numbers need?").

Four knobs, each raised alone over a few values, everything else as in the default model:

- ``overhead``: CPU time per message, both ends' shares together, charged to the sender
  at each MPI_Isend (``Machine.message_overhead`` = value / 2 at each end, which SMPI
  charges as smpi/ois; every rank sends as many halo messages as it receives). The
  default model's value is 2 x 1.5 us = 3 us; 0 is the model without it (no per-message
  CPU cost at all). Every approach pays it.
- ``batch-sync``: a cost per batch step charged to hybrid-multiple's ranks
  (``experiments.plan(batch_sync=)``, the driver's ``--sync-per-batch``; 0 by default:
  the model charges one team join per apply). It stands for what the paper names as
  hybrid-multiple's own cost, the MPI_THREAD_MULTIPLE locking (GPAW journal Sect. 3.1),
  or any other cost per batch. The flat approaches do not pay it.
- ``unhidden``: 0, the model (SMPI moves a message while its ranks compute, so double
  buffering hides the exchange of batch k+1 behind the compute of batch k); 1, nothing
  hidden: hybrid-multiple and flat-optimized run with the ``all-dims`` schedule
  (``--schedule``), which exchanges each batch before computing it. It stands for an
  MPI library that moves a message only inside its calls: its share of the exchange BG/P
  did not hide.
  flat-original hides nothing either way (serial-dims). Only the two ends are simulated;
  the "needed" share interpolates between them.
- ``halo-copy``: CPU time per halo lane a rank packs, the copy into the message and the
  receiver's copy out of it, charged to the sender when it packs a batch
  (``Machine.halo_copy``, the driver's ``--halo-copy-per-lane``; 0 in the default
  model). Unlike the costs above it grows with a rank's faces, not with its messages or
  batches. benchmarks/simulated_halo_copy.py derives a value from the GPAW journal's own
  9 ms (Fig. 7.2's point at 2,048 cores, the one the core speed is calibrated on). Every
  approach pays it.

``--placement`` places the flat approaches' ranks (hybridfd.simulate.placement, e.g.
``bluegene-p``: what BG/P's MPI_Cart_create does); their rows record it, and one output
file holds one placement per approach (the hybrid approaches keep their own).

Every row records the per-message cost it was simulated with (``message_overhead_s``):
the batch-sync rows run the default model, so rows of a model without that cost (no
such field) are not mixed with new ones: an output file holding them is refused.

Each point is the line T(G) = a + b G of hybridfd.simulate.lines (the grid counts of
Fig. 7.4: `hybridfd bench scalability --simulate bluegene-p --line-from C`) evaluated at
G = 2,816; every simulated point is cached, so the default model's points are those of
that command.
The table gives, per knob value, the four numbers the paper reports at 16,384 cores and
the values of each knob that would give each of them (linear interpolation between the
simulated values; "none in range" where no simulated value brackets it). Core counts
between the smallest and the largest (``--cores 1024 4096 16384``) add, first, a column of
hybrid-multiple's speedup from the smallest to each: whether a cost that gives the
paper's 16k number also gives a curve of its shape (the paper gives no value there).

    nice -n 10 .venv/bin/python benchmarks/simulated_sensitivity.py --cores 1024 16384 \\
        --overheads-us 0 100 --batch-syncs-us 0 800 --unhidden --placement bluegene-p \\
        -o benchmarks/results/simulated_sensitivity_charged_bluegene_p.json

(the unhidden knob's rows are in simulated_sensitivity_unhidden_bluegene_p.json). The
halo copy's rows:

    nice -n 10 .venv/bin/python benchmarks/simulated_sensitivity.py --cores 1024 4096 16384 \
        --overheads-us --batch-syncs-us --unhidden --halo-copies-ns 0 84.19 \
        --placement bluegene-p -o benchmarks/results/simulated_sensitivity_halo_copy_bluegene_p.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

from hybridfd.experiments._stencil import model_of
from hybridfd.perfmodel.store import cache_dir
from hybridfd.simulate import experiments, lines, smpi
from hybridfd.simulate.lines import FLOPS_PER_POINT, GRIDS, SHAPE, simulate_point
from hybridfd.simulate.placement import PLACEMENTS

#: The papers' numbers at 16,384 cores (GPAW journal Sect. 7.2 and 8).
PAPER = {
    "speedup": (12.0, 12.5),  # hybrid-multiple, 1,024 to 16,384 cores ("12-12.5")
    "utilisation_multiple": (0.70, 0.70),  # hybrid-multiple's CPU utilisation
    "utilisation_original": (0.36, 0.36),  # flat-original's
    "original_over_multiple": (1.94, 1.94),  # "94 % performance gain"
    "optimized_over_multiple": (1.10, 1.10),  # hybrid-multiple "about 10 % faster" than flat-optimized
}
DEFAULTS = {
    "overhead": experiments.MACHINES["bluegene-p"].per_message_charge,
    "batch-sync": 0.0,
    "unhidden": 0.0,
    "halo-copy": experiments.MACHINES["bluegene-p"].halo_copy,
}
#: Which approaches each knob acts on (the others' rows are the knob's default).
PAYS = {
    "overhead": ("hybrid-multiple", "flat-original", "flat-optimized"),
    "batch-sync": ("hybrid-multiple",),
    "unhidden": ("hybrid-multiple", "flat-optimized"),
    "halo-copy": ("hybrid-multiple", "flat-original", "flat-optimized"),
}
#: How each knob's value (seconds, or a share) is written: scale and unit.
UNITS = {"overhead": (1e6, " us"), "batch-sync": (1e6, " us"), "unhidden": (1.0, ""), "halo-copy": (1e9, " ns")}


def written(knob: str, value: float) -> str:
    scale, unit = UNITS[knob]
    return f"{scale * value:g}{unit}"


def point(
    knob: str, value: float, approach: str, cores: int, cache: Path, driver: Path, placement: str = "packed"
) -> dict[str, Any]:
    """The line of ``approach`` on ``cores`` cores with ``knob`` at ``value`` (seconds; for
    ``unhidden`` a share, 0 or 1, in the rows' ``value_s`` all the same); a flat
    approach's ranks placed by ``placement``."""
    machine = experiments.MACHINES["bluegene-p"]
    batch_sync, schedule = 0.0, None
    if knob == "overhead":
        machine = dataclasses.replace(machine, message_overhead=value / 2)
    elif knob == "batch-sync" and approach == "hybrid-multiple":
        batch_sync = value
    elif knob == "unhidden" and value and approach in PAYS[knob]:
        schedule = "all-dims"
    elif knob == "halo-copy":
        machine = dataclasses.replace(machine, halo_copy=value)
    points, wall = [], 0.0
    for grids in lines.grid_counts(approach, cores):
        ms, seconds = simulate_point(
            approach,
            cores,
            grids,
            cache,
            driver,
            machine=machine,
            batch_sync=batch_sync,
            placement=placement,
            schedule=schedule,
        )
        points.append((grids, ms))
        wall += seconds
    line = lines.fit(points)
    compute_ms = 1e3 * GRIDS * SHAPE**3 * FLOPS_PER_POINT / cores / machine.core_speed
    return {
        "knob": knob,
        "value_s": value,
        "approach": approach,
        "cores": cores,
        **({"placement": placement} if placement != "packed" else {}),
        **line.as_dict(),
        "ms": line.at(GRIDS),
        "compute_ms": compute_ms,
        "message_overhead_s": machine.message_overhead,
        "halo_copy_s": machine.halo_copy,
        "wall_s": wall,
    }


def row_ms(rows: list[dict[str, Any]], knob: str, value: float, approach: str, cores: int) -> float | None:
    """ms per apply of ``approach`` on ``cores`` cores at one knob value (None where the row is
    missing); an approach the knob does not act on has its row at the knob's default."""
    paid = value if approach in PAYS[knob] else DEFAULTS[knob]
    key = (knob, paid, approach, cores)
    found = [r for r in rows if (r["knob"], r["value_s"], r["approach"], r["cores"]) == key]
    return found[0]["ms"] if found else None


def headline(rows: list[dict[str, Any]], knob: str, value: float, low: int, high: int) -> dict[str, float | None]:
    """The paper's five numbers from the rows of one knob value (None where a row is missing)."""

    def ms(approach: str, cores: int) -> float | None:
        return row_ms(rows, knob, value, approach, cores)

    def compute(cores: int) -> float:
        return 1e3 * GRIDS * SHAPE**3 * FLOPS_PER_POINT / cores / experiments.MACHINES["bluegene-p"].core_speed

    multiple_low, multiple, original, optimized = (
        ms("hybrid-multiple", low),
        ms("hybrid-multiple", high),
        ms("flat-original", high),
        ms("flat-optimized", high),
    )
    return {
        "speedup": multiple_low / multiple if multiple_low and multiple else None,
        "utilisation_multiple": compute(high) / multiple if multiple else None,
        "utilisation_original": compute(high) / original if original else None,
        "original_over_multiple": original / multiple if original and multiple else None,
        "optimized_over_multiple": optimized / multiple if optimized and multiple else None,
    }


def needed(knob: str, values: list[float], numbers: list[float | None], target: float) -> str:
    """The knob value where ``numbers`` (one per value) reaches ``target``, interpolated
    linearly between the two simulated values that bracket it; else which way it lies."""
    pairs = [(v, n) for v, n in zip(values, numbers, strict=True) if n is not None]
    for (v1, n1), (v2, n2) in zip(pairs, pairs[1:], strict=False):
        if min(n1, n2) <= target <= max(n1, n2) and n1 != n2:
            scale, unit = UNITS[knob]
            return f"{scale * (v1 + (target - n1) * (v2 - v1) / (n2 - n1)):.{0 if scale > 1 else 2}f}{unit}"
    if len(pairs) < 2:
        return "-"
    (v_first, n_first), (v_last, n_last) = pairs[0], pairs[-1]
    if abs(n_last - n_first) < 1e-9 * abs(n_first):
        return "not reached (unchanged)"
    if (n_last - n_first) * (target - n_last) > 0:  # still ahead in the direction the knob moves it
        return f"> {written(knob, v_last)}"
    return f"not reached ({written(knob, v_first)}-{written(knob, v_last)} move it away)"


def speedups(rows: list[dict[str, Any]], knob: str, value: float, low: int, middle: list[int]) -> list[float | None]:
    """hybrid-multiple's speedup from ``low`` to each ``middle`` core count at one knob value
    (None where a row is missing): where the curve runs between the ends."""
    base = row_ms(rows, knob, value, "hybrid-multiple", low)
    times = [row_ms(rows, knob, value, "hybrid-multiple", cores) for cores in middle]
    return [base / m if base and m else None for m in times]


def table(rows: list[dict[str, Any]], low: int, high: int, middle: list[int] | None = None) -> str:
    """Markdown: per knob value the five numbers, then the values each would need. With
    ``middle`` core counts, hybrid-multiple's speedup from ``low`` to each comes first (the
    paper gives only the 16k end of it, so no value is "needed" there); the five columns
    keep their meaning at ``high``."""
    middle = sorted(c for c in (middle or []) if low < c < high)
    formats = {
        "speedup": "{:.2f}",
        "utilisation_multiple": "{:.0%}",
        "utilisation_original": "{:.0%}",
        "original_over_multiple": "{:.2f}x",
        "optimized_over_multiple": "{:.2f}x",
    }
    titles = [f"hybrid-multiple speedup {low:,}->{c:,} (x {c // low} cores)" for c in middle] + [
        f"hybrid-multiple speedup {low:,}->{high:,} (x {high // low} cores)",
        f"hybrid-multiple utilisation at {high:,}",
        f"flat-original utilisation at {high:,}",
        f"flat-original / hybrid-multiple at {high:,}",
        f"flat-optimized / hybrid-multiple at {high:,}",
    ]
    lines_out = ["| knob | value | " + " | ".join(titles) + " |", "| --- " * (2 + len(titles)) + "|"]
    paper = [
        f"{formats[k].format(lo)}" + (f"-{formats[k].format(hi)}" if hi != lo else "") for k, (lo, hi) in PAPER.items()
    ]
    lines_out.append("| paper | | " + " | ".join([""] * len(middle) + paper) + " |")
    for knob in UNITS:
        values = sorted({r["value_s"] for r in rows if r["knob"] == knob})
        if not values:
            continue
        numbers = {v: headline(rows, knob, v, low, high) for v in values}
        for v in values:
            cells = [f"{n:.2f}" if n is not None else "-" for n in speedups(rows, knob, v, low, middle)]
            cells += [formats[k].format(n) if n is not None else "-" for k, n in numbers[v].items()]
            lines_out.append(f"| {knob} | {written(knob, v)} | " + " | ".join(cells) + " |")
        need = [""] * len(middle)
        for k, (lo, hi) in PAPER.items():
            series = [numbers[v][k] for v in values]
            need.append(" / ".join(dict.fromkeys(needed(knob, values, series, t) for t in (lo, hi))))
        lines_out.append(f"| {knob}: needed for the paper's | | " + " | ".join(need) + " |")
    return "\n".join(lines_out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--cores",
        type=int,
        nargs="+",
        default=[1024, 16384],
        help="the smallest is the speedup's base and the largest the headline numbers'; any between adds a "
        "column of hybrid-multiple's speedup to it",
    )
    parser.add_argument(
        "--approaches",
        nargs="+",
        default=["hybrid-multiple", "flat-original", "flat-optimized"],
        choices=list(lines.POINTS),
    )
    parser.add_argument("--overheads-us", type=float, nargs="*", default=[0, 3, 10, 30, 100], metavar="US")
    parser.add_argument("--batch-syncs-us", type=float, nargs="*", default=[0, 50, 200, 800], metavar="US")
    parser.add_argument(
        "--unhidden", type=int, nargs="*", default=[0, 1], choices=[0, 1], help="0: the model; 1: nothing hidden"
    )
    parser.add_argument(
        "--halo-copies-ns",
        type=float,
        nargs="*",
        default=[0, 84.19],
        metavar="NS",
        help="CPU time per halo lane packed (both ends' copies); 84.19 ns: benchmarks/simulated_halo_copy.py",
    )
    parser.add_argument(
        "--placement",
        default="packed",
        choices=PLACEMENTS,
        help="where the flat approaches' ranks sit (hybridfd.simulate.placement); default packed",
    )
    parser.add_argument("--cache", default=str(cache_dir() / "simulate"))
    parser.add_argument("--driver", default=str(smpi.DRIVER_IN_CHECKOUT))
    parser.add_argument("-o", "--output", help="JSON file of the rows (kept: a re-run adds what is missing)")
    args = parser.parse_args(argv)
    cache, driver = Path(args.cache), Path(args.driver)
    rows: list[dict[str, Any]] = []
    if args.output and Path(args.output).exists():
        rows = json.loads(Path(args.output).read_text())["rows"]
        if any("message_overhead_s" not in r for r in rows):
            parser.error(
                f"{args.output} holds rows simulated before the per-message cost was charged "
                "(no message_overhead_s): write to another file"
            )

    def placed(approach: str) -> str:
        return args.placement if model_of(approach) == "flat" else "packed"

    others = {(r["approach"], r.get("placement", "packed")) for r in rows} - {
        (r["approach"], placed(r["approach"])) for r in rows
    }
    if others:
        parser.error(f"{args.output} holds rows of other placements {sorted(others)}: write to another file")
    plan = [("overhead", 1e-6 * v) for v in args.overheads_us] + [("batch-sync", 1e-6 * v) for v in args.batch_syncs_us]
    plan += [("unhidden", float(v)) for v in args.unhidden] + [("halo-copy", 1e-9 * v) for v in args.halo_copies_ns]
    for cores in sorted(args.cores):  # the cheap core counts first: a stopped run leaves whole columns
        for knob, value in plan:
            for approach in args.approaches:
                if approach not in PAYS[knob] and value != DEFAULTS[knob]:
                    continue  # the knob does not act on this approach: its default row stands
                if any(
                    (r["knob"], r["value_s"], r["approach"], r["cores"]) == (knob, value, approach, cores) for r in rows
                ):
                    continue
                start = time.perf_counter()
                rows.append(point(knob, value, approach, cores, cache, driver, placed(approach)))
                print(
                    f"{knob} {written(knob, value)} {approach} {cores}: {rows[-1]['ms']:.1f} ms "
                    f"(check {rows[-1]['check_relative']:+.2%}; {time.perf_counter() - start:.0f} s wall)",
                    flush=True,
                )
                if args.output:
                    Path(args.output).write_text(json.dumps({"grids": GRIDS, "shape": SHAPE, "rows": rows}, indent=1))
    print(table(rows, min(args.cores), max(args.cores), args.cores))
    return 0


if __name__ == "__main__":
    sys.exit(main())
