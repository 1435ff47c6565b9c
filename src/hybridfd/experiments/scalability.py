"""Scalability of a fixed many-grid job over increasing cores (GPAW journal Sect. 7.2, Fig. 7.4).

The paper: 2816 grids of 192^3 from 1024 to 16384 cores, every approach with its best
batch size, left the running times, right each approach relative to the fastest approach
on the fewest cores. Here by default 128 grids of 48^3 on 1 and 2 cores; ``--batches``
searches batch sizes per approach and keeps the fastest (the paper's "best batch-size"),
otherwise each approach runs its preset. Approaches come from the operator's registry
(``--approaches`` picks some).

Simulated (``--simulate bluegene-p``), the table adds each approach's CPU utilisation
(compute alone / time, the paper's right panel), and the figure draws it. Simulating all
2,816 grids takes hours at 1,024 cores and more (SMPI's wall time grows with the
messages), so ``--line-from C`` takes, at C cores and more, each approach's line T(G) = a
+ b G through three small grid counts (hybridfd.simulate.lines) at G = ``--grids``; the
"check" column says how far the line through the two larger counts misses the smallest.
A run without ``--line-from`` simulates every grid: the direct check of a line.
``--beside`` sets a saved run's flat rows of another ``--placement`` beside this run's
(Fig. 7.4 as docs/simulation.md draws it: packed ranks beside Blue Gene/P's placement).

    hybridfd bench scalability --simulate bluegene-p --shape 192 --grids 2816 --line-from 1024 \\
        --cores 1024 2048 4096 8192 16384 --placement bluegene-p --large -o DIR
"""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path
from typing import Any

from hybridfd._argtypes import positive_int
from hybridfd.experiments import ExperimentInputError, Outcome
from hybridfd.experiments._stencil import (
    BASELINE,
    add_problem_arguments,
    add_threads_argument,
    core_counts,
    run_all,
    variant,
)
from hybridfd.experiments._stencil import worker as worker
from hybridfd.simulate.experiments import MACHINES, job_settings
from hybridfd.simulate.experiments import notes as simulation_notes
from hybridfd.simulate.experiments import timing as simulation_timing
from hybridfd.simulate.lines import GRIDS, SHAPE, compute_ms, line_all

NAME = "scalability"
#: Core counts simulated by default (--simulate): they finish within minutes here
#: (docs/simulation.md); larger ones with --cores, above 4,096 ranks with --large.
SIMULATED_CORES = [1024, 2048]
SUMMARY = "fixed many-grid job over increasing cores, every approach (GPAW Fig. 7.4)"

#: The journal paper's CPU utilisations at 16,384 cores (Sect. 7.2, 8), the only values of
#: Fig. 7.4 it gives: drawn beside a simulated run of its job (2,816 grids of 192^3).
PAPER_UTILISATION = {"flat-original": 0.36, "hybrid-multiple": 0.70}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cores",
        type=positive_int,
        nargs="+",
        help="core counts (default 1 2; simulated: 1024 2048)",
    )
    parser.add_argument("--grids", type=positive_int, default=128, help="grids in the job (default 128)")
    parser.add_argument(
        "--batches", type=positive_int, nargs="+", default=[], metavar="B", help="batch sizes to search per approach"
    )
    parser.add_argument(
        "--approaches",
        nargs="+",
        metavar="A",
        help="the approaches to run, names of the registry (default: all of them)",
    )
    parser.add_argument(
        "--line-from",
        type=positive_int,
        metavar="C",
        help="simulated: at C cores and more, each approach's time is its line T(G) = a + b G through three small "
        "grid counts (hybridfd.simulate.lines) at G = --grids, not a simulation of every grid (rows marked 'line', "
        "with the line's check)",
    )
    parser.add_argument(
        "--beside",
        type=Path,
        metavar="JSON",
        help="simulated: a saved scalability result of the same job with another --placement; its flat approaches' "
        "rows are kept beside this run's (the 'placed' column; dashed in the figure), e.g. packed beside bluegene-p",
    )
    add_threads_argument(parser)
    add_problem_arguments(parser, shape=48)


def variants(batches: list[int], approaches: list[str] | None = None) -> list[dict[str, Any]]:
    """The variants to time: ``approaches`` (default: the registry's, flat-original first),
    each with its preset or with each of ``batches`` (flat-original has no batch)."""
    import hybridfd as hf

    names = [BASELINE] + [a for a in hf.approach_names() if a != BASELINE]
    found = []
    for approach in names if approaches is None else [a for a in names if a in approaches]:
        if approach == BASELINE or not batches:
            found.append(variant(approach))
        else:
            found += [variant(approach, b) for b in batches]
    return found


def best_per_approach(variants_measured: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The fastest variant of each approach, in registry order."""
    best: dict[str, dict[str, Any]] = {}
    for v in variants_measured:
        approach = v["config"]["approach"]
        if approach not in best or v["median_seconds"] < best[approach]["median_seconds"]:
            best[approach] = v
    return list(best.values())


def measure(args: argparse.Namespace, cores: list[int]) -> dict[int, list[dict[str, Any]]]:
    """Each core count's fastest variant per approach: measured, simulated, or (at
    ``--line-from`` cores and more) from each approach's line."""
    import hybridfd as hf

    if args.line_from and not getattr(args, "simulate", None):
        raise ExperimentInputError("--line-from: lines are of simulated runs (--simulate)")
    unknown = sorted(set(args.approaches or []) - set(hf.approach_names()))
    if unknown:
        raise ExperimentInputError(
            f"--approaches {' '.join(unknown)}: not in the registry ({', '.join(hf.approach_names())})"
        )
    job = {"shape": args.shape, "dtype": args.dtype, "grids": args.grids, "repeats": args.repeats}
    job.update(job_settings(args))
    job["variants"] = variants(sorted(set(args.batches)), args.approaches)
    measured = {}
    for c in cores:
        if args.line_from and c >= args.line_from:
            measured[c] = best_per_approach(line_all(c, job, args.timeout))
        else:
            measured[c] = best_per_approach(run_all(NAME, c, args.threads, job, args.timeout))
    if not any(measured.values()):
        raise ExperimentInputError("no approach of --approaches runs here (simulated: none is modelled at scale)")
    return measured


def row_of(v: dict[str, Any], cores: int, first: tuple[int, float], args: argparse.Namespace) -> dict[str, Any]:
    """The table row of the fastest variant ``v`` of an approach on ``cores`` cores;
    ``first`` is (cores, seconds) of the fastest on the fewest cores."""
    fewest, fastest = first
    row = {
        "cores": cores,
        "ranks": v["ranks"],
        "threads": v["threads"],
        "ranks_x_threads": f"{v['ranks']} x {v['threads']}",
        "process_grid": v["process_grid"],
        "approach": v["config"]["approach"],
        "batch": v["config"]["batch"],
        "ms": 1e3 * v["median_seconds"],
        "relative_to_fastest_on_fewest": fastest / v["median_seconds"],
        "ideal": cores / fewest,
        "bit_identical_to_flat_original": v["bit_identical_to_flat_original"],
        "config": v["config"],
    }
    if getattr(args, "simulate", None):
        compute = compute_ms(args.grids, args.shape, cores, MACHINES[args.simulate])
        row.update(
            placement=v["config"].get("placement", "packed"),
            compute_ms=compute,
            utilisation=compute / row["ms"],
            # direct: every grid simulated; line: T(G) of v["line"] at G = --grids
            source="line" if "line" in v else "direct",
            check=v["line"]["check_relative"] if "line" in v else None,
        )
        row.update({"line": v["line"]} if "line" in v else {})
    return row


COLUMNS = [
    {"key": "cores", "title": "cores"},
    {"key": "ranks_x_threads", "title": "ranks x threads"},
    {"key": "process_grid", "title": "process grid"},
    {"key": "approach", "title": "approach"},
    {"key": "batch", "title": "b"},
    {"key": "ms", "title": "ms per apply", "format": ".2f"},
    {"key": "relative_to_fastest_on_fewest", "title": "vs fastest on fewest", "format": ".2f"},
    {"key": "ideal", "title": "linear", "format": ".2f"},
    {"key": "bit_identical_to_flat_original", "title": "== flat-original"},
]
#: The columns a simulated run adds: the paper's utilisation, and where each time comes from.
SIMULATED_COLUMNS = [
    {"key": "placement", "title": "placed"},
    {"key": "utilisation", "title": "utilisation", "format": ".1%"},
    {"key": "source", "title": "from"},
    {"key": "check", "title": "check", "format": ".2%"},
]


#: Parameters a result kept ``--beside`` must share with this run: they decide what a time means.
SAME_JOB = ("grids", "shape", "dtype", "batches", "simulate", "team_sync")


def beside_result(args: argparse.Namespace) -> dict[str, Any] | None:
    """The saved result ``args.beside`` (None without it), checked before anything is
    simulated: a scalability result of the same job with another placement."""
    from hybridfd import results

    if args.beside is None:
        return None
    if not getattr(args, "simulate", None):
        raise ExperimentInputError("--beside: rows of another placement are of simulated runs (--simulate)")
    try:
        saved = results.load(args.beside)
    except results.ResultError as error:
        raise ExperimentInputError(f"--beside: {error}") from None
    if (saved["command"], saved["name"]) != ("bench", NAME):
        raise ExperimentInputError(f"--beside {args.beside}: a {saved['command']} {saved['name']} result, not {NAME}")
    theirs = saved["parameters"]
    differ = [
        f"--{k.replace('_', '-')} {theirs.get(k)} there, {getattr(args, k)} here"
        for k in SAME_JOB
        if theirs.get(k) != getattr(args, k)
    ]
    if differ:
        raise ExperimentInputError(f"--beside {args.beside}: another job ({'; '.join(differ)})")
    if theirs.get("placement", "packed") == args.placement:
        raise ExperimentInputError(f"--beside {args.beside}: placed {args.placement} as this run; it adds another")
    return saved


def beside_rows(
    args: argparse.Namespace, saved: dict[str, Any] | None, first: tuple[int, float]
) -> tuple[list[dict[str, Any]], list[str]]:
    """The flat approaches' rows of ``saved`` (:func:`beside_result`), relative to this
    run's fastest on the fewest cores ``first``, and the note that says where they come
    from (([], []) without one)."""
    if saved is None:
        return [], []
    fewest, fastest = first
    kept = [
        dict(r, relative_to_fastest_on_fewest=fastest / (r["ms"] / 1e3), ideal=r["cores"] / fewest)
        for r in saved["rows"]
        if r["threads"] == 1 and "placement" in r  # the flat approaches: one rank per core
    ]
    revision = saved["environment"].get("git_revision") or "unknown"
    note = (
        f"rows placed {saved['parameters'].get('placement', 'packed')} from {args.beside} (created "
        f"{saved['created']}, git {revision[:12]}), not re-run"
    )
    return kept, [note]


def run(args: argparse.Namespace) -> Outcome:
    cores = core_counts(args, [1, 2], SIMULATED_CORES)
    saved = beside_result(args)
    measured = measure(args, cores)
    fewest = next(c for c in cores if measured[c])
    fastest_first = min(measured[fewest], key=lambda v: v["median_seconds"])
    first = (fewest, fastest_first["median_seconds"])
    rows = [row_of(v, c, first, args) for c, best in measured.items() for v in best]
    kept, beside_notes = beside_rows(args, saved, first)
    rows = sorted(rows + kept, key=lambda r: r["cores"])  # stable: each core count's own rows first
    simulated = bool(getattr(args, "simulate", None))
    columns = COLUMNS + (SIMULATED_COLUMNS if simulated else [])
    title = (
        f"scalability: {args.grids} grids of {args.shape}^3 {args.dtype}; relative to "
        f"{fastest_first['config']['approach']} on {fewest} cores; {simulation_timing(args)}"
    )
    notes = [f"flat approaches: one rank per core; threaded ones: ranks of up to {args.threads} threads"]
    if args.batches:
        notes.append(f"each approach's best batch of {sorted(set(args.batches))} (flat-original has none)")
    if simulated:
        notes.append(
            f"utilisation: the stencil's compute alone ({args.simulate}'s core rate) / the simulated time, the "
            "paper's CPU utilization"
        )
    if args.line_from:
        notes.append(
            f"from {args.line_from} cores on, 'line' rows are T(G) = a + b G at G = {args.grids}, the line through "
            "the two larger of three small grid counts (hybridfd.simulate.lines; each row's JSON holds its points); "
            "check: how far it misses the smallest; 'direct' rows simulate all grids"
        )
    notes += simulation_notes(args) + beside_notes
    return Outcome(title, columns, rows, notes)


def series(result: dict[str, Any]) -> dict[tuple[str, str | None], list[dict[str, Any]]]:
    """The rows of each line of the figure: (approach, placement) for a flat approach of a
    result with rows of several placements (``--beside``), else (approach, None)."""
    rows = result["rows"]
    several = len({r["placement"] for r in rows if r.get("threads") == 1 and "placement" in r}) > 1
    found: dict[tuple[str, str | None], list[dict[str, Any]]] = {}
    for r in rows:
        placed = r["placement"] if several and r.get("threads") == 1 else None
        found.setdefault((r["approach"], placed), []).append(r)
    return found


def plot(result: dict[str, Any], path: Path) -> None:
    """Left the time per apply of every approach, right (measured) its speed relative to the
    fastest on the fewest cores, or (simulated) its CPU utilisation, the paper's right panel;
    times from a line drawn with open markers, rows kept ``--beside`` dashed."""
    from hybridfd.experiments._plot import figure, save

    rows = result["rows"]
    utilisation = all("utilisation" in r for r in rows)
    own = result["parameters"].get("placement", "packed")
    fig, (left, right) = figure(panels=2, width=4.5)
    cores = sorted({r["cores"] for r in rows})
    colours: dict[str, str] = {}
    for (approach, placed), mine in sorted(series(result).items(), key=lambda item: item[0][1] != own):
        at = [r["cores"] for r in mine]
        style = {"color": colours.get(approach)}
        if placed not in (None, own):  # kept --beside: dashed, small markers
            style.update(linestyle="--", linewidth=0.8)
        drawn = left.plot(at, [r["ms"] for r in mine], label=approach + (f" ({placed})" if placed else ""), **style)
        colour = colours.setdefault(approach, drawn[0].get_color())
        values = [100 * r["utilisation"] if utilisation else r["relative_to_fastest_on_fewest"] for r in mine]
        right.plot(at, values, **dict(style, color=colour))
        size = 4 if placed not in (None, own) else 6
        for r, value in zip(mine, values, strict=True):  # a point from a line: an open marker
            face = {"markerfacecolor": "none"} if r.get("source") == "line" else {}
            left.plot([r["cores"]], [r["ms"]], marker="o", markersize=size, color=colour, **face)
            right.plot([r["cores"]], [value], marker="o", markersize=size, color=colour, **face)
    for ax in (left, right):
        ax.set_xticks(cores)
        ax.set_xlabel("cores")
    if utilisation:
        draw_utilisation(result, left, right, colours)
    else:
        right.plot(cores, [c / cores[0] for c in cores], color="grey", linestyle=":", label="linear")
        right.set_ylabel("speed vs fastest on fewest cores")
        left.set_ylabel("ms per apply")
    left.legend(fontsize=7)
    if right.get_legend_handles_labels()[1]:
        right.legend(fontsize=7)
    fig.suptitle(textwrap.fill(result["title"], 110), fontsize=9)  # a simulated title runs long
    save(fig, path)


def draw_utilisation(result: dict[str, Any], left: Any, right: Any, colours: dict[str, str]) -> None:  # noqa: ANN401
    """A simulated run's panels: compute alone beside the times (log scales, cores spread
    out), utilisation in %, and the paper's 16,384-core utilisations for its own job."""
    rows = result["rows"]
    compute = sorted({(r["cores"], r["compute_ms"]) for r in rows})
    left.plot([c for c, _ in compute], [ms for _, ms in compute], color="grey", linestyle=":", label="compute alone")
    if any(r.get("source") == "line" for r in rows):
        left.plot([], [], color="grey", marker="o", markerfacecolor="none", linestyle="none", label="from the line")
    parameters = result["parameters"]
    if (parameters.get("grids"), parameters.get("shape")) == (GRIDS, SHAPE):
        for approach, share in PAPER_UTILISATION.items():
            star = {"marker": "*", "markersize": 12, "linestyle": "none", "color": colours.get(approach)}
            right.plot([16384], [100 * share], label=f"paper: {approach}", **star)
    cores = sorted({r["cores"] for r in rows})
    for ax in (left, right):
        if len(cores) > 1 and cores[-1] >= 4 * cores[0]:
            ax.set_xscale("log", base=2)
        ax.set_xticks(cores)
        ax.set_xticklabels([str(c) for c in cores], fontsize=7)
    left.set_yscale("log")
    left.set_ylabel(f"simulated ms per apply ({parameters.get('simulate')})")
    right.set_ylabel("CPU utilisation, % (compute alone / time)")
    right.set_ylim(0, 105)
