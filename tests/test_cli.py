"""The ``hybridfd`` command end to end on tiny problems.

Commands that run on ranks (``run``, ``info``) are launched as a user would, through the
installed entry point with ``-n 2``; ``bench`` runs in this process and launches its
experiments' MPI runs itself. Every result is validated against the shipped schema.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hybridfd import experiments, results
from hybridfd.cli import main
from hybridfd.experiments.gustafson import internode_bytes_per_node
from hybridfd.experiments.message_size import half_bandwidth_size, sizes

HYBRIDFD = Path(sys.executable).parent / "hybridfd"
TIMEOUT = 300

#: Every experiment at a size that finishes in seconds; a new experiment must add a line here.
TINY = {
    "cannon": ["--ranks", "4", "--max-size", "16k", "--repeats", "1", "--iterations", "2", "--matrix", "8"],
    "gustafson": [
        "--cores",
        "2",
        "--shape",
        "12",
        "--repeats",
        "1",
        "--volume-cores",
        "4",
        "16",
        "--batches",
        "1",
        "2",
    ],
    "message-size": ["--max-size", "1k", "--repeats", "2"],
    "profile": ["--cores", "2", "--threads", "2", "--grids", "3", "--shape", "12", "--applies", "1"],
    "ring": ["--message", "4k", "--max-size", "2k", "--repeats", "1", "--iterations", "2"],
    "scalability": ["--cores", "2", "--grids", "4", "--shape", "12", "--repeats", "1", "--batches", "1", "4"],
    "speedup": ["--cores", "1", "--grids", "4", "--shape", "12", "--repeats", "1"],
}


def hybridfd(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(HYBRIDFD), *args], capture_output=True, text=True, timeout=TIMEOUT)


def test_run_on_two_ranks_matches_the_reference_and_saves_a_valid_result(tmp_path):
    out = tmp_path / "run.json"
    done = hybridfd(
        "run", "-n", "2", "--approach", "flat-optimized", "--grids", "3", "--shape", "10", "9", "8",
        "--dtype", "complex128", "--periodic", "xz", "--repeats", "2", "-o", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mpiexec" in done.stdout.splitlines()[0] and "-n 2" in done.stdout.splitlines()[0]
    result = results.load(out)
    assert result["config"]["approach"] == "flat-optimized"
    row = result["rows"][0]
    assert row["ranks"] == 2 and row["shape"] == [10, 9, 8] and row["dtype"] == "complex128"
    assert row["bit_identical_to_reference"] and row["max_relative_error"] == 0.0
    assert result["parameters"]["periodic"] == [True, False, True]
    assert result["environment"]["ranks"] == 2


def test_run_a_threaded_approach(tmp_path):
    out = tmp_path / "run.json"
    done = hybridfd(
        "run", "--approach", "hybrid-multiple", "--threads", "2", "--grids", "4", "--shape", "12", "--repeats", "2",
        "-o", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    result = results.load(out)
    assert result["config"]["threads"] == 2 and result["config"]["model"] == "multiple"
    assert result["rows"][0]["bit_identical_to_reference"]


def test_trace_on_two_ranks_writes_a_chrome_trace_a_timeline_and_a_valid_result(tmp_path):
    done = hybridfd(
        "trace", "-n", "2", "--approach", "hybrid-master-only", "--threads", "2", "--grids", "5", "--shape", "12",
        "--applies", "2", "-o", str(tmp_path), "--name", "tiny",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mpiexec" in done.stdout.splitlines()[0]
    result = results.load(tmp_path / "tiny.json")
    assert result["command"] == "trace" and result["config"]["approach"] == "hybrid-master-only"
    assert [(row["rank"], row["thread"]) for row in result["rows"]] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    for row in result["rows"]:
        assert row["dropped"] == 0 and row["compute"] > 0 and row["traced_ms"] > 0
    assert "bit-identical to the reference: yes" in result["notes"]
    assert result["plot"] == str(tmp_path / "tiny.png") and (tmp_path / "tiny.png").stat().st_size > 0
    chrome = json.loads((tmp_path / "tiny.trace.json").read_text())
    complete = [e for e in chrome["traceEvents"] if e["ph"] == "X"]
    assert {e["pid"] for e in complete} == {0, 1} and {e["tid"] for e in complete} == {0, 1}
    assert sum(e["name"] == "apply" for e in complete) == 2 * 2  # two applies on each rank
    assert {"pack", "post", "wait", "compute"} <= {e["name"] for e in complete}


def test_info_on_two_ranks(tmp_path):
    out = tmp_path / "info.json"
    done = hybridfd("-n", "2", "info", "-o", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    result = results.load(out)
    values = {row["key"]: row["value"] for row in result["rows"]}
    assert values["ranks"] == 2 and values["same MPI library"] is True
    assert values["thread level provided"].startswith("MPI_THREAD_")
    assert result["environment"]["mpi_library"] == result["environment"]["mpi_library_core"]


def test_bad_input_found_under_mpiexec_exits_2_naming_it(tmp_path):
    done = hybridfd("run", "-n", "2", "--grid", "3", "1", "1", "--shape", "8", "-o", str(tmp_path / "x.json"))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "(3, 1, 1)" in done.stderr and done.stderr.count("error:") == 1  # one message, not one per rank
    assert not (tmp_path / "x.json").exists()


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["run", "--grids", "100000000000", "--shape", "64"], "--grids 100000000000 of 64x64x64 float64 need"),
        (["trace", "--events", "99999999999999", "--shape", "8"], "events per thread 99999999999999 for 1 threads"),
    ],
)
def test_input_too_large_for_this_machine_exits_2_naming_it(argv, named, tmp_path):
    done = hybridfd(argv[0], "-n", "2", *argv[1:], "-o", str(tmp_path / "out"))
    assert done.returncode == 2, done.stdout + done.stderr
    assert named in done.stderr and done.stderr.count("error:") == 1  # one message, not one per rank


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["run", "--batch", "0"], "--batch: 0 must be at least 1"),
        (["run", "--grids", "two"], "'two' is not an integer"),
        (["run", "--approach", "no-such"], "'no-such'"),
        (["run", "--schedule", "sideways"], "'sideways'"),
        (["run", "--periodic", "xq"], "'xq'"),
        (["run", "--shape", "4", "4"], "got 2: 4 4"),
        (["run", "-n", "0"], "0 must be at least 1"),
        (["run", "--threads", "0"], "--threads: 0 must be at least 1"),
        (["run", "--master-share", "1.5"], "1.5 must be between 0 and 1"),
        (["run", "--model", "nobody"], "'nobody'"),
        (["trace", "--applies", "0"], "--applies: 0 must be at least 1"),
        (["trace", "--events", "lots"], "'lots' is not an integer"),
        (["trace", "--name", "a/b"], "--name 'a/b'"),
        (["trace", "--approach", "no-such"], "'no-such'"),
        (["-n", "2", "report", "r.json"], "only run, trace and info take -n"),
        (["bench"], "no experiment given"),
        (["bench", "no-such"], "'no-such'"),
        (["bench", "ring", "--ranks", "3"], "--ranks 3 is not a multiple of --ranks-per-node 2"),
        (["bench", "ring", "--ranks", "2"], "makes one node"),
        (["bench", "message-size", "--ranks", "1"], "--ranks 1"),
        (["bench", "message-size", "--max-size", "4q"], "'4q'"),
        (["bench", "cannon", "--max-size", "12"], "--max-size 12"),
        (["bench", "gustafson", "--volume-cores", "6"], "--volume-cores 6"),
        (["bench", "speedup", "--cores", "2", "2"], "--cores 2 2"),
        (["bench", "speedup", "--simulate", "bluegene-p", "--placement", "nowhere"], "'nowhere'"),
        (["bench", "scalability", "--placement", "bluegene-p"], "--placement bluegene-p: places simulated ranks"),
        (["bench", "profile", "--approaches", "flat-original", "flat-original"], "each approach may appear once"),
        (["bench", "profile", "--approaches", "sideways"], "'sideways'"),
        (["report", "missing.json"], "cannot read missing.json"),
        (["nonsense"], "'nonsense'"),
    ],
)
def test_malformed_options_exit_2_naming_the_value(argv, named, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert named in capsys.readouterr().err


def test_external_commands_appear_only_when_installed_and_parse_their_own_options(monkeypatch, capsys):
    from hybridfd import cli

    # hybridfd.launch has a main(argv), as an external command's module must.
    monkeypatch.setattr(cli, "EXTERNAL_COMMANDS", {"map": ("hybridfd.launch", "stand-in"), "gone": ("no.such", "x")})
    with pytest.raises(SystemExit) as exit_:
        main(["map", "--help"])
    assert exit_.value.code == 0 and "hybridfd.launch" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_:
        main(["gone"])
    assert exit_.value.code == 2 and "'gone'" in capsys.readouterr().err


def test_report_rejects_a_result_that_does_not_match_the_schema(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "hybridfd-result/1", "command": "bench"}))
    with pytest.raises(SystemExit) as exit_:
        main(["report", str(bad)])
    assert exit_.value.code == 2
    assert "bad.json does not match result.schema.json" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv", [[], ["run"], ["trace"], ["bench"], ["report"], ["info"], *(["bench", n] for n in TINY)]
)
def test_help_everywhere(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--help"])
    assert exit_.value.code == 0
    assert "usage: hybridfd" in capsys.readouterr().out


def test_every_experiment_is_registered_and_has_a_tiny_test():
    modules = {p.stem for p in Path(experiments.__file__).parent.glob("*.py") if not p.stem.startswith("_")}
    registry = experiments.registry()
    assert len(registry) == len(modules)
    assert set(registry) == set(TINY)
    for module in registry.values():
        for attribute in ("NAME", "SUMMARY", "add_arguments", "run", "worker", "plot"):
            assert hasattr(module, attribute), (module.__name__, attribute)


@pytest.mark.parametrize("name", sorted(TINY))
def test_bench_each_experiment_at_tiny_size(name, tmp_path, capsys):
    assert main(["bench", name, *TINY[name], "-o", str(tmp_path), "--timeout", str(TIMEOUT)]) == 0
    printed = capsys.readouterr().out
    result = results.load(tmp_path / f"{name}.json")
    assert result["name"] == name and result["rows"]
    assert result["plot"] == str(tmp_path / f"{name}.png") and (tmp_path / f"{name}.png").stat().st_size > 0
    assert result["title"] in printed.replace("\n", " ") or result["title"][:40] in printed
    for row in result["rows"]:
        assert row.get("bit_identical_to_flat_original") in (None, True)
    # Re-rendered from the saved numbers alone.
    assert main(["report", str(tmp_path / f"{name}.json"), "--plot", str(tmp_path / "again.png")]) == 0
    assert (tmp_path / "again.png").stat().st_size > 0


def test_cannon_on_ranks_reordered_by_a_mapping(tmp_path, capsys):
    argv = ["bench", "cannon", *TINY["cannon"], "--mapping", "hilbert", "-o", str(tmp_path)]
    assert main(argv) == 0
    result = results.load(tmp_path / "cannon.json")
    assert any(note.startswith("mapping: strategy hilbert") for note in result["notes"])


def test_a_failed_experiment_run_exits_1_with_its_output(tmp_path, capsys):
    argv = ["bench", "cannon", *TINY["cannon"], "--mapping", "hilbert", "--topology", "no-such-topology"]
    assert main([*argv, "-o", str(tmp_path)]) == 1
    assert "no-such-topology" in capsys.readouterr().err


def test_message_sizes_and_half_bandwidth():
    assert sizes(8, 64) == [8, 16, 32, 64]
    assert sizes(8, 100) == [8, 16, 32, 64, 100]
    # Bandwidth 1, 2, 4, 8: half of 8 is reached exactly at the third size.
    assert half_bandwidth_size([1, 2, 4, 8], [1.0, 2.0, 4.0, 8.0]) == pytest.approx(4.0)
    assert half_bandwidth_size([1, 2], [5.0, 6.0]) is None


def test_internode_volume_counted_by_hand():
    # 8^3 over 2 ranks: boxes 4x8x8; each rank sends 2 x-faces of 2 planes of 8x8 float64 (2048 B).
    assert internode_bytes_per_node((8, 8, 8), 2, 1, 2, 8) == (2048.0, 2048, 4096)
    # The same ranks on one node: nothing leaves the node.
    assert internode_bytes_per_node((8, 8, 8), 2, 2, 2, 8) == (0.0, 0, 4096)
    # One box: periodic copies only.
    assert internode_bytes_per_node((8, 8, 8), 1, 1, 2, 8) == (0.0, 0, 0)
    # A ring of 4 boxes (16x4x4 cut along x; faces 2 x 4 x 4 x 8 B = 256 B), 2 ranks to a
    # node. Packed (ranks 0-1, 2-3), each rank has one neighbour on the other node; placed
    # on slots 0, 2, 1, 3 (ranks 0-2 and 1-3 share a node), both neighbours are.
    assert internode_bytes_per_node((16, 4, 4), 4, 2, 2, 8) == (512.0, 512, 2048)
    assert internode_bytes_per_node((16, 4, 4), 4, 2, 2, 8, slots=(0, 2, 1, 3)) == (1024.0, 1024, 2048)


@pytest.mark.parametrize("command", ["map", "calibrate", "tune"])
def test_the_other_parts_commands_are_hooked_in(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    assert "usage:" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_:
        main([command, "--no-such-option"])
    assert exit_.value.code == 2


@pytest.mark.parametrize(
    ("where", "named"),
    [
        (lambda tmp: Path("/proc/no-such-dir/calibration.json"), "--output /proc/no-such-dir/calibration.json: cannot"),
        (lambda tmp: tmp, "is a directory"),
    ],
)
def test_calibrate_names_an_output_it_cannot_write_before_measuring(where, named, tmp_path):
    started = time.perf_counter()
    done = hybridfd("calibrate", "--output", str(where(tmp_path)))
    assert done.returncode == 2, done.stdout + done.stderr
    assert named in done.stderr
    assert time.perf_counter() - started < 30  # nothing was measured (a calibration takes minutes)
