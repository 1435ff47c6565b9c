"""Mapping strategies: which slot (node, core) each position of a process grid runs on.

Every strategy takes a communication pattern (its grid and messages) and a topology,
and returns ``slots``: ``slots[p]`` is the slot of grid position p. The slots are
exactly the topology's occupied slots (those of ranks 0..P-1), so a mapping is a
permutation of the ranks a job already has, applied by renumbering them
(:func:`hybridfd.mapping.reorder_communicator`).

The strategies of the CP2K seed's Sect. 3.3 and Fig. 3:

- ``packed``: position p on rank p's slot; the launcher's order, nodes filled one after
  another (Cray's SMP-style placement, the default);
- ``round-robin``: positions dealt to the nodes in turn, one core of each node per round;
- ``folded``: round-robin that reverses its node order every other round;
- ``hilbert``: positions in the order of a (generalized) Hilbert curve through the
  process grid, laid along the node order in which one torus direction is filled first
  (``order`` "XYZ": X fastest);
- ``cp2k-heuristic`` (Fig. 3): the Hilbert mapping laid along each order of the torus
  directions, scored by hop-bytes per direction weighted by the direction's link cost;
  the cheapest is kept only if it beats the initial (packed) mapping, else the initial
  mapping is returned. Fig. 3 ranks the three directions by their hop-bytes and fills
  the cheapest first; scoring every order directly contains that choice;
- ``greedy`` (seed ref. [3], Hoefler and Snir, ICS 2011): the heaviest process first,
  then always the unplaced process with the most bytes to placed ones, onto the free
  node that minimises its cost-weighted hop-bytes to its placed neighbours;
- ``recursive-bisection`` (also ref. [3]; Scotch's dual recursive bipartitioning): cut
  the node box in two along its longest axis and the process graph in two parts of the
  same sizes with METIS (pymetis), recursively, down to single nodes;
- ``metis``: the graph-partitioning baseline: METIS groups processes into node-sized
  parts minimising the bytes between parts, and the parts go onto the nodes in node
  order; it minimises off-node traffic but knows nothing of the torus.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pymetis

from hybridfd.mapping.gilbert import gilbert_order
from hybridfd.mapping.metrics import Metrics, evaluate, weighted_hop_bytes
from hybridfd.mapping.patterns import CommPattern
from hybridfd.mapping.topology import AXES, Topology

StrategyResult = tuple[np.ndarray, dict]
Strategy = Callable[[CommPattern, Topology], StrategyResult]

# METIS is randomised; a fixed seed makes every rank and every run compute the same mapping.
_METIS_SEED = 1


@dataclass(frozen=True)
class Mapping:
    """The result of a strategy: ``slots[p]`` for each grid position p, and how it was found."""

    strategy: str
    pattern: CommPattern
    topology: Topology
    slots: np.ndarray
    details: dict = field(default_factory=dict)

    @property
    def nodes(self) -> np.ndarray:
        return self.slots // self.topology.cores_per_node

    @cached_property
    def metrics(self) -> Metrics:
        return evaluate(self.pattern, self.topology, self.slots)

    def rank_of_position(self) -> np.ndarray:
        """``rank_of_position()[p]``: the rank (of the communicator the topology describes) placed at p."""
        occupied = self.topology.occupied_slots(self.pattern.processes)
        rank_of_slot = np.full(self.topology.cores, -1, dtype=np.int64)
        rank_of_slot[occupied] = np.arange(occupied.size)
        return rank_of_slot[self.slots]


# -- helpers ---------------------------------------------------------------------------
def _occupied(pattern: CommPattern, topology: Topology) -> np.ndarray:
    return topology.occupied_slots(pattern.processes)


def _node_key(topology: Topology, nodes: np.ndarray, order: tuple[int, int, int]) -> np.ndarray:
    """Position of each node when nodes are enumerated with axis order[0] fastest."""
    coords = topology.node_coords(nodes)
    dims = topology.dims
    return coords[:, order[0]] + dims[order[0]] * (coords[:, order[1]] + dims[order[1]] * coords[:, order[2]])


def _core_index(slots: np.ndarray, cores_per_node: int) -> np.ndarray:
    """For each occupied slot, its index among the occupied slots of its node (0, 1, ...)."""
    order = np.argsort(slots, kind="stable")
    nodes = slots[order] // cores_per_node
    first = np.searchsorted(nodes, nodes, side="left")
    index = np.empty_like(slots)
    index[order] = np.arange(slots.size) - first
    return index


def _parse_order(order: str) -> tuple[int, int, int]:
    if sorted(order.upper()) != sorted(AXES):
        raise ValueError(f"direction order {order!r} must be a permutation of XYZ, e.g. 'XYZ' or 'ZXY'")
    return tuple(AXES.index(a) for a in order.upper())


def _order_name(order: tuple[int, ...]) -> str:
    return "".join(AXES[a] for a in order)


@dataclass(frozen=True)
class _Graph:
    """The pattern as an undirected weighted graph in CSR form (both directions stored)."""

    indptr: np.ndarray
    indices: np.ndarray
    weights: np.ndarray

    @classmethod
    def of(cls, pattern: CommPattern) -> _Graph:
        i, j, w = pattern.undirected()
        keep = i != j
        i, j, w = i[keep], j[keep], w[keep]
        rows, cols, weights = np.concatenate([i, j]), np.concatenate([j, i]), np.concatenate([w, w])
        order = np.lexsort((cols, rows))
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=pattern.processes))])
        return cls(indptr.astype(np.int64), cols[order].astype(np.int64), weights[order].astype(np.int64))

    def subgraph(self, vertices: np.ndarray) -> _Graph:
        """The graph induced by ``vertices`` (renumbered 0..len-1 in the given order)."""
        local = np.full(self.indptr.size - 1, -1, dtype=np.int64)
        local[vertices] = np.arange(vertices.size)
        counts = self.indptr[vertices + 1] - self.indptr[vertices]
        rows = np.repeat(np.arange(vertices.size), counts)
        # Edge k of vertex v sits at indptr[v] + k.
        edge = (
            np.repeat(self.indptr[vertices], counts)
            + np.arange(rows.size)
            - np.repeat(np.cumsum(counts) - counts, counts)
        )
        cols = local[self.indices[edge]]
        keep = cols >= 0
        rows, cols, weights = rows[keep], cols[keep], self.weights[edge][keep]
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=vertices.size))])
        return _Graph(indptr.astype(np.int64), cols.astype(np.int64), weights.astype(np.int64))

    def edge_rows(self) -> np.ndarray:
        return np.repeat(np.arange(self.indptr.size - 1), np.diff(self.indptr))


def _partition(graph: _Graph, targets: np.ndarray) -> np.ndarray:
    """Parts of exactly ``targets[k]`` vertices each, METIS minimising the bytes cut between them."""
    vertices = graph.indptr.size - 1
    parts = len(targets)
    if parts == 1:
        return np.zeros(vertices, dtype=np.int64)
    if graph.indices.size == 0:
        return np.repeat(np.arange(parts), targets)
    # Weights are bytes; METIS wants positive integers that fit its 32-bit idx_t.
    scale = max(1, int(graph.weights.max()) // 1_000_000 + 1)
    weights = np.maximum(graph.weights // scale, 1)
    options = pymetis.Options(seed=_METIS_SEED, ufactor=1)
    _, membership = pymetis.part_graph(
        parts,
        pymetis.CSRAdjacency(graph.indptr, graph.indices),
        eweights=weights,
        tpwgts=list(targets / targets.sum()),
        options=options,
    )
    return _rebalance(graph, np.asarray(membership, dtype=np.int64), targets)


def _rebalance(graph: _Graph, part: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Move vertices out of overfull parts (METIS balances only approximately) until sizes are exact.

    Each move takes, from the most overfull part, the vertex whose move into some
    underfull part gains the most (bytes to that part minus bytes to its own part).
    """
    parts = len(targets)
    rows = graph.edge_rows()
    while True:
        surplus = np.bincount(part, minlength=parts) - targets
        if not (surplus > 0).any():
            return part
        over = int(np.argmax(surplus))
        under = np.flatnonzero(surplus < 0)
        members = np.flatnonzero(part == over)
        # Bytes from each member to each underfull part and to its own part.
        from_member = part[rows] == over
        member_rows, to_part, w = rows[from_member], part[graph.indices[from_member]], graph.weights[from_member]
        own = np.bincount(member_rows[to_part == over], weights=w[to_part == over], minlength=part.size)
        to_under = np.isin(to_part, under)
        best_vertex, best_part, best_gain = int(members[0]), int(under[0]), -np.inf
        if to_under.any():
            key = member_rows[to_under] * parts + to_part[to_under]
            keys, inverse = np.unique(key, return_inverse=True)
            totals = np.bincount(inverse, weights=w[to_under])
            gains = totals - own[keys // parts]
            k = int(np.argmax(gains))
            best_vertex, best_part, best_gain = int(keys[k] // parts), int(keys[k] % parts), gains[k]
        if best_gain == -np.inf:
            # No member touches an underfull part: move the least attached member.
            best_vertex = int(members[np.argmin(own[members])])
        part[best_vertex] = best_part


# -- strategies ------------------------------------------------------------------------
def packed(pattern: CommPattern, topology: Topology) -> StrategyResult:
    return _occupied(pattern, topology).copy(), {}


def round_robin(pattern: CommPattern, topology: Topology) -> StrategyResult:
    slots = _occupied(pattern, topology)
    core = _core_index(slots, topology.cores_per_node)
    return slots[np.lexsort((slots // topology.cores_per_node, core))], {}


def folded(pattern: CommPattern, topology: Topology) -> StrategyResult:
    slots = _occupied(pattern, topology)
    core = _core_index(slots, topology.cores_per_node)
    node = slots // topology.cores_per_node
    return slots[np.lexsort((np.where(core % 2, -node, node), core))], {}


def hilbert(pattern: CommPattern, topology: Topology, order: str = "XYZ") -> StrategyResult:
    axes = _parse_order(order)
    slots = _occupied(pattern, topology)
    along_nodes = slots[np.lexsort((slots, _node_key(topology, slots // topology.cores_per_node, axes)))]
    result = np.empty_like(slots)
    result[gilbert_order(pattern.grid)] = along_nodes
    return result, {"direction_order": _order_name(axes)}


def cp2k_heuristic(pattern: CommPattern, topology: Topology, initial: str = "packed") -> StrategyResult:
    initial_slots, _ = STRATEGIES[initial](pattern, topology)
    initial_hb = weighted_hop_bytes(pattern, topology, initial_slots)
    scores: dict[str, float] = {}
    best: tuple[float, str, np.ndarray] | None = None
    seen: set[tuple[int, ...]] = set()
    for order in itertools.permutations(range(3)):
        # Axes of one node make no difference to the node order: skip repeats.
        live = tuple(a for a in order if topology.dims[a] > 1)
        if live in seen:
            continue
        seen.add(live)
        slots, _ = hilbert(pattern, topology, _order_name(order))
        score = weighted_hop_bytes(pattern, topology, slots)
        scores[_order_name(order)] = score
        if best is None or score < best[0]:
            best = (score, _order_name(order), slots)
    details = {"initial": initial, "initial_weighted_hop_bytes": initial_hb, "hilbert_weighted_hop_bytes": scores}
    if best[0] < initial_hb:
        return best[2], {**details, "kept": "hilbert", "direction_order": best[1]}
    return initial_slots, {**details, "kept": initial}


def _distance_tables(topology: Topology) -> list[np.ndarray]:
    """Per axis, cost-weighted hops between any two coordinates (D x D)."""
    tables = []
    for dim, wrap, cost in zip(topology.dims, topology.wrap, topology.link_cost, strict=True):
        c = np.arange(dim)
        delta = np.abs(c[:, None] - c[None, :])
        tables.append(cost * (np.minimum(delta, dim - delta) if wrap else delta))
    return tables


def greedy(pattern: CommPattern, topology: Topology) -> StrategyResult:
    graph = _Graph.of(pattern)
    occupied = _occupied(pattern, topology)
    cores = topology.cores_per_node
    # Free slots of each node, lowest first.
    free: dict[int, list[int]] = {}
    for slot in np.sort(occupied)[::-1]:
        free.setdefault(int(slot) // cores, []).append(int(slot))
    left = np.zeros(topology.nodes, dtype=np.int64)
    for node, stack in free.items():
        left[node] = len(stack)
    coords = topology.node_coords(np.arange(topology.nodes))
    tables = _distance_tables(topology)
    strength = np.bincount(graph.edge_rows(), weights=graph.weights, minlength=pattern.processes)
    placed = np.full(pattern.processes, -1, dtype=np.int64)
    connection = np.zeros(pattern.processes)
    heap: list[tuple[float, int]] = []
    by_strength = iter(np.lexsort((np.arange(pattern.processes), -strength)))
    for _ in range(pattern.processes):
        process = -1
        while heap:
            key, candidate = heapq.heappop(heap)
            if placed[candidate] < 0 and -key == connection[candidate]:
                process = candidate
                break
        if process < 0:  # start, or a new connected component: the heaviest unplaced process
            process = next(p for p in by_strength if placed[p] < 0)
        start, stop = graph.indptr[process], graph.indptr[process + 1]
        neighbours, weights = graph.indices[start:stop], graph.weights[start:stop]
        anchored = placed[neighbours] >= 0
        cost = np.zeros(topology.nodes)
        for node, weight in zip(placed[neighbours[anchored]] // cores, weights[anchored], strict=True):
            here = coords[node]
            cost += weight * (
                tables[0][here[0], coords[:, 0]] + tables[1][here[1], coords[:, 1]] + tables[2][here[2], coords[:, 2]]
            )
        cost[left == 0] = np.inf
        node = int(np.argmin(cost))
        placed[process] = free[node].pop()
        left[node] -= 1
        for neighbour, weight in zip(neighbours[~anchored], weights[~anchored], strict=True):
            connection[neighbour] += weight
            heapq.heappush(heap, (-connection[neighbour], int(neighbour)))
    return placed, {}


def recursive_bisection(pattern: CommPattern, topology: Topology) -> StrategyResult:
    graph = _Graph.of(pattern)
    occupied = np.sort(_occupied(pattern, topology))
    occupied_coords = topology.node_coords(occupied // topology.cores_per_node)
    result = np.empty(pattern.processes, dtype=np.int64)
    # Work list of (processes, node box lo, node box hi, occupied slots in the box).
    work = [(np.arange(pattern.processes), np.zeros(3, dtype=np.int64), np.asarray(topology.dims), occupied)]
    while work:
        processes, lo, hi, slots = work.pop()
        coords = occupied_coords[np.searchsorted(occupied, slots)]
        lo, hi = coords.min(axis=0), coords.max(axis=0) + 1  # shrink to the nodes in use
        extent = hi - lo
        if (extent == 1).all():
            result[processes] = slots
            continue
        axis = int(np.argmax(extent))  # the longest axis of the box (ties: X first)
        middle = lo[axis] + extent[axis] // 2
        first = coords[:, axis] < middle
        targets = np.array([first.sum(), (~first).sum()])
        part = _partition(graph.subgraph(processes), targets)
        work.append((processes[part == 0], lo, hi, slots[first]))
        work.append((processes[part == 1], lo, hi, slots[~first]))
    return result, {}


def metis(pattern: CommPattern, topology: Topology) -> StrategyResult:
    graph = _Graph.of(pattern)
    occupied = np.sort(_occupied(pattern, topology))
    nodes = np.unique(occupied // topology.cores_per_node)  # node order: X fastest
    node_of_slot = np.searchsorted(nodes, occupied // topology.cores_per_node)
    targets = np.bincount(node_of_slot, minlength=nodes.size)
    part = _partition(graph, targets)
    result = np.empty(pattern.processes, dtype=np.int64)
    # Within a part, positions in ascending order take the node's slots in ascending order.
    result[np.lexsort((np.arange(pattern.processes), part))] = occupied[np.lexsort((occupied, node_of_slot))]
    return result, {}


STRATEGIES: dict[str, Strategy] = {
    "packed": packed,
    "round-robin": round_robin,
    "folded": folded,
    "hilbert": hilbert,
    "cp2k-heuristic": cp2k_heuristic,
    "greedy": greedy,
    "recursive-bisection": recursive_bisection,
    "metis": metis,
}


def strategy_names() -> tuple[str, ...]:
    return tuple(STRATEGIES)


def check_strategy(name: object) -> str:
    if not isinstance(name, str) or name not in STRATEGIES:
        raise ValueError(f"unknown mapping strategy {name!r}; known strategies: {', '.join(STRATEGIES)}")
    return name


def compute_mapping(strategy: str, pattern: CommPattern, topology: Topology) -> Mapping:
    """Map ``pattern``'s process grid onto ``topology`` with the named strategy.

    Raises ValueError for an unknown strategy or a grid with more processes than the
    topology has cores (or than the ranks it describes).
    """
    check_strategy(strategy)
    topology.occupied_slots(pattern.processes)  # raises if the grid does not fit
    slots, details = STRATEGIES[strategy](pattern, topology)
    return Mapping(strategy, pattern, topology, np.asarray(slots, dtype=np.int64), details)
