"""Hop-bytes and link loads of every mapping strategy at 64..16,384 ranks (pure computation).

For the Blue Gene/P and Cray XE6 presets (sized for each rank count), maps two patterns
with every strategy of hybridfd.mapping and evaluates them:

- Cannon's 4-neighbour shifts on a square 2D process grid (the DBCSR kernel of the CP2K
  process-mapping paper, 8 MiB blocks);
- the stencil's 6-neighbour halo exchange of a 192^3 float64 domain, radius 2 (13
  points), on the process grid hybridfd picks for it (least total surface).

Writes docs/img/mapping_metrics.png and docs/img/mapping_metrics.md (markdown tables)
and prints the tables. It also lays the Hilbert curve along each of the six direction
orders of the torus to measure how much the order matters (the CP2K paper: up to 30 %).

    .venv/bin/python benchmarks/mapping_metrics.py [--sizes 64 256 1024 4096 16384]
"""

from __future__ import annotations

import argparse
import itertools
import math
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from hybridfd.decomposition import automatic_grid
from hybridfd.mapping import CommPattern, Topology, cannon_pattern, compute_mapping, stencil_pattern, strategy_names
from hybridfd.mapping.metrics import evaluate
from hybridfd.mapping.strategies import hilbert

ROOT = Path(__file__).resolve().parents[1]
PRESETS = ("bluegene-p", "cray-xe6")
DOMAIN = (192, 192, 192)
RADIUS, ITEMSIZE = 2, 8
CANNON_BYTES = 8 * 2**20


def cannon_grid(ranks: int) -> tuple[int, int]:
    rows = max(d for d in range(1, math.isqrt(ranks) + 1) if ranks % d == 0)
    return rows, ranks // rows


def patterns(ranks: int) -> dict:
    return {
        "cannon": cannon_pattern(cannon_grid(ranks), CANNON_BYTES),
        "stencil": stencil_pattern(DOMAIN, automatic_grid(DOMAIN, ranks), (True,) * 3, RADIUS, ITEMSIZE),
    }


def direction_orders(pattern: CommPattern, topology: Topology) -> dict[str, tuple[float, float]]:
    """Weighted hop-bytes and max link cost of the Hilbert mapping laid along each direction order."""
    result = {}
    for order in itertools.permutations("XYZ"):
        slots, _ = hilbert(pattern, topology, "".join(order))
        metrics = evaluate(pattern, topology, slots)
        result["".join(order)] = (metrics.weighted_hop_bytes, metrics.max_link_cost)
    return result


def run(sizes: list[int]) -> tuple[list[dict], list[dict]]:
    rows, orders = [], []
    for preset, ranks in itertools.product(PRESETS, sizes):
        topology = Topology.preset(preset, ranks)
        for name, pattern in patterns(ranks).items():
            for strategy in strategy_names():
                start = time.perf_counter()
                mapping = compute_mapping(strategy, pattern, topology)
                seconds = time.perf_counter() - start
                m = mapping.metrics
                rows.append(
                    {
                        "preset": preset,
                        "ranks": ranks,
                        "pattern": name,
                        "grid": "x".join(map(str, pattern.grid)),
                        "nodes": "x".join(map(str, topology.dims)),
                        "strategy": strategy,
                        "hop_bytes": m.hop_bytes,
                        "weighted_hop_bytes": m.weighted_hop_bytes,
                        "total_bytes": m.total_bytes,
                        "max_link_load": m.max_link_load,
                        "max_link_cost": m.max_link_cost,
                        "dilation": m.dilation,
                        "choice": mapping.details.get("kept", "") + " " + mapping.details.get("direction_order", ""),
                        "seconds": seconds,
                    }
                )
            scores = direction_orders(pattern, topology)
            hop = [v[0] for v in scores.values()]
            link = [v[1] for v in scores.values()]
            orders.append(
                {
                    "preset": preset,
                    "ranks": ranks,
                    "pattern": name,
                    "best": min(scores, key=lambda k: scores[k][0]),
                    "worst": max(scores, key=lambda k: scores[k][0]),
                    "hop_spread": max(hop) / min(hop) - 1 if min(hop) else 0.0,
                    "link_spread": max(link) / min(link) - 1 if min(link) else 0.0,
                }
            )
            print(f"{preset} {ranks} {name} done", flush=True)
    return rows, orders


def tables(rows: list[dict], orders: list[dict]) -> str:
    strategies = list(strategy_names())
    lines = []
    for preset, name in itertools.product(PRESETS, ("cannon", "stencil")):
        lines += [
            f"**{preset}, {name}**: hop-bytes / max link load, both relative to `packed` (lower is better)",
            "",
            "| ranks | process grid | nodes | " + " | ".join(strategies) + " |",
            "| ---: | --- | --- | " + " | ".join("---:" for _ in strategies) + " |",
        ]
        for ranks in sorted({r["ranks"] for r in rows}):
            chosen = {
                r["strategy"]: r for r in rows if (r["preset"], r["pattern"], r["ranks"]) == (preset, name, ranks)
            }
            base = chosen["packed"]
            cells = [
                f"{chosen[s]['hop_bytes'] / base['hop_bytes']:.2f} / "
                f"{chosen[s]['max_link_load'] / base['max_link_load']:.2f}"
                if base["hop_bytes"]
                else "-"
                for s in strategies
            ]
            lines.append(f"| {ranks} | {base['grid']} | {base['nodes']} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += [
        "**Hilbert laid along each of the six direction orders**: spread = worst / best - 1",
        "",
        "| preset | pattern | ranks | best order | worst order | weighted hop-bytes spread | max link cost spread |",
        "| --- | --- | ---: | --- | --- | ---: | ---: |",
    ]
    for o in orders:
        lines.append(
            f"| {o['preset']} | {o['pattern']} | {o['ranks']} | {o['best']} | {o['worst']} | "
            f"{100 * o['hop_spread']:.0f} % | {100 * o['link_spread']:.0f} % |"
        )
    return "\n".join(lines) + "\n"


def plot(rows: list[dict], path: Path) -> None:
    strategies = list(strategy_names())
    panels = list(itertools.product(PRESETS, ("cannon", "stencil")))
    fig, axes = plt.subplots(2, len(panels), figsize=(5 * len(panels), 8), sharex=True)
    markers = "os^vD<>xP*"
    for column, (preset, name) in enumerate(panels):
        for k, strategy in enumerate(strategies):
            mine = sorted(
                (r for r in rows if (r["preset"], r["pattern"], r["strategy"]) == (preset, name, strategy)),
                key=lambda r: r["ranks"],
            )
            ranks = [r["ranks"] for r in mine]
            base = {
                r["ranks"]: r for r in rows if (r["preset"], r["pattern"], r["strategy"]) == (preset, name, "packed")
            }
            hops = [r["hop_bytes"] / r["total_bytes"] for r in mine]
            load = [r["max_link_load"] / max(base[r["ranks"]]["max_link_load"], 1) for r in mine]
            style = {"marker": markers[k % len(markers)], "label": strategy}
            axes[0, column].plot(ranks, hops, **style)
            axes[1, column].plot(ranks, load, **style)
        axes[0, column].set_title(f"{preset}: {name}")
        axes[0, column].set_ylabel("hop-bytes / bytes sent (mean hops per byte)")
        axes[1, column].set_ylabel("max link load / packed's")
        axes[1, column].set_xlabel("ranks")
        for row in range(2):
            axes[row, column].set_xscale("log", base=2)
            axes[row, column].grid(True, alpha=0.3)
    axes[0, 0].legend(fontsize=8)
    fig.suptitle("Mapping strategies on the Blue Gene/P and Cray XE6 presets (computed, not measured)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 256, 1024, 4096, 16384])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    args = parser.parse_args()
    start = time.perf_counter()
    rows, orders = run(args.sizes)
    text = tables(rows, orders)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "mapping_metrics.md").write_text(text)
    plot(rows, args.out / "mapping_metrics.png")
    slowest = max(rows, key=lambda r: r["seconds"])
    print(text)
    print(
        f"{time.perf_counter() - start:.1f} s in all; slowest mapping: {slowest['strategy']} "
        f"({slowest['preset']}, {slowest['ranks']} ranks, {slowest['pattern']}) {slowest['seconds']:.1f} s"
    )


if __name__ == "__main__":
    main()
