"""``hybridfd map`` (also ``python -m hybridfd.mapping``): print and plot mappings of a process grid.

Example: ``python -m hybridfd.mapping --grid 16x16x8 --topology bluegene-p --plot map.png``
compares every strategy on the stencil's halo exchange of a 192^3 float64 domain and
draws the first strategy's placement.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from mpi4py import MPI
from rich.console import Console
from rich.table import Table

from hybridfd._argtypes import positive_int
from hybridfd.mapping.patterns import CommPattern, cannon_pattern, stencil_pattern
from hybridfd.mapping.strategies import Mapping, compute_mapping, strategy_names
from hybridfd.mapping.topology import AXES, PRESETS, Topology, resolve


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not sizes like 16x16x8") from None
    if not 2 <= len(sizes) <= 3 or any(n < 1 for n in sizes):
        raise argparse.ArgumentTypeError(f"{text!r} must be 2 or 3 positive sizes like 16x16x8 or 32x32")
    return sizes


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hybridfd map",
        description="Map a Cartesian process grid onto a network topology with each strategy; "
        "print hop-bytes, link loads and dilation, and plot the placement.",
    )
    parser.add_argument("--grid", type=_sizes, required=True, help="process grid, e.g. 16x16x8 (stencil) or 32x32")
    parser.add_argument(
        "--topology",
        default="host",
        help=f"preset ({', '.join(PRESETS)}; sized for the grid) or a .toml/.json file (default: host)",
    )
    parser.add_argument(
        "--strategy",
        action="append",
        choices=strategy_names(),
        help="strategy to compare (repeatable; default: all); the first one is plotted",
    )
    parser.add_argument(
        "--pattern",
        choices=("stencil", "cannon"),
        help="communication: the stencil's halo exchange (3D grids) or Cannon's shifts (2D grids); default by grid",
    )
    parser.add_argument("--domain", type=_sizes, default=(192, 192, 192), help="stencil domain shape (default 192^3)")
    parser.add_argument("--aperiodic", action="store_true", help="stencil domain without periodic boundaries")
    parser.add_argument("--radius", type=positive_int, default=2, help="stencil radius (default 2: 13 points)")
    parser.add_argument("--dtype", choices=("float64", "complex128"), default="float64")
    parser.add_argument("--grids", type=positive_int, default=1, help="grids per exchange (batch size)")
    parser.add_argument(
        "--message-bytes", type=positive_int, default=8 * 2**20, help="Cannon: bytes per block shift (default 8 MiB)"
    )
    parser.add_argument("--plot", type=Path, help="write a PNG of the first strategy's placement and all hop-bytes")
    parser.add_argument("--ranks", action="store_true", help="also list every position's node and core")
    return parser


def _pattern(args: argparse.Namespace) -> CommPattern:
    kind = args.pattern or ("cannon" if len(args.grid) == 2 else "stencil")
    if kind == "cannon":
        if len(args.grid) != 2:
            raise ValueError(f"Cannon's pattern needs a 2D grid, got {args.grid}")
        return cannon_pattern(args.grid, args.message_bytes)
    if len(args.grid) != 3 or len(args.domain) != 3:
        raise ValueError(f"the stencil pattern needs a 3D grid and domain, got grid {args.grid}, domain {args.domain}")
    itemsize = np.dtype(args.dtype).itemsize
    return stencil_pattern(args.domain, args.grid, (not args.aperiodic,) * 3, args.radius, itemsize, args.grids)


def _topology(spec: str, processes: int) -> Topology:
    resolved = resolve(spec, processes)
    # host: the ranks this command runs on (one, unless started under mpiexec).
    return Topology.host(MPI.COMM_WORLD) if resolved == "host" else resolved


def _bytes(value: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.2f} {unit}"
    return f"{value:.0f} B"


def metrics_table(mappings: Sequence[Mapping], title: str) -> Table:
    table = Table(title=title)
    for column in ("strategy", "hop-bytes", "X/Y/Z %", "max link", "mean link", "dilation", "off-node"):
        table.add_column(column, justify="right")
    table.add_column("choice")
    for mapping in mappings:
        m = mapping.metrics
        shares = "/".join(f"{100 * v / m.hop_bytes:.0f}" for v in m.hop_bytes_per_direction) if m.hop_bytes else "-"
        choice = mapping.details.get("direction_order", "")
        if "kept" in mapping.details:
            choice = f"{mapping.details['kept']} {choice}".strip()
        table.add_row(
            mapping.strategy,
            _bytes(m.hop_bytes),
            shares,
            _bytes(m.max_link_load),
            _bytes(m.mean_link_load),
            f"{m.dilation} ({m.mean_dilation:.1f})",
            f"{100 * m.off_node_bytes / m.total_bytes:.0f} %" if m.total_bytes else "-",
            choice,
        )
    return table


def ranks_table(mapping: Mapping) -> Table:
    table = Table(title=f"{mapping.strategy}: where each grid position runs")
    for column in ("position", "grid coords", "rank", "node", "node coords", "core"):
        table.add_column(column, justify="right")
    coords = np.indices(mapping.pattern.grid).reshape(len(mapping.pattern.grid), -1).T
    ranks = mapping.rank_of_position()
    node_coords = mapping.topology.node_coords(mapping.nodes)
    cores = mapping.slots % mapping.topology.cores_per_node
    for p in range(mapping.pattern.processes):
        table.add_row(
            str(p),
            str(tuple(int(c) for c in coords[p])),
            str(ranks[p]),
            str(mapping.nodes[p]),
            str(tuple(int(c) for c in node_coords[p])),
            str(cores[p]),
        )
    return table


def plot(mappings: Sequence[Mapping], path: Path) -> None:
    """The first mapping's placement (boxes coloured by node, a panel per z plane) and everyone's hop-bytes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    first = mappings[0]
    grid = first.pattern.grid if len(first.pattern.grid) == 3 else (*first.pattern.grid, 1)
    planes = min(grid[2], 4)
    nodes = first.nodes.reshape(grid)
    fig, axes = plt.subplots(1, planes + 1, figsize=(4 * planes + 6, 4.5), squeeze=False)
    for z in range(planes):
        ax = axes[0, z]
        ax.imshow(nodes[:, :, z], cmap="tab20", interpolation="nearest", origin="lower")
        ax.set_title(f"{first.strategy}: node of each box, z = {z}" if grid[2] > 1 else f"{first.strategy}: node")
        ax.set_xlabel("process grid y")
        ax.set_ylabel("process grid x")
        if grid[0] * grid[1] <= 256:
            for (x, y), node in np.ndenumerate(nodes[:, :, z]):
                ax.text(y, x, str(node), ha="center", va="center", fontsize=7)
    ax = axes[0, planes]
    bottom = np.zeros(len(mappings))
    for axis, name in enumerate(AXES):
        values = np.array([m.metrics.hop_bytes_per_direction[axis] for m in mappings], dtype=float)
        ax.bar([m.strategy for m in mappings], values, bottom=bottom, label=f"{name} links")
        bottom += values
    ax.set_ylabel("hop-bytes")
    ax.set_title("hop-bytes per torus direction")
    ax.tick_params(axis="x", rotation=60)
    ax.legend()
    fig.suptitle(first.topology.describe(), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    strategies = args.strategy or list(strategy_names())
    try:
        pattern = _pattern(args)
        topology = _topology(args.topology, pattern.processes)
        mappings = [compute_mapping(name, pattern, topology) for name in strategies]
    except ValueError as error:
        parser.error(str(error))  # exits with status 2
    # Piped output (logs, docs) gets room for the whole table; a terminal keeps its own width.
    console = Console(width=None if sys.stdout.isatty() else 120)
    console.print(topology.describe())
    grid = "x".join(map(str, pattern.grid))
    title = f"{pattern.name} pattern on a {grid} process grid: {_bytes(pattern.total_bytes)} per exchange"
    console.print(metrics_table(mappings, title))
    if args.ranks:
        console.print(ranks_table(mappings[0]))
    if args.plot:
        plot(mappings, args.plot)
        console.print(f"wrote {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
