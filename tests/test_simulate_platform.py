"""SimGrid platforms generated from mapping topologies (hybridfd.simulate.platform) equal
hand-written small files (tests/data/platforms), compared as canonical XML."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

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
        ("host-2cores", Topology((1, 1, 1), 2, (True,) * 3, (1.0,) * 3, "host")),
        ("torus-8x8x8", Topology((8, 8, 8), 4, (True,) * 3, (425.0,) * 3, "torus")),
    ],
)
def test_generated_platform_equals_the_hand_written_file(name: str, topology: Topology) -> None:
    expected = (DATA / f"{name}.xml").read_text()
    assert canonical(platform.platform_xml(topology, MACHINE)) == canonical(expected)


def test_bluegene_p_is_a_mesh_below_512_nodes_and_a_torus_from_512() -> None:
    small = platform.platform_xml(Topology.preset("bluegene-p", 32), platform.BLUEGENE_P)
    assert 'routing="DijkstraCache"' in small and small.count("<host ") == 8
    assert small.count("<link ") == 12  # a 2x2x2 mesh has 3 x 4 links
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
    other = platform.platform_xml(topology, MACHINE).replace('routing="DijkstraCache"', 'routing="Floyd"')
    given, given_hosts = platform.write(topology, MACHINE, 8, tmp_path / "given", other)
    assert given.read_text() == other and given_hosts.read_text() == hosts.read_text()
