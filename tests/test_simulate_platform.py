"""SimGrid platforms generated from mapping topologies (hybridfd.simulate.platform) equal
hand-written small files (tests/data/platforms), compared as canonical XML."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from hybridfd.mapping import metrics
from hybridfd.mapping.topology import Topology
from hybridfd.simulate import platform

DATA = Path(__file__).parent / "data" / "platforms"
MACHINE = platform.Machine(
    "test", core_speed=1e9, bandwidth_unit=1e6, link_latency=1e-7, node_bandwidth=2e9, node_latency=1e-6
)


def canonical(text: str) -> str:
    # Comments and the doctype are not part of the platform.
    return ET.canonicalize(ET.tostring(ET.fromstring(text.split("?>", 1)[1].split(">", 1)[1])), strip_text=True)


@pytest.mark.parametrize(
    ("name", "topology"),
    [
        ("mesh-2x1x1", Topology((2, 1, 1), 2, (False,) * 3, (425.0,) * 3, "mesh")),
        ("mesh-3x2x1", Topology((3, 2, 1), 4, (False,) * 3, (425.0,) * 3, "mesh")),
        ("ring-4x1x1", Topology((4, 1, 1), 1, (True,) * 3, (425.0,) * 3, "ring")),
        ("host-2cores", Topology((1, 1, 1), 2, (True,) * 3, (1.0,) * 3, "host")),
        ("torus-8x8x8", Topology((8, 8, 8), 4, (True,) * 3, (425.0,) * 3, "torus")),
    ],
)
def test_generated_platform_equals_the_hand_written_file(name: str, topology: Topology) -> None:
    expected = (DATA / f"{name}.xml").read_text()
    assert canonical(platform.platform_xml(topology, MACHINE)) == canonical(expected)


def test_bluegene_p_is_a_mesh_below_512_nodes_and_a_torus_from_512() -> None:
    small = platform.platform_xml(Topology.preset("bluegene-p", 32), platform.BLUEGENE_P)
    assert 'routing="Full"' in small and small.count("<host ") == 8
    assert small.count("<link ") == 12 + 8  # a 2x2x2 mesh has 3 x 4 links, and a node link each
    assert small.count("<route ") == 8 * 8  # every pair given, and each node's route to itself
    with pytest.raises(ValueError, match="261632 routes"):  # written route by route: too many
        platform.platform_xml(Topology((8, 8, 8), 4, (False,) * 3, (425.0,) * 3, "mesh"), platform.BLUEGENE_P)
    big = platform.platform_xml(Topology.preset("bluegene-p", 2048), platform.BLUEGENE_P)
    assert 'topology="TORUS" topo_parameters="8,8,8"' in big and 'bw="425000000Bps"' in big and 'core="4"' in big


def test_hostfile_is_packed_and_a_single_node_takes_any_number_of_ranks() -> None:
    assert platform.hostfile(Topology.preset("bluegene-p", 8), 8) == "node-0\n" * 4 + "node-1\n" * 4
    assert platform.hostfile(platform.host_topology(2), 8) == "node-0\n" * 8


def test_the_host_platform_has_this_machines_cores_and_every_rank_on_it() -> None:
    """Validation models this machine as it is: one host with the cores this process may
    run on (more ranks than cores then share them, as in the real run)."""
    cores = len(os.sched_getaffinity(0))
    topology = platform.host_topology()
    assert topology.nodes == 1 and topology.cores_per_node == cores
    (host,) = ET.fromstring(platform.platform_xml(topology, MACHINE).split("?>", 1)[1].split(">", 1)[1]).iter("host")
    assert host.get("core") == str(cores)
    assert platform.hostfile(topology, 2 * cores) == "node-0\n" * (2 * cores)


def test_write_takes_another_platform_for_the_same_hosts(tmp_path: Path) -> None:
    topology = Topology.preset("bluegene-p", 8)
    generated, hosts = platform.write(topology, MACHINE, 8, tmp_path / "generated")
    assert generated.read_text() == platform.platform_xml(topology, MACHINE)
    other = platform.platform_xml(topology, MACHINE).replace('routing="Full"', 'routing="Floyd"')
    given, given_hosts = platform.write(topology, MACHINE, 8, tmp_path / "given", other)
    assert given.read_text() == other and given_hosts.read_text() == hosts.read_text()


def routes_of(xml: str) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(src, dst) -> [(link, direction), ...] of a Full-routed platform, in route order."""
    zone = ET.fromstring(xml.split("?>", 1)[1].split(">", 1)[1]).find("zone")
    return {
        (r.get("src"), r.get("dst")): [(c.get("id"), c.get("direction")) for c in r.iter("link_ctn")]
        for r in zone.iter("route")
    }


def test_mesh_routes_go_x_then_y_then_z_link_by_link() -> None:
    """A 3x2x1 mesh: the routes with a choice among shortest paths, checked by hand."""
    routes = routes_of(platform.platform_xml(Topology((3, 2, 1), 4, (False,) * 3, (425.0,) * 3, "mesh"), MACHINE))
    assert len(routes) == 36  # 30 pairs and 6 routes of a node to itself
    # node-0 (0,0) to node-5 (2,1): two x hops up, then y at node-2 (not y first at node-0)
    assert routes[("node-0", "node-5")] == [("node-0-x", "UP"), ("node-1-x", "UP"), ("node-2-y", "UP")]
    # node-3 (0,1) to node-1 (1,0): x at y = 1 first, then y down the link of node-1
    assert routes[("node-3", "node-1")] == [("node-3-x", "UP"), ("node-1-y", "DOWN")]
    # node-5 (2,1) to node-0: x down twice, then y down
    assert routes[("node-5", "node-0")] == [("node-4-x", "DOWN"), ("node-3-x", "DOWN"), ("node-0-y", "DOWN")]
    assert routes[("node-4", "node-4")] == [("node-4-local", None)]


def test_platform_routes_are_the_mapping_metrics_routes() -> None:
    """One routing: the bytes of any pattern summed over the platform's routes equal
    hybridfd.mapping's link loads, on a mesh, a torus and a torus with 2-node axes."""
    rng = np.random.default_rng(7)
    for topology in (
        Topology((4, 3, 2), 4, (False,) * 3, (425.0,) * 3, "mesh"),
        Topology((4, 3, 5), 1, (True,) * 3, (425.0,) * 3, "torus"),
        Topology((2, 2, 3), 1, (True,) * 3, (425.0,) * 3, "small-torus"),
    ):
        routes = routes_of(platform.platform_xml(topology, MACHINE))
        src, dst = rng.integers(0, topology.nodes, 200), rng.integers(0, topology.nodes, 200)
        nbytes = rng.integers(1, 1000, 200).astype(np.float64)
        loads = metrics.link_loads(topology, src, dst, nbytes)
        on_platform: dict[tuple[str, str], float] = {}
        for a, b, n in zip(src.tolist(), dst.tolist(), nbytes.tolist(), strict=True):
            if a != b:
                for link in routes[(f"node-{a}", f"node-{b}")]:
                    on_platform[link] = on_platform.get(link, 0.0) + n
        assert sorted(on_platform.values()) == sorted(loads[loads > 0].tolist())
        hops = np.abs(metrics.hop_vectors(topology, src, dst)).sum(axis=1)
        assert [len(routes[(f"node-{a}", f"node-{b}")]) for a, b in zip(src, dst, strict=True) if a != b] == [
            h for h, a, b in zip(hops.tolist(), src, dst, strict=True) if a != b
        ]
