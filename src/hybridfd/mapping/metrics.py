"""How well a mapping fits the network: hop-bytes, link loads, dilation (numpy-vectorised).

For every message of a pattern, the source and destination nodes give a hop vector:
per axis, the shortest signed distance (around the ring on a wrapped axis; exactly half
way round goes the positive way but from the middle to 0, as SimGrid's torus routes).
Then

- hop-bytes (CP2K seed Sect. 4, after its ref. [21]): sum of bytes x hops, in total and
  per torus direction X, Y, Z; ``weighted_hop_bytes`` weighs each direction by its link
  cost (bandwidth of the fastest axis / this axis's), the quantity the seed's heuristic
  compares when directions differ in speed;
- link loads: every message is routed dimension by dimension (X, then Y, then Z, the
  order Blue Gene/P's and Gemini's deterministic routing use) and adds its bytes to each
  directed link it crosses; max and mean over the topology's links, and the max in
  fastest-link bytes (load x link cost), which bounds the exchange time;
- dilation: hops of the longest message, and the byte-weighted mean.

Messages between two cores of one node cross no link.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from hybridfd.mapping.patterns import CommPattern
from hybridfd.mapping.topology import Topology


@dataclass(frozen=True)
class Metrics:
    total_bytes: int
    off_node_bytes: int
    hop_bytes: int
    hop_bytes_per_direction: tuple[int, int, int]
    weighted_hop_bytes: float
    max_link_load: int
    mean_link_load: float
    max_link_cost: float
    dilation: int
    mean_dilation: float

    def as_dict(self) -> dict:
        result = asdict(self)
        result["hop_bytes_per_direction"] = list(self.hop_bytes_per_direction)
        return result


def hop_vectors(topology: Topology, src_nodes: np.ndarray, dst_nodes: np.ndarray) -> np.ndarray:
    """Signed shortest hops per axis, shape (messages, 3). Exactly half way round a wrapped
    axis goes the positive way, except from the middle (coordinate D/2) to 0, which goes
    the negative way: the rule of SimGrid's TORUS cluster (TorusZone::get_local_route),
    so that these routes are the simulated torus's, link for link."""
    dims = np.asarray(topology.dims)
    src, dst = topology.node_coords(src_nodes), topology.node_coords(dst_nodes)
    delta = dst - src
    wrap = np.asarray(topology.wrap)
    around = delta % dims
    middle_to_zero = (2 * around == dims) & (2 * src == dims)
    around = np.where((2 * around > dims) | middle_to_zero, around - dims, around)
    return np.where(wrap, around, delta)


def _hops(topology: Topology, src_nodes: np.ndarray, dst_nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every link crossing of every message under X-then-Y-then-Z routing: (message index,
    directed link index node*6 + axis*2 + (step > 0)), grouped by axis (X hops of all
    messages, then Y, then Z), each message's hops of an axis in route order."""
    dims = np.asarray(topology.dims)
    hops = hop_vectors(topology, src_nodes, dst_nodes)
    position = topology.node_coords(src_nodes)
    messages, links = [], []
    for axis in range(3):
        count = np.abs(hops[:, axis])
        moving = np.flatnonzero(count)
        if moving.size:
            repeats = count[moving]
            message = np.repeat(moving, repeats)
            # k-th hop of each message: 0, 1, ..., count-1
            first = np.repeat(np.cumsum(repeats) - repeats, repeats)
            k = np.arange(repeats.sum()) - first
            step = np.sign(hops[message, axis])
            here = position[message].copy()
            here[:, axis] = (here[:, axis] + step * k) % dims[axis]
            messages.append(message)
            links.append(topology.node_ids(here) * 6 + axis * 2 + (step > 0))
        # Dimension-order routing: this axis is done before the next one starts.
        position[:, axis] = (position[:, axis] + hops[:, axis]) % dims[axis]
    if not messages:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(messages), np.concatenate(links)


def link_loads(topology: Topology, src_nodes: np.ndarray, dst_nodes: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
    """Bytes on each directed link under X-then-Y-then-Z routing, indexed node*6 + axis*2 + (step > 0)."""
    message, links = _hops(topology, src_nodes, dst_nodes)
    return np.bincount(links, weights=np.asarray(nbytes, dtype=np.float64)[message], minlength=topology.nodes * 6)


def routes(topology: Topology, src_nodes: np.ndarray, dst_nodes: np.ndarray) -> list[np.ndarray]:
    """The directed links (indexed as in :func:`link_loads`: the node a hop leaves, axis*2 +
    (step > 0)) each message crosses, in the order it crosses them: the X-then-Y-then-Z
    routes whose loads :func:`link_loads` sums. The simulated platforms are written with
    these routes (hybridfd.simulate.platform), so the mapping's link loads and the
    simulation's links are one routing."""
    src_nodes = np.atleast_1d(np.asarray(src_nodes, dtype=np.int64))
    message, links = _hops(topology, src_nodes, np.atleast_1d(np.asarray(dst_nodes, dtype=np.int64)))
    # A stable sort by message keeps each message's hops in route order (X, then Y, then Z).
    order = np.argsort(message, kind="stable")
    ends = np.cumsum(np.bincount(message, minlength=src_nodes.size))
    return np.split(links[order], ends[:-1])


def link_count(topology: Topology) -> np.ndarray:
    """Directed links per axis: two per node on a wrapped axis, 2*(D-1) per line on a mesh axis."""
    dims = np.asarray(topology.dims)
    lines = topology.nodes // dims
    per_line = np.where(np.asarray(topology.wrap), 2 * dims, 2 * (dims - 1))
    return np.where(dims > 1, lines * per_line, 0)


def evaluate(pattern: CommPattern, topology: Topology, slots: np.ndarray) -> Metrics:
    """Metrics of placing position p of ``pattern``'s grid on slot ``slots[p]`` of ``topology``."""
    slots = np.asarray(slots, dtype=np.int64)
    node = slots // topology.cores_per_node
    src, dst = node[pattern.src], node[pattern.dst]
    nbytes = pattern.nbytes.astype(np.float64)
    hops = np.abs(hop_vectors(topology, src, dst))
    per_direction = (hops * pattern.nbytes[:, None]).sum(axis=0)
    total_hops = hops.sum(axis=1)
    loads = link_loads(topology, src, dst, nbytes)
    cost = topology.link_cost
    links = int(link_count(topology).sum())
    total = int(pattern.nbytes.sum())
    return Metrics(
        total_bytes=total,
        off_node_bytes=int(pattern.nbytes[src != dst].sum()),
        hop_bytes=int(per_direction.sum()),
        hop_bytes_per_direction=tuple(int(v) for v in per_direction),
        weighted_hop_bytes=float((per_direction * cost).sum()),
        max_link_load=int(loads.max()) if loads.size else 0,
        mean_link_load=float(loads.sum() / links) if links else 0.0,
        max_link_cost=float((loads.reshape(-1, 3, 2) * cost[None, :, None]).max()) if loads.size else 0.0,
        dilation=int(total_hops.max()) if total_hops.size else 0,
        mean_dilation=float((total_hops * nbytes).sum() / total) if total else 0.0,
    )


def weighted_hop_bytes(pattern: CommPattern, topology: Topology, slots: np.ndarray) -> float:
    """Cost-weighted hop-bytes alone (what the heuristics compare), without routing."""
    node = np.asarray(slots, dtype=np.int64) // topology.cores_per_node
    hops = np.abs(hop_vectors(topology, node[pattern.src], node[pattern.dst]))
    return float(((hops * pattern.nbytes[:, None]).sum(axis=0) * topology.link_cost).sum())
