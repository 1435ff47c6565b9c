"""Topologies: presets, files (TOML and JSON, schema-validated), and errors naming the bad value."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hybridfd.mapping import Topology
from hybridfd.mapping.topology import node_box, resolve


def test_bluegene_p_is_a_mesh_below_512_nodes_and_a_torus_from_512():
    small = Topology.preset("bluegene-p", 1024)  # 256 nodes
    assert small.cores_per_node == 4 and small.nodes == 256 and small.wrap == (False, False, False)
    assert small.link_bandwidth == (425.0, 425.0, 425.0)
    large = Topology.preset("bluegene-p", 2048)  # 512 nodes: 8x8x8 torus
    assert large.dims == (8, 8, 8) and large.wrap == (True, True, True)
    assert Topology.preset("bluegene-p", 16384).dims == (16, 16, 16)


def test_cray_xe6_has_32_cores_and_faster_x_and_z_links():
    xe6 = Topology.preset("cray-xe6", 16384)
    assert xe6.cores_per_node == 32 and xe6.dims == (8, 8, 8)
    assert xe6.link_bandwidth[0] == xe6.link_bandwidth[2] == pytest.approx(1.3 * xe6.link_bandwidth[1])
    np.testing.assert_allclose(xe6.link_cost, [1.0, 1.3, 1.0])


def test_node_box_is_most_cubic():
    assert node_box(512) == (8, 8, 8)
    assert node_box(128) == (4, 4, 8)
    assert node_box(12) == (2, 2, 3)
    assert node_box(7) == (1, 1, 7)


def test_node_numbering_is_x_fastest():
    topo = Topology((3, 2, 2), 1)
    coords = topo.node_coords(np.arange(12))
    assert coords[:4].tolist() == [[0, 0, 0], [1, 0, 0], [2, 0, 0], [0, 1, 0]]
    assert np.array_equal(topo.node_ids(coords), np.arange(12))


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_files_load(tmp_path, suffix):
    data = {"dims": [4, 2, 2], "wrap": [True, False, True], "cores_per_node": 8, "link_bandwidth": [2.0, 1.0, 2.0]}
    path = tmp_path / f"machine{suffix}"
    if suffix == ".json":
        path.write_text(json.dumps(data))
    else:
        path.write_text(
            "dims = [4, 2, 2]\nwrap = [true, false, true]\ncores_per_node = 8\nlink_bandwidth = [2.0, 1.0, 2.0]\n"
        )
    topo = Topology.from_file(path)
    assert topo.dims == (4, 2, 2) and topo.wrap == (True, False, True) and topo.cores_per_node == 8
    assert topo.name == "machine" and topo.cores == 128
    assert resolve(str(path), 10) == topo


def test_optional_fields_default_to_a_uniform_torus(tmp_path):
    path = tmp_path / "t.toml"
    path.write_text("dims = [2, 2, 2]\ncores_per_node = 1\n")
    topo = Topology.from_file(path)
    assert topo.wrap == (True, True, True) and topo.link_bandwidth == (1.0, 1.0, 1.0)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("dims = [4, 2, 2]\n", "'cores_per_node' is a required property"),
        ("cores_per_node = 4\n", "'dims' is a required property"),
        ("dims = [4, -2, 2]\ncores_per_node = 4\n", r"dims\[1\]: -2 is less than the minimum of 1"),
        ("dims = [4, 2, 2]\ncores_per_node = -4\n", "cores_per_node: -4 is less than the minimum of 1"),
        ("dims = [4, 2]\ncores_per_node = 4\n", r"dims: \[4, 2\] is too short"),
        ("dims = [4, 2, 2]\ncores_per_node = 4\nlink_bandwidth = [1, 0, 1]\n", r"link_bandwidth\[1\]"),
        ("dims = [4, 2, 2]\ncores_per_node = 4\ncolour = 'red'\n", "'colour' was unexpected"),
        ("dims = [4, 2, 2\n", "not valid TOML"),
    ],
)
def test_bad_files_name_the_field(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match=message) as error:
        Topology.from_file(path)
    assert "bad.toml" in str(error.value)


def test_bad_names_and_sizes():
    with pytest.raises(ValueError, match="unknown topology 'bgq'"):
        resolve("bgq", 4)
    with pytest.raises(ValueError, match="must end in .toml or .json"):
        Topology.from_file("machine.yaml")
    with pytest.raises(ValueError, match="cannot read topology file"):
        Topology.from_file("/nonexistent/machine.toml")
    with pytest.raises(ValueError, match="needs a positive number of processes, got 0"):
        Topology.preset("cray-xe6", 0)
    with pytest.raises(ValueError, match=r"65 processes do not fit topology 'custom': it has only 64 cores"):
        Topology((2, 2, 4), 4).occupied_slots(65)
    with pytest.raises(ValueError, match="dims"):
        Topology((2, 0, 4), 4)
    with pytest.raises(ValueError, match="rank_slots must be distinct"):
        Topology((2, 1, 1), 2, rank_slots=(0, 0))


def test_describe_names_the_shape():
    assert Topology.preset("bluegene-p", 64).describe().startswith("bluegene-p: 2x2x4 mesh, 4 cores/node")
    assert "torus/mesh (wrap XZ)" in Topology((2, 2, 2), 1, wrap=(True, False, True)).describe()
