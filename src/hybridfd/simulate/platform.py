"""SimGrid platforms generated from the mapping topology presets (one source of truth for
the network's shape: :class:`hybridfd.mapping.Topology`), plus what a simulator needs
that a mapping does not: core speed, link latency, in-node messaging, per-message
overhead (:class:`Machine`, each number with its source in docs/simulation.md).

- A topology of one node (``host``) becomes one host with its cores.
- A torus of 512 nodes or more becomes SimGrid's ``<cluster topology="TORUS">`` (routes
  dimension by dimension, six links per node, each with its bandwidth per direction).
- Anything else (Blue Gene/P below 512 nodes is a mesh, GPAW journal Sect. 5) is written
  out node by node: one split-duplex link per neighbour pair and axis (wrap links where
  an axis wraps), one in-node link per node (as the cluster's loopback), and every route
  given dimension by dimension, X, then Y, then Z, as Blue Gene/P's deterministic routing
  goes: the routes of :func:`hybridfd.mapping.metrics.routes`, whose loads the mapping
  metrics count (SimGrid's Full routing). SimGrid's own shortest-path search would pick
  other routes among the many shortest ones of a mesh and load some links up to 1.5x
  more (docs/simulation.md, "The 1,024-core mesh").

Nodes are ``node-<i>`` numbered x fastest as in the Topology; a hostfile puts rank r on
the node of its slot (``Topology.occupied_slots``: packed unless a mapping says otherwise).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hybridfd.mapping import metrics
from hybridfd.mapping.topology import Topology

#: From this many nodes on, a torus is written as SimGrid's TORUS cluster (compact and
#: routed dimension-ordered); smaller ones, and meshes, node by node with every route
#: written out (so a mesh must be smaller).
CLUSTER_FROM_NODES = 512


@dataclass(frozen=True)
class Machine:
    """The costs of a platform beyond its topology. Units: flops as hybridfd-bench counts
    them (cpp/tools/simulation.hpp: per lane of a point), bytes, seconds."""

    name: str
    #: stencil flops per second of one core (the rate a whole apply runs at, per core)
    core_speed: float
    #: bytes per second of one unit of ``Topology.link_bandwidth`` (MB/s for bluegene-p)
    bandwidth_unit: float
    #: seconds per link crossed
    link_latency: float
    #: messages between ranks of one node (shared memory or the node's DMA)
    node_bandwidth: float
    node_latency: float
    #: CPU time a rank spends per message at each end (BG/P: 1.5 us to send, 1.5 us to
    #: receive). SMPI charges it as one piece of 2 x message_overhead, both ends' shares,
    #: to the sender at each MPI_Isend (smpi/ois). Why there: SimGrid 3.32 (src/smpi/mpi/
    #: smpi_request.cpp, Request::start and finish_wait) charges MPI_Isend smpi/ois when
    #: it starts, MPI_Ssend and a detached MPI_Send smpi/os, and a receive smpi/or only
    #: when it completes a detached send; MPI_Irecv, MPI_Wait/Waitall and the receive of a
    #: non-detached send have no option of their own, and SETTINGS turns detached sends
    #: off. hybridfd-bench's halo messages (the p2p transport) are MPI_Isends, as are the
    #: messages of SMPI's recursive-doubling allreduce (one per apply, agree_on_problems)
    #: and barrier, and each rank sends as many halo messages as it receives: so every
    #: rank pays both shares of its messages, the receive share before the message leaves
    #: instead of after it arrives (a message's end-to-end time is the same). smpi/os is
    #: the same piece and smpi/or 0, so no message is charged twice. Not charged:
    #: MPI_Send_init/MPI_Start (the persistent transport) and a non-detached MPI_Send,
    #: which SimGrid 3.32 charges nothing (smpi.run refuses any transport but p2p when
    #: the cost is set: smpi.CHARGED_TRANSPORTS). SimGrid
    #: charges it as a sleep of the rank, not as work on a core: a rank in its overhead
    #: leaves its core to the others (as a core of its own does on Blue Gene/P, one rank
    #: per core; not so on the host platform with more ranks than cores).
    message_overhead: float = 0.0
    #: CPU time per halo lane a rank packs into its messages: the copy into the message
    #: and the receiver's copy out of it, both charged to the sender when it packs the
    #: batch (hybridfd-bench --halo-copy-per-lane; modelled compute only). The core speed
    #: is the stencil's alone, so this is what a rank's copies of its faces add, and it
    #: grows with the faces, not the box (docs/simulation.md, "The halo copy").
    halo_copy: float = 0.0
    sources: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def per_message_charge(self) -> float:
        """Seconds SMPI charges the sender per message: both ends' ``message_overhead``."""
        return 2 * self.message_overhead

    def driver_arguments(self) -> list[str]:
        """hybridfd-bench arguments that charge this machine's costs the driver charges
        itself (none where those costs are 0)."""
        return ["--halo-copy-per-lane", f"{self.halo_copy:.9g}"] if self.halo_copy else []

    def smpirun_options(self) -> list[str]:
        """SMPI settings that make SMPI use exactly these costs."""
        return [
            # The platform's latency and bandwidth as they are: no correction factors
            # (SMPI's defaults were fitted to an Ethernet cluster).
            "--cfg=smpi/bw-factor:0:1",
            "--cfg=smpi/lat-factor:0:1",
            f"--cfg=smpi/ois:0:{self.per_message_charge:.9g}:0",
            f"--cfg=smpi/os:0:{self.per_message_charge:.9g}:0",
            "--cfg=smpi/or:0:0:0",
        ]


#: Blue Gene/P (GPAW journal Table 3.1 and Sect. 7; docs/simulation.md derives each number).
BLUEGENE_P = Machine(
    name="bluegene-p",
    # 32 grids of 144^3 took 9 ms on 2,048 cores (hybrid-multiple, Sect. 7.2), i.e. 46,656
    # points per core; at the 70 % CPU utilisation the journal reports for hybrid-multiple
    # (Sect. 8) that is 46,656 / 6.3 ms = 7.4 Mpoints/s per core, x 19 flops per point.
    core_speed=7.4e6 * 19,
    bandwidth_unit=1e6,  # Topology.preset("bluegene-p") has 425 (MB/s, Table 3.1)
    link_latency=100e-9,
    node_bandwidth=3.4e9,  # a quarter of the node's 13.6 GB/s memory bandwidth (Table 3.1)
    node_latency=1e-6,
    message_overhead=1.5e-6,
    sources={
        "core_speed": "GPAW journal Sect. 7.2 (9 ms, 32 grids of 144^3, 2,048 cores) and Sect. 8 (70 %)",
        "link_bandwidth": "GPAW journal Table 3.1: 6 x 2 x 425 MB/s (via Topology.preset)",
        "link_latency": "assumption: about 100 ns per torus hop (IBM J. Res. Dev. 52(1/2), 2008)",
        "message_overhead": (
            "assumption: 1.5 us at each end (3 us per message, charged at MPI_Isend), about the 3 us MPI "
            "nearest-neighbour latency reported for BG/P"
        ),
        "node": "assumption: in-node messages at a quarter of the node's 13.6 GB/s (Table 3.1), 1 us",
    },
)


def host_topology(cores: int | None = None) -> Topology:
    """This machine as one node: what ``Topology.preset("host")`` finds for a job on one
    machine, without the collective (the cores of this process's affinity mask)."""
    from hybridfd.results import cores as affinity_cores

    return Topology((1, 1, 1), cores or affinity_cores(), (True, True, True), (1.0, 1.0, 1.0), "host")


def host_machine(core_speed: float, latency: float, bandwidth: float, message_overhead: float = 0.0) -> Machine:
    """This machine, from its measured costs: the driver's apply rate per core, the
    ping-pong fit of hybridfd.perfmodel.calibrate (Hockney: latency, bandwidth) and the
    CPU time per message of calibrate.message_seconds (at each end; SMPI charges both
    ends' shares at the send, see ``Machine.message_overhead``)."""
    return Machine(
        name="host",
        core_speed=core_speed,
        bandwidth_unit=bandwidth,
        link_latency=latency,
        node_bandwidth=bandwidth,
        node_latency=latency,
        message_overhead=message_overhead,
        sources={"all": "measured on this machine (docs/simulation.md, validation)"},
    )


def _number(value: float) -> str:
    return f"{value:.9g}"


def _host(node: int, topology: Topology, machine: Machine) -> str:
    return f'    <host id="node-{node}" speed="{_number(machine.core_speed)}f" core="{topology.cores_per_node}"/>\n'


# A few platforms are in use at a time, and the cache key of every simulated run holds its
# platform: a mesh of 256 nodes is 65,280 routes (22.6 MB), about a second to write.
@functools.lru_cache(maxsize=4)
def neighbour_links(topology: Topology) -> list[tuple[int, int, int, str]]:
    """The links of a node-by-node platform, in the order they are written: for each
    node and axis with a neighbour one step up (or round the wrap), (node, axis,
    neighbour, link name). A link is named after its lower node."""
    links = []
    for node in range(topology.nodes):
        coords = topology.node_coords(node)
        for axis in range(3):
            size = topology.dims[axis]
            if coords[axis] + 1 < size or (topology.wrap[axis] and size > 2):
                neighbour_coords = coords.copy()
                neighbour_coords[axis] = (coords[axis] + 1) % size
                links.append((node, axis, int(topology.node_ids(neighbour_coords)), f"node-{node}-{'xyz'[axis]}"))
    return links


def platform_xml(topology: Topology, machine: Machine) -> str:
    """SimGrid platform (DTD 4.1) of ``topology`` with ``machine``'s costs."""
    header = (
        "<?xml version='1.0'?>\n"
        '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
        f"<!-- hybridfd: {topology.describe()}; {machine.name} costs (docs/simulation.md) -->\n"
        '<platform version="4.1">\n'
    )
    nodes = topology.nodes
    bandwidth = [b * machine.bandwidth_unit for b in topology.link_bandwidth]
    if nodes >= CLUSTER_FROM_NODES and all(topology.wrap):
        if len(set(bandwidth)) != 1:
            raise ValueError(f"{topology.name}: SimGrid's TORUS cluster has one link bandwidth, got {bandwidth}")
        dims = ",".join(str(n) for n in topology.dims)
        return header + (
            f'  <cluster id="{topology.name}" prefix="node-" suffix="" radical="0-{nodes - 1}" '
            f'speed="{_number(machine.core_speed)}f" core="{topology.cores_per_node}" '
            f'bw="{_number(bandwidth[0])}Bps" lat="{_number(machine.link_latency)}s" '
            f'topology="TORUS" topo_parameters="{dims}" sharing_policy="SPLITDUPLEX" '
            f'loopback_bw="{_number(machine.node_bandwidth)}Bps" loopback_lat="{_number(machine.node_latency)}s"/>\n'
            "</platform>\n"
        )
    if nodes == 1:  # one host; its messages to itself cross the in-node link
        return header + (
            f'  <zone id="{topology.name}" routing="Full">\n'
            + _host(0, topology, machine)
            + f'    <link id="node-0-local" bandwidth="{_number(machine.node_bandwidth)}Bps" '
            f'latency="{_number(machine.node_latency)}s" sharing_policy="FATPIPE"/>\n'
            '    <route src="node-0" dst="node-0"><link_ctn id="node-0-local"/></route>\n'
            "  </zone>\n</platform>\n"
        )
    if nodes >= CLUSTER_FROM_NODES:
        # Every route is written out: nodes^2 of them, 100 MB of XML at 512 nodes.
        raise ValueError(
            f"{topology.describe()}: {nodes} nodes written route by route would be {nodes * (nodes - 1)} routes; "
            f"node-by-node platforms go up to {CLUSTER_FROM_NODES - 1} nodes (a torus from {CLUSTER_FROM_NODES} "
            "nodes on is SimGrid's TORUS cluster)"
        )
    body = [f'  <zone id="{topology.name}" routing="Full">\n']
    body += [_host(node, topology, machine) for node in range(nodes)]
    # ctn[link]: the <link_ctn> of each directed link as hybridfd.mapping.metrics indexes
    # it (node the hop leaves * 6 + axis * 2 + (step > 0)); a link is named after its
    # lower node and UP goes towards the higher one (or round the wrap).
    ctn = [""] * (nodes * 6)
    for node, axis, neighbour, link in neighbour_links(topology):
        body.append(
            f'    <link id="{link}" bandwidth="{_number(bandwidth[axis])}Bps" '
            f'latency="{_number(machine.link_latency)}s" sharing_policy="SPLITDUPLEX"/>\n'
        )
        ctn[node * 6 + axis * 2 + 1] = f'<link_ctn id="{link}" direction="UP"/>'
        ctn[neighbour * 6 + axis * 2] = f'<link_ctn id="{link}" direction="DOWN"/>'
    # Messages within a node cross the node's own link, as on the TORUS cluster (its
    # loopback): FATPIPE, each message gets the whole bandwidth.
    for node in range(nodes):
        body.append(
            f'    <link id="node-{node}-local" bandwidth="{_number(machine.node_bandwidth)}Bps" '
            f'latency="{_number(machine.node_latency)}s" sharing_policy="FATPIPE"/>\n'
        )
    routes = [
        f'    <route src="node-{node}" dst="node-{node}"><link_ctn id="node-{node}-local"/></route>\n'
        for node in range(nodes)
    ]
    src, dst = np.divmod(np.arange(nodes * nodes), nodes)
    off = src != dst
    src, dst = src[off], dst[off]
    for a, b, links in zip(src.tolist(), dst.tolist(), metrics.routes(topology, src, dst), strict=True):
        routes.append(
            f'    <route src="node-{a}" dst="node-{b}" symmetrical="NO">{"".join(ctn[i] for i in links)}</route>\n'
        )
    return header + "".join(body + routes) + "  </zone>\n</platform>\n"


def hostfile(topology: Topology, ranks: int) -> str:
    """One line per rank: the node its slot is on. On a one-node topology any number of
    ranks share the node (SimGrid shares its cores among them, as the OS does here)."""
    if topology.nodes == 1:
        return "node-0\n" * ranks
    slots = topology.occupied_slots(ranks)
    return "".join(f"node-{int(slot) // topology.cores_per_node}\n" for slot in slots)


def write(
    topology: Topology, machine: Machine, ranks: int, directory: str | os.PathLike, xml: str | None = None
) -> tuple[Path, Path]:
    """Writes ``platform.xml`` (``xml``, or the one generated from ``topology``) and
    ``hostfile`` for ``ranks`` ranks into ``directory``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    platform_path, hostfile_path = directory / "platform.xml", directory / "hostfile"
    platform_path.write_text(platform_xml(topology, machine) if xml is None else xml)
    hostfile_path.write_text(hostfile(topology, ranks))
    return platform_path, hostfile_path
