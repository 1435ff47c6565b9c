"""Topology: the network a job's ranks sit on (a 3D torus or mesh of multicore nodes).

A node is a point of a 3D grid of ``dims`` nodes; an axis wraps (torus) or not (mesh);
each node has ``cores_per_node`` cores, and the links along each axis have a bandwidth
(any one unit: only the ratios between axes matter to the metrics). A *slot* is one
core, numbered ``node * cores_per_node + core`` with nodes numbered x fastest
(``node = x + X*(y + Y*z)``). Where the ranks of a communicator run is ``rank_slots``:
by default rank r runs on slot r, which is what a launcher that fills one node after
another ("packed", the default of mpiexec and of Cray's ALPS) does.

Presets (``Topology.preset``): ``bluegene-p`` (GPAW journal Table 3.1 and Sect. 5: 4
cores per node in virtual mode, six 425 MB/s links per direction, a mesh below 512
nodes and a torus from 512 on), ``cray-xe6`` (CP2K seed Sect. 3.1 and 3.3: 32 cores per
node on a Gemini 3D torus whose X and Z links gave up to 30 % more bandwidth than Y) and
``host`` (the machine this runs on: one node per shared-memory domain found by
``MPI_Comm_split_type``).
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from mpi4py import MPI

if sys.version_info >= (3, 11):
    import tomllib
else:  # the same parser, before it joined the standard library
    import tomli as tomllib

PRESETS = ("bluegene-p", "cray-xe6", "host")
AXES = "XYZ"

#: What a topology file may hold (TOML or JSON); ``wrap`` and ``link_bandwidth`` are optional.
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "dims": {"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 3, "maxItems": 3},
        "wrap": {"type": "array", "items": {"type": "boolean"}, "minItems": 3, "maxItems": 3},
        "cores_per_node": {"type": "integer", "minimum": 1},
        "link_bandwidth": {
            "type": "array",
            "items": {"type": "number", "exclusiveMinimum": 0},
            "minItems": 3,
            "maxItems": 3,
        },
    },
    "required": ["dims", "cores_per_node"],
    "additionalProperties": False,
}

# Blue Gene/P: a partition of 512 nodes or more is a torus, a smaller one a mesh
# (GPAW journal, Sect. 5); 4 cores per node; 425 MB/s per link and direction (Table 3.1).
_BGP_CORES, _BGP_TORUS_NODES, _BGP_LINK = 4, 512, 425.0
# Cray XE6 (Monte Rosa): 32-core nodes on a Gemini 3D torus; the seed measured up to
# 30 % more bandwidth along X and Z than along Y (Sect. 3.3). Only the ratio is known,
# so the bandwidths are relative to Y.
_XE6_CORES, _XE6_LINK = 32, (1.3, 1.0, 1.3)


def node_box(nodes: int) -> tuple[int, int, int]:
    """The most cubic (X, Y, Z) with X*Y*Z = ``nodes`` (least surface; X <= Y <= Z)."""
    best = (1, 1, nodes)
    for x in range(1, round(nodes ** (1 / 3)) + 2):
        if nodes % x:
            continue
        for y in range(x, math.isqrt(nodes // x) + 1):
            if (nodes // x) % y:
                continue
            z = nodes // x // y
            if x * y + y * z + x * z < best[0] * best[1] + best[1] * best[2] + best[0] * best[2]:
                best = (x, y, z)
    return best


@dataclass(frozen=True)
class Topology:
    """A 3D torus or mesh of ``dims`` nodes with ``cores_per_node`` cores each."""

    dims: tuple[int, int, int]
    cores_per_node: int
    wrap: tuple[bool, bool, bool] = (True, True, True)
    link_bandwidth: tuple[float, float, float] = (1.0, 1.0, 1.0)
    name: str = "custom"
    #: Slot of each rank of the communicator the topology describes; None: rank r on slot r.
    rank_slots: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        # One validation for files, presets and direct construction.
        data = {
            "name": self.name,
            "dims": list(self.dims),
            "wrap": list(self.wrap),
            "cores_per_node": self.cores_per_node,
            "link_bandwidth": list(self.link_bandwidth),
        }
        _validate(data, f"topology {self.name!r}")
        object.__setattr__(self, "dims", tuple(int(n) for n in self.dims))
        object.__setattr__(self, "wrap", tuple(bool(w) for w in self.wrap))
        object.__setattr__(self, "link_bandwidth", tuple(float(b) for b in self.link_bandwidth))
        if self.rank_slots is not None:
            slots = tuple(int(s) for s in self.rank_slots)
            if len(set(slots)) != len(slots) or any(not 0 <= s < self.cores for s in slots):
                raise ValueError(
                    f"topology {self.name!r}: rank_slots must be distinct slots in [0, {self.cores}), got {slots!r}"
                )
            object.__setattr__(self, "rank_slots", slots)

    # -- sizes -------------------------------------------------------------------------
    @property
    def nodes(self) -> int:
        return self.dims[0] * self.dims[1] * self.dims[2]

    @property
    def cores(self) -> int:
        """Number of slots (cores) in the whole topology."""
        return self.nodes * self.cores_per_node

    @property
    def link_cost(self) -> np.ndarray:
        """Cost of a byte crossing one link per axis, relative to the fastest axis (1.0)."""
        bandwidth = np.asarray(self.link_bandwidth)
        return bandwidth.max() / bandwidth

    def node_coords(self, nodes: np.ndarray | int) -> np.ndarray:
        """(x, y, z) of node ids (any shape) as an array of shape (..., 3)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        x, y = self.dims[0], self.dims[1]
        return np.stack([nodes % x, (nodes // x) % y, nodes // (x * y)], axis=-1)

    def node_ids(self, coords: np.ndarray) -> np.ndarray:
        coords = np.asarray(coords, dtype=np.int64)
        return coords[..., 0] + self.dims[0] * (coords[..., 1] + self.dims[1] * coords[..., 2])

    def occupied_slots(self, processes: int) -> np.ndarray:
        """Slots of ranks 0..processes-1 (rank order). Raises ValueError if they do not fit."""
        processes = int(processes)
        if self.rank_slots is not None:
            if processes != len(self.rank_slots):
                raise ValueError(
                    f"{processes} processes do not match topology {self.name!r}, which describes "
                    f"{len(self.rank_slots)} ranks"
                )
            return np.asarray(self.rank_slots, dtype=np.int64)
        if processes > self.cores:
            raise ValueError(
                f"{processes} processes do not fit topology {self.name!r}: it has only {self.cores} cores "
                f"({'x'.join(map(str, self.dims))} nodes x {self.cores_per_node} cores per node)"
            )
        return np.arange(processes, dtype=np.int64)

    def describe(self) -> str:
        kind = "torus" if all(self.wrap) else "mesh" if not any(self.wrap) else "torus/mesh"
        wrapped = "".join(a for a, w in zip(AXES, self.wrap, strict=True) if w)
        wraps = "" if kind != "torus/mesh" else f" (wrap {wrapped})"
        bandwidth = "/".join(f"{b:g}" for b in self.link_bandwidth)
        return (
            f"{self.name}: {'x'.join(map(str, self.dims))} {kind}{wraps}, {self.cores_per_node} cores/node, "
            f"link bandwidth X/Y/Z {bandwidth}"
        )

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "dims": list(self.dims),
            "wrap": list(self.wrap),
            "cores_per_node": self.cores_per_node,
            "link_bandwidth": list(self.link_bandwidth),
        }

    # -- construction ------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: dict, source: str = "topology") -> Topology:
        """A topology from a mapping with the fields of :data:`SCHEMA` (validated)."""
        _validate(data, source)
        return cls(
            dims=tuple(data["dims"]),
            cores_per_node=data["cores_per_node"],
            wrap=tuple(data.get("wrap", (True, True, True))),
            link_bandwidth=tuple(data.get("link_bandwidth", (1.0, 1.0, 1.0))),
            name=data.get("name", source),
        )

    @classmethod
    def from_file(cls, path: str | Path) -> Topology:
        """Load a ``.toml`` or ``.json`` topology file (fields of :data:`SCHEMA`)."""
        path = Path(path)
        if path.suffix not in (".toml", ".json"):
            raise ValueError(f"topology file {str(path)!r} must end in .toml or .json")
        try:
            text = path.read_text()
        except OSError as error:
            raise ValueError(f"cannot read topology file {str(path)!r}: {error.strerror}") from error
        try:
            data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
        except (tomllib.TOMLDecodeError, json.JSONDecodeError) as error:
            raise ValueError(f"topology file {str(path)!r} is not valid {path.suffix[1:].upper()}: {error}") from error
        if isinstance(data, dict):
            data.setdefault("name", path.stem)
        return cls.from_dict(data, f"topology file {str(path)!r}")

    @classmethod
    def preset(cls, name: str, processes: int | None = None, comm: MPI.Comm | None = None) -> Topology:
        """A named preset sized for ``processes`` ranks (``host``: collective over ``comm``)."""
        if name == "host":
            return cls.host(MPI.COMM_WORLD if comm is None else comm)
        if name not in PRESETS:
            raise ValueError(f"unknown topology preset {name!r}; known presets: {', '.join(PRESETS)}")
        if processes is None or int(processes) < 1:
            raise ValueError(f"topology preset {name!r} needs a positive number of processes, got {processes!r}")
        processes = int(processes)
        if name == "bluegene-p":
            nodes = -(-processes // _BGP_CORES)
            torus = nodes >= _BGP_TORUS_NODES
            return cls(node_box(nodes), _BGP_CORES, (torus,) * 3, (_BGP_LINK,) * 3, name)
        nodes = -(-processes // _XE6_CORES)
        return cls(node_box(nodes), _XE6_CORES, (True, True, True), _XE6_LINK, name)

    @classmethod
    def host(cls, comm: MPI.Comm) -> Topology:
        """Collective: the nodes ``comm``'s ranks run on, from ``MPI_Comm_split_type`` (shared memory).

        Nodes are numbered in the order of their lowest rank and laid on a ring (hybridfd
        cannot see the host network's shape; give a topology file for a real torus).
        """
        local = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.rank)
        try:
            leader = local.allreduce(comm.rank, op=MPI.MIN)
            local_rank = local.rank
        finally:
            local.Free()
        leaders, local_ranks = np.array(comm.allgather((leader, local_rank)), dtype=np.int64).T
        node_leaders, node_of_rank = np.unique(leaders, return_inverse=True)
        cores = int(np.bincount(node_of_rank).max())
        slots = node_of_rank * cores + local_ranks
        return cls((len(node_leaders), 1, 1), cores, (True, True, True), (1.0, 1.0, 1.0), "host", tuple(slots))


def resolve(topology: Topology | str | Path | None, processes: int) -> Topology | str:
    """A Topology from a preset name or file path; ``"host"`` stays a name (it needs a collective).

    Raises ValueError naming the value for an unknown name or a bad file.
    """
    if topology is None:
        return "host"
    if isinstance(topology, Topology):
        return topology
    if isinstance(topology, (str, Path)):
        text = str(topology)
        if text == "host":
            return "host"
        if text in PRESETS:
            return Topology.preset(text, processes)
        if text.endswith((".toml", ".json")):
            return Topology.from_file(text)
        raise ValueError(
            f"unknown topology {text!r}: give a preset ({', '.join(PRESETS)}), a .toml or .json file, or a Topology"
        )
    raise TypeError(f"topology must be a Topology, a preset name or a file path, got {type(topology).__name__}")


def _validate(data: object, source: str) -> None:
    import jsonschema  # 0.1 s to import: only where a document is checked

    validator = jsonschema.Draft202012Validator(SCHEMA)
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        details = "; ".join(f"{_field(e.absolute_path)}{e.message}" for e in errors)
        raise ValueError(f"{source} is invalid: {details}")


def _field(path: Sequence) -> str:
    if not path:
        return ""
    text = str(path[0]) + "".join(f"[{p}]" for p in list(path)[1:])
    return f"{text}: "
