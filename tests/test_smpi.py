"""hybridfd-bench under SimGrid SMPI (`make smpi` builds it, installing SimGrid with apt
if missing, as `make tsan` does for clang): 8 simulated ranks on the generated host
platform compute the same checksum as the numpy reference, and with modelled compute
(shared grid memory, compute charged from the platform's core speed) the simulated time
is deterministic and at least the compute time the model charges; Fig. 7.4's lines
predict the direct simulation."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from hybridfd.simulate import driver, platform, smpi

ROOT = Path(__file__).resolve().parents[1]
PROBLEM = ["--grids", "4", "--shape", "16", "12", "10", "--approach", "flat-optimized", "--batch", "2"]


@pytest.fixture(scope="module")
def smpi_driver() -> Path:
    result = subprocess.run(["make", "-s", "smpi"], cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (ROOT / smpi.DRIVER_IN_CHECKOUT).exists()
    return ROOT / smpi.DRIVER_IN_CHECKOUT


def test_eight_simulated_ranks_match_the_reference(smpi_driver: Path, tmp_path: Path) -> None:
    machine = platform.host_machine(core_speed=1e9, latency=1e-6, bandwidth=5e9)
    record = smpi.run(8, platform.host_topology(2), machine, [*PROBLEM, "--repeats", "2"], tmp_path, smpi_driver)
    (row,) = record["rows"]
    assert row["simulated"] is True and row["ranks"] == 8 and row["bit_identical_to_reference"] is True
    assert record["environment"]["thread_level"] == "MPI_THREAD_SINGLE"
    expected = driver.reference_checksum(4, (16, 12, 10), row["process_grid"])
    assert row["checksum"] == row["reference_checksum"] == expected


def test_modelled_compute_is_deterministic_and_charges_the_stencil(smpi_driver: Path, tmp_path: Path) -> None:
    machine = platform.host_machine(core_speed=1e8, latency=1e-6, bandwidth=5e9)
    arguments = [*PROBLEM, "--repeats", "3", "--compute", "modelled"]
    record = smpi.run(8, platform.host_topology(2), machine, arguments, tmp_path, smpi_driver)
    (row,) = record["rows"]
    assert row["compute"] == "modelled" and row["checksum"] is None
    # No host time enters: the samples differ only by the rounding of MPI_Wtime differences.
    assert max(row["samples_ms"]) == pytest.approx(min(row["samples_ms"]), rel=1e-9), row["samples_ms"]
    # 8 ranks share 2 cores: the whole problem's points at 19 flops each, on 2 cores.
    compute_seconds = 4 * 16 * 12 * 10 * 19 / 2 / 1e8
    assert row["median_ms"] >= 1e3 * compute_seconds


def test_threads_at_scale_charge_the_node_rate_and_the_team_cost(smpi_driver: Path, tmp_path: Path) -> None:
    """The modelling arithmetic of docs/simulation.md ("Threads at scale"), exactly: 2 grid
    groups on 2 ranks (each the whole periodic box, so no messages, and 2 of the 4 grids),
    compute split over 2 threads, one batch step of 2 grids, team costs per step and apply."""
    machine = platform.host_machine(core_speed=1e8, latency=1e-6, bandwidth=5e9)
    arguments = [
        *("--grids", "4", "--shape", "16", "12", "10", "--approach", "flat-optimized", "--batch", "2"),
        *("--slope", "0", "--grid-groups", "2", "--node-cores", "2", "--sync-per-batch", "1e-3"),
        *("--sync-per-apply", "2e-3", "--repeats", "1", "--compute", "modelled"),
    ]
    (row,) = smpi.run(2, platform.host_topology(2), machine, arguments, tmp_path, smpi_driver)["rows"]
    compute_seconds = 2 * 16 * 12 * 10 * 19 / 2 / 1e8
    assert row["median_ms"] == pytest.approx(1e3 * (compute_seconds + 1e-3 + 2e-3), rel=1e-5), row


def extra_ms_of_a_cost(smpi_driver: Path, tmp_path: Path, **cost: float) -> float:
    """How much longer (simulated ms) flat-original takes with ``cost`` (a Machine field)
    than without: 3 grids of 16x12x10 on 2 host ranks (process grid 2x1x1, periodic), one
    exchange round per grid with nothing to hide it behind."""
    import dataclasses

    free = platform.host_machine(core_speed=1e8, latency=1e-6, bandwidth=5e9)
    arguments = [
        *("--grids", "3", "--shape", "16", "12", "10", "--approach", "flat-original"),
        *("--repeats", "1", "--check", "off", "--compute", "modelled"),
    ]
    times = []
    for machine in (free, dataclasses.replace(free, **cost)):
        (row,) = smpi.run(2, platform.host_topology(2), machine, arguments, tmp_path, smpi_driver)["rows"]
        assert row["process_grid"] == [2, 1, 1]
        times.append(row["median_ms"])
    return times[1] - times[0]


def test_the_per_message_cost_is_charged_once_per_isend(smpi_driver: Path, tmp_path: Path) -> None:
    """Machine.message_overhead reaches the driver's messages (platform.py): flat-original
    sends 2 halo Isends per grid, and each apply starts with one MPI_Allreduce
    (agree_on_problems; recursive doubling: one Isend per rank at 2 ranks). So 3 grids
    cost (2 x 3 + 1) x 2 x message_overhead more than with no cost, to the clock's rounding."""
    overhead = 25e-6  # each end's share: 50 us charged per Isend
    extra = extra_ms_of_a_cost(smpi_driver, tmp_path, message_overhead=overhead)
    assert extra == pytest.approx(1e3 * (2 * 3 + 1) * 2 * overhead, abs=1e-6)


def test_the_halo_copy_is_charged_per_lane_packed(smpi_driver: Path, tmp_path: Path) -> None:
    """Machine.halo_copy reaches the driver (--halo-copy-per-lane): flat-original packs the
    two x-faces of each grid, 2 x 12 x 10 lanes each at radius 2 (the y and z faces are
    the rank's own: no message, no copy). So 3 grids cost 3 x 2 x 240 x halo_copy more
    than with no cost, to the clock's rounding; a machine without it passes the driver
    nothing."""
    assert platform.host_machine(core_speed=1e8, latency=1e-6, bandwidth=5e9).driver_arguments() == []
    halo_copy = 1e-6
    extra = extra_ms_of_a_cost(smpi_driver, tmp_path, halo_copy=halo_copy)
    assert extra == pytest.approx(1e3 * 3 * 2 * 240 * halo_copy, abs=1e-6)


@pytest.mark.parametrize(("cores", "shared_by"), [(4, 1), (2, 2), (1, 4)])
def test_ranks_beyond_the_cores_share_them(smpi_driver: Path, tmp_path: Path, cores: int, shared_by: int) -> None:
    """The host platform's placement (docs/simulation.md, section 4): 4 ranks on one host of
    ``cores`` cores, each computing alone (4 grid groups of one grid on the whole periodic
    box: no messages), take ``shared_by`` times one rank's compute, as processes
    time-sharing the cores would in total (SimGrid shares a host's cores fairly among the
    ranks computing, each at most one core)."""
    machine = platform.host_machine(core_speed=1e8, latency=1e-6, bandwidth=5e9)
    arguments = [
        *("--grids", "4", "--shape", "16", "12", "10", "--approach", "flat-optimized", "--batch", "1"),
        *("--slope", "0", "--grid-groups", "4", "--repeats", "1", "--compute", "modelled"),
    ]
    (row,) = smpi.run(4, platform.host_topology(cores), machine, arguments, tmp_path, smpi_driver)["rows"]
    one_rank_seconds = 16 * 12 * 10 * 19 / 1e8
    # to 0.1 us: the simulated clock as MPI_Wtime reports it
    assert row["median_ms"] == pytest.approx(1e3 * shared_by * one_rank_seconds, abs=1e-4), row


def simgrid_routes(printer: Path, xml_path: Path, pairs: list[tuple[int, int]]) -> dict[tuple[int, int], list[str]]:
    """SimGrid's own route (link names in order) of each node pair of a platform file."""
    text = "".join(f"{a} {b}\n" for a, b in pairs)
    command = [str(printer), str(xml_path), "--log=root.thres:critical"]
    out = subprocess.run(command, input=text, capture_output=True, text=True, check=True, timeout=600).stdout
    return {(int(f[0]), int(f[1])): f[2:] for f in (line.split() for line in out.splitlines())}


def test_simgrid_routes_the_platforms_as_hybridfd_mapping_does(smpi_driver: Path, tmp_path: Path) -> None:
    """One routing: on a generated mesh SimGrid takes the X-Y-Z routes as written, and
    SimGrid's TORUS cluster (512 nodes and more) routes every pair as
    hybridfd.mapping.metrics.routes does, ties half way round included."""
    import numpy as np

    from hybridfd.mapping import metrics
    from hybridfd.mapping.topology import Topology

    printer = tmp_path / "simgrid-routes"
    source = Path(__file__).with_name("simgrid_routes.cpp")
    subprocess.run(["g++", "-O1", "-std=c++17", str(source), "-o", str(printer), "-lsimgrid"], check=True)
    for cores in (96, 2048):  # a 2x3x4 mesh; the 8x8x8 torus
        topology = Topology.preset("bluegene-p", cores)
        xml_path = tmp_path / f"{cores}.xml"
        xml_path.write_text(platform.platform_xml(topology, platform.BLUEGENE_P))
        # every pair from a few sources, among them the middle of each axis (4, 4*8, 4*64:
        # exactly half way round to 0) and the far corner
        sources = [0, 1, 4, 5, 32, 36, 256, 292, 511] if cores == 2048 else list(range(topology.nodes))
        src = np.repeat(sources, topology.nodes)
        dst = np.tile(np.arange(topology.nodes), len(sources))
        off = src != dst
        found = simgrid_routes(printer, xml_path, list(zip(src.tolist(), dst.tolist(), strict=True)))
        for a, b, links in zip(
            src[off].tolist(), dst[off].tolist(), metrics.routes(topology, src[off], dst[off]), strict=True
        ):
            expected = []
            for link in links.tolist():
                node, axis, up = link // 6, link // 2 % 3, link % 2
                coords = topology.node_coords(node)
                coords[axis] = (coords[axis] + (1 if up else -1)) % topology.dims[axis]
                other = int(topology.node_ids(coords))
                low, high = (node, other) if up else (other, node)
                if cores == 2048:
                    expected.append(f"{topology.name}_link_from_{low}_to_{high}_{'UP' if up else 'DOWN'}")
                else:
                    expected.append(f"node-{low}-{'xyz'[axis]}_{'UP' if up else 'DOWN'}")
            assert found[(a, b)] == expected, (cores, a, b)
        local = "node-0-local" if cores == 96 else f"{topology.name}_link_0_loopback"
        assert found[(0, 0)] == [local]  # in-node messages cross the node's own link on both


def test_scalability_s_lines_predict_the_direct_simulation(smpi_driver: Path, tmp_path: Path, capsys) -> None:
    """Fig. 7.4's extrapolation on a small Blue Gene/P partition (16 cores, 12^3 grids):
    `hybridfd bench scalability --simulate --line-from` fits each approach's line through
    three small grid counts and evaluates it at --grids; simulating all those grids
    directly gives the same time (the pipeline is steady), and each line's check is small."""
    from hybridfd import results
    from hybridfd.cli import main

    argv = [
        "bench", "scalability", "--simulate", "bluegene-p", "--cores", "16", "--shape", "12", "--grids", "256",
        "--approaches", "flat-original", "flat-optimized", "hybrid-multiple",
        "--simulate-cache", str(tmp_path / "cache"), "--simulate-driver", str(smpi_driver),
    ]  # fmt: skip
    assert main([*argv, "--line-from", "16", "-o", str(tmp_path / "line")]) == 0
    assert main([*argv, "-o", str(tmp_path / "direct")]) == 0
    capsys.readouterr()
    line = {r["approach"]: r for r in results.load(tmp_path / "line" / "scalability.json")["rows"]}
    direct = {r["approach"]: r for r in results.load(tmp_path / "direct" / "scalability.json")["rows"]}
    assert set(line) == set(direct) == {"flat-original", "flat-optimized", "hybrid-multiple"}
    for approach, row in line.items():  # here they agree to about 14 digits
        assert row["source"] == "line" and direct[approach]["source"] == "direct"
        assert row["ms"] == pytest.approx(direct[approach]["ms"], rel=1e-9)
        assert abs(row["check"]) < 1e-9 and direct[approach]["check"] is None
