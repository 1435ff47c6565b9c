"""hybridfd.simulate.experiments: how an experiment's variants become SMPI runs of
hybridfd-bench (threads at scale: hybrid-multiple as grid groups, hybrid-master-only as
one rank per node), the cache key, and the plumbing from ``_stencil.run_all`` through the
JSON cache (no SMPI run here: the cache is filled by hand)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from hybridfd.experiments import ExperimentInputError
from hybridfd.experiments._stencil import run_all, variant
from hybridfd.simulate import experiments, platform


def job(tmp_path: Path, large: bool = False, grids: int = 32) -> dict:
    settings = {
        "platform": "bluegene-p",
        "cache": str(tmp_path / "cache"),
        "driver": str(tmp_path / "driver"),  # never started: every run is cached
        "team_sync": 5e-6,
        "large": large,
    }
    return {"shape": 144, "dtype": "float64", "grids": grids, "repeats": 1, "simulate": settings}


def value(arguments: tuple[str, ...], name: str) -> str:
    return arguments[arguments.index(name) + 1]


def test_ranks_and_arguments_of_each_model_at_scale() -> None:
    assert experiments.model_at_scale("flat", 6, 4) == (6, [])
    assert experiments.model_at_scale("multiple", 16, 4) == (16, ["--model", "flat", "--grid-groups", "4"])
    assert experiments.model_at_scale("masteronly", 16, 4) == (4, ["--model", "flat", "--node-cores", "4"])
    assert experiments.model_at_scale("multiple", 6, 4) is None  # not whole nodes
    assert experiments.model_at_scale("funneled-overlap", 16, 4) is None  # not modelled at scale


def test_master_only_runs_one_rank_per_node_with_the_team_cost_per_batch(tmp_path: Path) -> None:
    run = experiments.plan(variant("hybrid-master-only", 8), "masteronly", 64, job(tmp_path), 5e-6)
    assert run.ranks == 16 and run.threads == 4
    assert value(run.arguments, "--node-cores") == "4" and value(run.arguments, "--sync-per-batch") == "5e-06"
    assert value(run.arguments, "--batch") == "8" and "--sync-per-apply" not in run.arguments
    # rank i on node i: the hostfile names 16 distinct nodes in order
    assert platform.hostfile(run.topology, run.ranks).split() == [f"node-{i}" for i in range(16)]


def test_hybrid_multiple_is_four_flat_ranks_per_node_in_grid_groups(tmp_path: Path) -> None:
    run = experiments.plan(variant("hybrid-multiple", 1), "multiple", 64, job(tmp_path), 5e-6)
    assert run.ranks == 64 and run.threads == 4
    assert value(run.arguments, "--grid-groups") == "4" and value(run.arguments, "--sync-per-apply") == "5e-06"
    assert value(run.arguments, "--slope") == "0"  # batch 1 has no slope
    # packed: ranks 4k .. 4k+3 (one of each group) share node k
    assert platform.hostfile(run.topology, run.ranks).split()[:8] == ["node-0"] * 4 + ["node-1"] * 4


def test_flat_run_and_cache_key(tmp_path: Path) -> None:
    run = experiments.plan(variant("flat-original"), "flat", 2048, job(tmp_path), 5e-6)
    assert run.ranks == 2048 and run.threads == 1 and run.topology.nodes == 512
    assert value(run.arguments, "--compute") == "modelled" and value(run.arguments, "--repeats") == "1"
    key = experiments.cache_key(run, platform.BLUEGENE_P)
    assert key == experiments.cache_key(run, platform.BLUEGENE_P)
    other_problem = experiments.plan(variant("flat-original"), "flat", 2048, job(tmp_path, grids=16), 5e-6)
    assert experiments.cache_key(other_problem, platform.BLUEGENE_P) != key
    slower = platform.Machine(**{**platform.BLUEGENE_P.__dict__, "core_speed": 1e8})
    assert experiments.cache_key(run, slower) != key  # the platform file is in the key
    assert experiments.cache_key(run, platform.BLUEGENE_P, "another driver") != key
    # the halo copy reaches the driver as an argument: in the key when set, absent at 0
    copying = dataclasses.replace(platform.BLUEGENE_P, halo_copy=1e-7)
    assert experiments.cache_key(run, copying) != key
    assert experiments.cache_key(run, dataclasses.replace(copying, halo_copy=0.0)) == key


def test_the_cache_key_changes_with_the_routes_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A mesh's routes are part of its platform file, so results simulated on other routes
    (any but X-Y-Z) are not read back."""
    run = experiments.plan(variant("flat-optimized"), "flat", 1024, job(tmp_path), 5e-6)
    key = experiments.cache_key(run, platform.BLUEGENE_P)
    generated = platform.platform_xml(run.topology, platform.BLUEGENE_P)
    assert 'routing="Full"' in generated
    monkeypatch.setattr(platform, "platform_xml", lambda *_: generated.replace('routing="Full"', 'routing="Dijkstra"'))
    assert experiments.cache_key(run, platform.BLUEGENE_P) != key


def cache_row(tmp_path: Path, run: experiments.SimulatedRun, ms: float) -> None:
    driver = tmp_path / "driver"
    driver.write_bytes(b"a driver")
    key = experiments.cache_key(run, platform.BLUEGENE_P, experiments.driver_digest(driver))
    path = Path(job(tmp_path)["simulate"]["cache"]) / f"{key}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    config = {"approach": run.approach, "model": "flat", "batch": 8, "slope": 1, "threads": 1}
    # what the driver's record holds beyond that (a saved result's schema asks for it)
    config |= {"schedule": "double-buffered", "transport": "p2p", "slope_kind": "geometric", "progress": 0}
    path.write_text(json.dumps({"median_ms": ms, "samples_ms": [ms], "config": config, "process_grid": [4, 2, 2]}))


def test_run_all_reads_each_variant_from_the_cache(tmp_path: Path) -> None:
    the_job = job(tmp_path)
    the_job["variants"] = [variant("flat-original"), variant("hybrid-multiple"), variant("hybrid-master-only")]
    models = {"flat-original": "flat", "hybrid-multiple": "multiple", "hybrid-master-only": "masteronly"}
    for k, v in enumerate(the_job["variants"]):
        cache_row(tmp_path, experiments.plan(v, models[v["label"]], 16, the_job, 5e-6), 10.0 + k)
    measured = {m["label"]: m for m in run_all("speedup", 16, 2, the_job, timeout=1)}
    assert measured["flat-original"]["median_seconds"] == pytest.approx(0.010)
    assert (measured["flat-original"]["ranks"], measured["flat-original"]["threads"]) == (16, 1)
    # threaded approaches are reported as the papers count them: one rank of 4 threads per node
    assert (measured["hybrid-multiple"]["ranks"], measured["hybrid-multiple"]["threads"]) == (4, 4)
    assert measured["hybrid-master-only"]["config"]["approach"] == "hybrid-master-only"
    assert measured["hybrid-master-only"]["median_seconds"] == pytest.approx(0.012)
    assert measured["flat-original"]["bit_identical_to_flat_original"] is None  # not checked


def test_more_than_the_large_limit_needs_the_flag(tmp_path: Path) -> None:
    the_job = job(tmp_path)
    the_job["variants"] = [variant("flat-original")]
    with pytest.raises(ExperimentInputError, match="pass --large"):
        run_all("scalability", 8192, 4, the_job, timeout=1)


def test_not_simulating_adds_nothing_to_the_job() -> None:
    class Args:
        simulate = None

    assert experiments.job_settings(Args()) == {} and experiments.notes(Args()) == []


def test_titles_say_how_times_were_taken() -> None:
    from argparse import Namespace

    from hybridfd.simulate.experiments import timing

    assert timing(Namespace(simulate=None, repeats=5)) == "medians of 5"
    assert timing(Namespace(simulate="bluegene-p", repeats=5)) == "one simulated apply each (bluegene-p)"


def gustafson_in_cache(tmp_path: Path, cores: int, ms: float) -> list[str]:
    """The CLI arguments of a simulated gustafson run on ``cores`` cores whose every point
    is put in the cache first (approach k of the registry at ``ms + k`` ms)."""
    from hybridfd.experiments._stencil import model_of
    from hybridfd.experiments.scalability import variants

    the_job = dict(job(tmp_path, grids=cores), shape=12, radius=2)
    for k, v in enumerate(variants([])):
        run = experiments.plan(v, model_of(v["options"]["approach"]), cores, the_job, 5e-6)
        if run is not None:
            cache_row(tmp_path, run, ms + k)
    settings = the_job["simulate"]
    return [
        "bench", "gustafson", "--simulate", "bluegene-p", "--cores", str(cores), "--shape", "12",
        "--volume-cores", "4", "16", "--team-sync", "5e-06",
        "--simulate-cache", settings["cache"], "--simulate-driver", settings["driver"],
    ]  # fmt: skip


def timed(result: dict) -> dict[tuple[int, str], float]:
    return {(r["cores"], r["approach"]): r["ms"] for r in result["rows"] if r["kind"] == "measured"}


def test_gustafson_merge_keeps_the_saved_rows_of_other_core_counts(tmp_path: Path, capsys) -> None:
    from hybridfd import results
    from hybridfd.cli import main

    assert main([*gustafson_in_cache(tmp_path, 4, 10.0), "-o", str(tmp_path / "four")]) == 0
    four = results.load(tmp_path / "four" / "gustafson.json")
    saved = tmp_path / "four" / "gustafson.json"
    assert main([*gustafson_in_cache(tmp_path, 16, 20.0), "--merge", str(saved), "-o", str(tmp_path / "both")]) == 0
    both = results.load(tmp_path / "both" / "gustafson.json")
    assert {c for c, _ in timed(both)} == {4, 16}
    assert {k: v for k, v in timed(both).items() if k[0] == 4} == timed(four)  # kept as saved
    assert [r["cores"] for r in both["rows"] if r["kind"] == "measured"] == sorted(c for c, _ in timed(both))
    assert any(note.startswith(f"rows at 4 cores from {saved}") for note in both["notes"])
    # A core count this run times replaces the saved one's rows: one row per approach.
    merged = tmp_path / "both" / "gustafson.json"
    assert main([*gustafson_in_cache(tmp_path, 4, 30.0), "--merge", str(merged), "-o", str(tmp_path / "again")]) == 0
    again = timed(results.load(tmp_path / "again" / "gustafson.json"))
    assert len(again) == len(timed(both))
    assert {k: v for k, v in again.items() if k[0] == 16} == {k: v for k, v in timed(both).items() if k[0] == 16}
    assert min(v for k, v in again.items() if k[0] == 4) == 30.0
    capsys.readouterr()


def test_gustafson_merge_refuses_another_problem(tmp_path: Path, capsys) -> None:
    from hybridfd.cli import main

    assert main([*gustafson_in_cache(tmp_path, 4, 10.0), "-o", str(tmp_path / "four")]) == 0
    saved = str(tmp_path / "four" / "gustafson.json")
    argv = gustafson_in_cache(tmp_path, 16, 20.0)
    argv[argv.index("--team-sync") + 1] = "1e-05"
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--merge", saved, "-o", str(tmp_path / "other")])
    assert exit_.value.code == 2
    assert "another problem (--team-sync 5e-06 there, 1e-05 here)" in capsys.readouterr().err


def test_a_line_through_two_points_is_checked_on_the_third() -> None:
    from hybridfd.simulate import lines

    line = lines.fit([(24, 5.0 + 0.25 * 24), (16, 5.0 + 0.25 * 16 + 0.1), (32, 5.0 + 0.25 * 32)])
    assert line.points[0][0] == 16 and line.ms_per_grid == pytest.approx(0.25)
    assert line.at(2048) == pytest.approx(5.0 + 0.25 * 2048)
    assert line.check_relative == pytest.approx(-0.1 / 9.1)  # the line misses the 16-grid point by 0.1 ms
    assert line.valid_at(2048) and not line.valid_at(12) and not line.valid_at(36)  # 8 grids per batch step
    assert lines.grid_counts("flat-original", 1024) == (4, 8, 12)
    assert lines.grid_counts("flat-original", 4096) == (2, 4, 6) and lines.grid_counts("flat-original", 16384) == (
        1,
        2,
        3,
    )
    assert lines.grid_counts("hybrid-multiple", 16384) == (64, 96, 128)


#: A synthetic line per approach (ms = a + b G) for the gustafson --line-from tests.
LINES = {
    "flat-original": (3.0, 2.0),
    "flat-optimized": (4.0, 1.0),
    "hybrid-master-only": (5.0, 1.0),
    "hybrid-multiple": (6.0, 1.0),
}


def lines_in_cache(tmp_path: Path, cores: int, placement: str = "packed", later: float = 0.0) -> None:
    """Every approach's three line points on ``cores`` cores in the cache (problem of
    gustafson_in_cache), exactly on the line LINES gives it; the flat approaches' ranks
    placed ``placement``, their lines ``later`` ms above LINES' (the threaded ones' as given)."""
    from hybridfd.experiments._stencil import model_of
    from hybridfd.simulate import lines

    for approach, (a, b) in LINES.items():
        flat = model_of(approach) == "flat"
        for grids in lines.grid_counts(approach, cores):
            the_job = dict(job(tmp_path, grids=grids), shape=12, radius=2)
            run = experiments.plan(variant(approach), model_of(approach), cores, the_job, 5e-6, placement=placement)
            cache_row(tmp_path, run, a + (later if flat else 0.0) + b * grids)


def test_gustafson_gives_points_from_the_lines_and_marks_them(tmp_path: Path, capsys) -> None:
    """--line-from C: at C cores and more each approach's point is its line at G = cores,
    read from a synthetic cache of the line's three points; rows say direct or line, and
    a saved direct row at such a core count stays beside the line's."""
    from hybridfd import results
    from hybridfd.cli import main

    assert main([*gustafson_in_cache(tmp_path, 64, 100.0), "-o", str(tmp_path / "direct")]) == 0
    lines_in_cache(tmp_path, 64)
    argv = gustafson_in_cache(tmp_path, 16, 20.0)
    argv[argv.index("--cores") + 1 : argv.index("--cores") + 2] = ["16", "64"]
    saved = tmp_path / "direct" / "gustafson.json"
    assert main([*argv, "--line-from", "64", "--merge", str(saved), "-o", str(tmp_path / "lines")]) == 0
    result = results.load(tmp_path / "lines" / "gustafson.json")
    rows = [r for r in result["rows"] if r["kind"] == "measured"]
    from_line = {r["approach"]: r for r in rows if r["source"] == "line"}
    assert {r["cores"] for r in from_line.values()} == {64} and set(from_line) == set(LINES)
    for approach, (a, b) in LINES.items():
        assert from_line[approach]["ms"] == pytest.approx(a + b * 64)
        assert from_line[approach]["line"]["check_relative"] == pytest.approx(0, abs=1e-12)
    direct = {(r["cores"], r["approach"]): r["ms"] for r in rows if r["source"] == "direct"}
    assert {c for c, _ in direct} == {16, 64}  # 16 simulated now, 64 kept from --merge
    assert min(ms for (c, _), ms in direct.items() if c == 64) == 100.0
    assert [r["cores"] for r in rows] == sorted(r["cores"] for r in rows)
    assert any("'line' rows are T(G) = a + b G" in note for note in result["notes"])
    assert (tmp_path / "lines" / "gustafson.png").exists()
    out = capsys.readouterr().out
    assert "line" in out and "direct" in out


def test_gustafson_line_points_must_have_the_lines_batch_form(tmp_path: Path, capsys) -> None:
    from hybridfd.cli import main

    lines_in_cache(tmp_path, 16)
    argv = gustafson_in_cache(tmp_path, 16, 20.0)
    with pytest.raises(SystemExit) as exit_:  # hybrid-multiple's line is fitted at 64-128 grids, 32 per step
        main([*argv, "--line-from", "16", "-o", str(tmp_path / "out")])
    assert exit_.value.code == 2
    assert "16 grids are not of the batch form of its line's 64, 96, 128 grids" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--line-from", "16", "--batches", "4", "-o", str(tmp_path / "out")])
    assert exit_.value.code == 2
    assert "no --batches" in capsys.readouterr().err


def test_a_cost_per_batch_step_reaches_hybrid_multiples_driver(tmp_path: Path) -> None:
    """plan(batch_sync=S): hybrid-multiple's ranks are charged S per batch step
    (--sync-per-batch) beside the team join per apply; 0 leaves the run as before."""
    plain = experiments.plan(variant("hybrid-multiple"), "multiple", 64, job(tmp_path), 5e-6)
    charged = experiments.plan(variant("hybrid-multiple"), "multiple", 64, job(tmp_path), 5e-6, batch_sync=5e-5)
    assert value(charged.arguments, "--sync-per-batch") == "5e-05"
    assert value(charged.arguments, "--sync-per-apply") == "5e-06"
    assert "--sync-per-batch" not in plain.arguments
    assert plain == experiments.plan(variant("hybrid-multiple"), "multiple", 64, job(tmp_path), 5e-6, batch_sync=0.0)
    assert experiments.cache_key(charged, platform.BLUEGENE_P) != experiments.cache_key(plain, platform.BLUEGENE_P)


def test_a_schedule_in_place_of_the_approach_s_reaches_the_driver(tmp_path: Path) -> None:
    """plan(schedule=S): the driver runs S (--schedule) instead of the approach's own
    (the sensitivity study's "nothing hidden", all-dims); None leaves the run and its
    cache key as before."""
    plain = experiments.plan(variant("hybrid-multiple"), "multiple", 64, job(tmp_path), 5e-6)
    unhidden = experiments.plan(variant("hybrid-multiple"), "multiple", 64, job(tmp_path), 5e-6, schedule="all-dims")
    assert value(unhidden.arguments, "--schedule") == "all-dims"
    assert "--schedule" not in plain.arguments
    assert plain == experiments.plan(variant("hybrid-multiple"), "multiple", 64, job(tmp_path), 5e-6, schedule=None)
    assert experiments.cache_key(unhidden, platform.BLUEGENE_P) != experiments.cache_key(plain, platform.BLUEGENE_P)


def test_the_per_message_cost_reaches_smpirun_as_one_charge_per_isend(tmp_path: Path) -> None:
    """Machine.message_overhead (each end's share) is charged at MPI_Isend as both ends'
    shares (smpi/ois; smpi/os alike, smpi/or 0 so nothing is charged twice): Blue Gene/P's
    1.5 us at each end is 3 us per Isend, and the cost is part of every cache key."""
    import dataclasses

    options = platform.BLUEGENE_P.smpirun_options()
    assert platform.BLUEGENE_P.message_overhead == 1.5e-6
    assert "--cfg=smpi/ois:0:3e-06:0" in options
    assert "--cfg=smpi/os:0:3e-06:0" in options
    assert "--cfg=smpi/or:0:0:0" in options
    free = dataclasses.replace(platform.BLUEGENE_P, message_overhead=0.0)
    assert "--cfg=smpi/ois:0:0:0" in free.smpirun_options()
    charged = dataclasses.replace(platform.BLUEGENE_P, message_overhead=1.5e-5)
    assert "--cfg=smpi/ois:0:3e-05:0" in charged.smpirun_options()
    run = experiments.plan(variant("flat-original"), "flat", 64, job(tmp_path), 5e-6)
    keys = {experiments.cache_key(run, m) for m in (platform.BLUEGENE_P, free, charged)}
    assert len(keys) == 3


def test_a_transport_that_would_not_pay_the_per_message_cost_is_refused(tmp_path: Path) -> None:
    """SimGrid 3.32 charges no option to MPI_Send_init/MPI_Start: with a per-message cost
    set, smpi.run refuses such a transport before starting smpirun."""
    import dataclasses

    from hybridfd.simulate import smpi

    arguments = ["--grids", "1", "--transport", "persistent", "--compute", "modelled"]
    with pytest.raises(ValueError, match="--transport persistent"):
        smpi.run(2, platform.host_topology(2), platform.BLUEGENE_P, arguments, tmp_path, tmp_path / "no-driver")
    free = dataclasses.replace(platform.BLUEGENE_P, message_overhead=0.0)
    # no refusal: it gets as far as the missing driver (or the missing smpirun)
    with pytest.raises((RuntimeError, FileNotFoundError)):
        smpi.run(2, platform.host_topology(2), free, arguments, tmp_path, tmp_path / "no-driver")


def test_a_placement_puts_the_flat_ranks_where_it_puts_the_drivers_grid(tmp_path: Path) -> None:
    """plan(placement=P): a flat approach's ranks on the slots placement P gives the
    driver's process grid (BG/P's MPI_Cart_create match of 16x8x8 on the 4x8x8 mesh at
    1,024 cores), recorded in the run; packed (the default) keeps the run and its key."""
    from hybridfd.decomposition import automatic_grid
    from hybridfd.simulate import placement

    b1 = variant("flat-optimized", 1)
    packed = experiments.plan(b1, "flat", 1024, job(tmp_path), 5e-6)
    assert packed == experiments.plan(b1, "flat", 1024, job(tmp_path), 5e-6, placement="packed")
    assert packed.topology.rank_slots is None and packed.placement == "packed" and packed.process_grid is None
    placed = experiments.plan(b1, "flat", 1024, job(tmp_path), 5e-6, placement="bluegene-p")
    grid = automatic_grid((144,) * 3, 1024)
    assert placed.process_grid == grid == (16, 8, 8) and placed.placement == "bluegene-p"
    assert placed.topology.rank_slots == tuple(placement.bluegene_p(grid, placed.topology).tolist())
    assert placed.arguments == packed.arguments and placed.ranks == packed.ranks
    assert platform.hostfile(placed.topology, 1024) != platform.hostfile(packed.topology, 1024)
    assert experiments.cache_key(placed, platform.BLUEGENE_P) != experiments.cache_key(packed, platform.BLUEGENE_P)


def test_a_placement_leaves_threaded_runs_and_one_node_as_they_were(tmp_path: Path) -> None:
    """The threaded approaches' ranks are placed by their model (hybrid-multiple's group
    ranks, hybrid-master-only's one rank per node); on one node every rank shares it."""
    for approach, model in (("hybrid-multiple", "multiple"), ("hybrid-master-only", "masteronly")):
        packed = experiments.plan(variant(approach), model, 1024, job(tmp_path), 5e-6)
        assert experiments.plan(variant(approach), model, 1024, job(tmp_path), 5e-6, placement="bluegene-p") == packed
    one_node = experiments.plan(variant("flat-original"), "flat", 4, job(tmp_path), 5e-6, placement="bluegene-p")
    alone = experiments.plan(variant("flat-original"), "flat", 4, job(tmp_path), 5e-6)
    assert one_node.topology == alone.topology and one_node.process_grid is None
    assert experiments.cache_key(one_node, platform.BLUEGENE_P) == experiments.cache_key(alone, platform.BLUEGENE_P)


def test_an_unknown_placement_is_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown placement 'nowhere'; known: packed, torus-matched"):
        experiments.plan(variant("flat-original"), "flat", 1024, job(tmp_path), 5e-6, placement="nowhere")
    # a placement that cannot place the run is the caller's input error, naming the run
    the_job = job(tmp_path)
    the_job["simulate"]["placement"] = "xyzt"
    with pytest.raises(ExperimentInputError, match="flat-original on 6 cores: XYZT fills the partition"):
        experiments.planned(variant("flat-original"), "flat", 6, the_job)


def test_a_cached_row_of_another_process_grid_is_refused(tmp_path: Path) -> None:
    """The placement is computed for the driver's automatic grid: a row whose driver cut
    another one would put the ranks elsewhere, so it is refused, not used."""
    run = experiments.plan(variant("flat-original"), "flat", 16, job(tmp_path), 5e-6, placement="bluegene-p")
    assert run.process_grid == (4, 2, 2)
    cache_row(tmp_path, run, 10.0)  # the driver's grid: [4, 2, 2]
    cache, driver = Path(job(tmp_path)["simulate"]["cache"]), tmp_path / "driver"
    assert experiments.simulate(run, platform.BLUEGENE_P, cache, driver, timeout=1)["median_ms"] == 10.0
    other = experiments.plan(variant("flat-original"), "flat", 64, job(tmp_path), 5e-6, placement="bluegene-p")
    cache_row(tmp_path, other, 11.0)
    with pytest.raises(RuntimeError, match=r"cut the process grid \[4, 2, 2\], placement bluegene-p was computed for"):
        experiments.simulate(other, platform.BLUEGENE_P, cache, driver, timeout=1)


def speedup_in_cache(tmp_path: Path, cores: list[int], where: str) -> list[str]:
    """The CLI arguments of a simulated speedup run (32 grids of 12^3) whose every point,
    its flat ranks placed ``where``, is put in the cache first."""
    from hybridfd.experiments._stencil import model_of
    from hybridfd.experiments.speedup import variants

    the_job = dict(job(tmp_path), shape=12)
    for c in cores:
        for v in variants(8):
            run = experiments.plan(v, model_of(v["options"]["approach"]), c, the_job, 5e-6, placement=where)
            if run is not None:
                cache_row(tmp_path, run, 100.0 / c)
    settings = the_job["simulate"]
    return [
        "bench", "speedup", "--simulate", "bluegene-p", "--cores", *map(str, cores), "--shape", "12",
        "--team-sync", "5e-06", "--simulate-cache", settings["cache"], "--simulate-driver", settings["driver"],
    ]  # fmt: skip


def test_bench_placement_reaches_the_plan_and_the_result(tmp_path: Path, capsys) -> None:
    """`hybridfd bench speedup --simulate bluegene-p --placement bluegene-p`: every flat
    variant is read from the cache under the placed plan's key (a packed key is not in
    the cache), the result records the placement in its parameters and in each row."""
    from hybridfd import results
    from hybridfd.cli import main

    argv = speedup_in_cache(tmp_path, [1, 16], "bluegene-p")
    assert main([*argv, "--placement", "bluegene-p", "-o", str(tmp_path / "placed")]) == 0
    result = results.load(tmp_path / "placed" / "speedup.json")
    assert result["parameters"]["placement"] == "bluegene-p"
    assert "flat ranks placed bluegene-p" in result["title"]
    assert any("placed bluegene-p" in note for note in result["notes"])
    where = {(r["cores"], r["approach"]): r["config"]["placement"] for r in result["rows"]}
    assert where[(16, "flat-optimized")] == where[(16, "flat-original")] == where[(1, "flat-original")] == "bluegene-p"
    assert where[(16, "hybrid-multiple")] == where[(16, "hybrid-master-only")] == "packed"
    # packed at 16 cores (four nodes) is another key: not in the cache, so SMPI would be
    # started on the missing driver
    with pytest.raises((RuntimeError, FileNotFoundError)):
        main([*argv, "-o", str(tmp_path / "packed")])
    capsys.readouterr()


def test_placement_without_simulate_is_refused() -> None:
    from argparse import Namespace

    with pytest.raises(ExperimentInputError, match="--placement bluegene-p: places simulated ranks"):
        experiments.job_settings(Namespace(simulate=None, placement="bluegene-p"))
    assert experiments.job_settings(Namespace(simulate=None, placement="packed")) == {}


def test_gustafson_merge_refuses_another_placement(tmp_path: Path, capsys) -> None:
    """A saved result is of one placement (one without the field: packed)."""
    from hybridfd.cli import main

    assert main([*gustafson_in_cache(tmp_path, 4, 10.0), "-o", str(tmp_path / "four")]) == 0
    saved = tmp_path / "four" / "gustafson.json"
    argv = [*gustafson_in_cache(tmp_path, 4, 10.0), "--merge", str(saved), "--placement", "bluegene-p"]
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "-o", str(tmp_path / "other")])
    assert exit_.value.code == 2
    assert "another problem (--placement packed there, bluegene-p here)" in capsys.readouterr().err
    older = json.loads(saved.read_text())
    del older["parameters"]["placement"]
    saved.write_text(json.dumps(older))
    assert main([*gustafson_in_cache(tmp_path, 16, 20.0), "--merge", str(saved), "-o", str(tmp_path / "both")]) == 0
    capsys.readouterr()


def scalability_in_cache(tmp_path: Path, cores: list[int], grids: int) -> list[str]:
    """The CLI arguments of a simulated scalability run of ``grids`` grids of 12^3 on
    ``cores``, every approach's line points (LINES) in the cache."""
    for c in cores:
        lines_in_cache(tmp_path, c)
    settings = job(tmp_path)["simulate"]
    return [
        "bench", "scalability", "--simulate", "bluegene-p", "--cores", *map(str, cores), "--shape", "12",
        "--grids", str(grids), "--team-sync", "5e-06",
        "--simulate-cache", settings["cache"], "--simulate-driver", settings["driver"],
    ]  # fmt: skip


def test_scalability_extrapolates_each_approach_s_line_to_the_job_s_grids(tmp_path: Path, capsys) -> None:
    """--line-from C: Fig. 7.4's path. At C cores and more each approach's time is its line
    at G = --grids (read from a synthetic cache of the three small grid counts), marked
    'line' with its check; its utilisation is the compute alone over that time; a core
    count below C simulates every grid (here: the cached direct points)."""
    from hybridfd import results
    from hybridfd.cli import main
    from hybridfd.experiments._stencil import model_of
    from hybridfd.simulate import lines

    grids = 2816
    argv = scalability_in_cache(tmp_path, [16, 64], grids)
    for k, approach in enumerate(LINES):  # 16 cores directly: every grid simulated
        the_job = dict(job(tmp_path, grids=grids), shape=12)
        cache_row(tmp_path, experiments.plan(variant(approach), model_of(approach), 16, the_job, 5e-6), 3000.0 + k)
    assert main([*argv, "--line-from", "64", "-o", str(tmp_path / "out")]) == 0
    result = results.load(tmp_path / "out" / "scalability.json")
    rows = {(r["cores"], r["approach"]): r for r in result["rows"]}
    assert set(rows) == {(c, a) for c in (16, 64) for a in LINES}  # the others are not simulated at scale
    for approach, (a, b) in LINES.items():
        row = rows[(64, approach)]
        assert row["source"] == "line" and row["ms"] == pytest.approx(a + b * grids)
        assert row["check"] == pytest.approx(0, abs=1e-12) and len(row["line"]["points"]) == 3
        compute = lines.compute_ms(grids, 12, 64, platform.BLUEGENE_P)
        assert row["utilisation"] == pytest.approx(compute / row["ms"])
        assert rows[(16, approach)]["source"] == "direct" and rows[(16, approach)]["check"] is None
    assert rows[(16, "flat-original")]["ms"] == 3000.0
    assert any("'line' rows are T(G) = a + b G at G = 2816" in note for note in result["notes"])
    assert (tmp_path / "out" / "scalability.png").exists()
    out = capsys.readouterr().out
    assert "utilisation" in out and "line" in out and "direct" in out


def test_scalability_lines_need_a_simulation_and_the_batch_form(tmp_path: Path, capsys) -> None:
    from hybridfd.cli import main

    argv = scalability_in_cache(tmp_path, [16], 2816)
    with pytest.raises(SystemExit) as exit_:
        main(["bench", "scalability", "--cores", "2", "--line-from", "2", "-o", str(tmp_path / "out")])
    assert exit_.value.code == 2
    assert "--line-from: lines are of simulated runs (--simulate)" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:  # hybrid-multiple's line steps by 32 grids
        main([*argv, "--line-from", "16", "--grids", "2820", "-o", str(tmp_path / "out")])
    assert exit_.value.code == 2
    assert "2820 grids are not of the batch form" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--line-from", "16", "--approaches", "flat-origin", "-o", str(tmp_path / "out")])
    assert exit_.value.code == 2
    assert "--approaches flat-origin: not in the registry" in capsys.readouterr().err


def test_scalability_runs_the_approaches_asked_for(tmp_path: Path, capsys) -> None:
    from hybridfd import results
    from hybridfd.cli import main

    argv = scalability_in_cache(tmp_path, [16], 2816)
    chosen = ["flat-optimized", "flat-original"]
    assert main([*argv, "--line-from", "16", "--approaches", *chosen, "-o", str(tmp_path / "out")]) == 0
    result = results.load(tmp_path / "out" / "scalability.json")
    assert [r["approach"] for r in result["rows"]] == ["flat-original", "flat-optimized"]  # registry order
    capsys.readouterr()


def test_scalability_keeps_another_placement_s_flat_rows_beside(tmp_path: Path, capsys) -> None:
    """--beside: a saved run of the same job with the flat ranks placed otherwise adds its
    flat approaches' rows (relative to this run's fastest), marked by their placement; the
    threaded approaches' rows, which no placement moves, appear once."""
    from hybridfd import results
    from hybridfd.cli import main

    argv = scalability_in_cache(tmp_path, [16], 2816)
    assert main([*argv, "--line-from", "16", "-o", str(tmp_path / "packed")]) == 0
    saved = tmp_path / "packed" / "scalability.json"
    lines_in_cache(tmp_path, 16, "bluegene-p", later=10.0)
    placed = [*argv, "--line-from", "16", "--placement", "bluegene-p"]
    assert main([*placed, "--beside", str(saved), "-o", str(tmp_path / "both")]) == 0
    result = results.load(tmp_path / "both" / "scalability.json")
    rows = {(r["approach"], r["placement"]): r for r in result["rows"]}
    assert len(rows) == len(result["rows"]) == 6
    for approach in ("flat-original", "flat-optimized"):
        a, b = LINES[approach]
        assert rows[(approach, "bluegene-p")]["ms"] == pytest.approx(a + 10.0 + b * 2816)
        assert rows[(approach, "packed")]["ms"] == pytest.approx(a + b * 2816)
    fastest = min(r["ms"] for r in result["rows"] if r["placement"] == "bluegene-p" or r["threads"] > 1)
    assert rows[("flat-original", "packed")]["relative_to_fastest_on_fewest"] == pytest.approx(
        fastest / rows[("flat-original", "packed")]["ms"]
    )
    assert any(note.startswith(f"rows placed packed from {saved}") for note in result["notes"])
    assert (tmp_path / "both" / "scalability.png").exists()
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--line-from", "16", "--beside", str(saved), "-o", str(tmp_path / "same")])
    assert exit_.value.code == 2
    assert "placed packed as this run; it adds another" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main([*placed, "--grids", "2784", "--beside", str(saved), "-o", str(tmp_path / "other")])
    assert exit_.value.code == 2
    assert "another job (--grids 2816 there, 2784 here)" in capsys.readouterr().err
