"""The traits each C++ registry line declares (hybridfd.traits): every registered
schedule, model and transport has every trait, with a value of the kinds its consumers
know, and the Python consumers (the performance model, the tuner, the simulation at
scale) agree with them."""

from __future__ import annotations

import pytest

import hybridfd as hf
from hybridfd import traits, tune
from hybridfd.perfmodel.predict import EXCHANGES_PER_BATCH, Settings, _rows
from hybridfd.simulate import experiments

SCHEDULE_TRAITS = {"exchanges_per_batch", "hides_exchange_behind", "takes_slope"}
MODEL_TRAITS = {"thread_level", "grid_workers", "at_scale"}
TRANSPORT_TRAITS = {"mpi_version", "mpi_needs", "collective_setup", "unavailable", "schedules", "models"}
HIDES = {"nothing", "previous-batch", "interior", "interior-rows"}
AT_SCALE = {"rank-per-core", "grid-groups", "node-cores", "none"}


def test_every_registered_strategy_has_every_trait():
    assert sorted(traits.schedule_traits()) == sorted(hf.schedule_names())
    assert sorted(traits.model_traits()) == sorted(hf.model_names())
    assert sorted(traits.transport_traits()) == sorted(hf.transport_names())
    for name, entry in traits.schedule_traits().items():
        assert set(entry) == SCHEDULE_TRAITS, name
    for name, entry in traits.model_traits().items():
        assert set(entry) == MODEL_TRAITS, name
    for name, entry in traits.transport_traits().items():
        assert set(entry) == TRANSPORT_TRAITS, name


@pytest.mark.parametrize("schedule", hf.schedule_names())
def test_schedule_traits_are_of_known_kinds(schedule):
    entry = traits.schedule_traits()[schedule]
    assert entry["exchanges_per_batch"] in (1, 3)
    assert entry["hides_exchange_behind"] in HIDES
    # A slope shortens the exchange that nothing hides: it only helps where one hides.
    assert entry["takes_slope"] == (entry["hides_exchange_behind"] != "nothing")


@pytest.mark.parametrize("model", hf.model_names())
def test_model_traits_are_of_known_kinds(model):
    entry = traits.model_traits()[model]
    assert entry["thread_level"] in ("MPI_THREAD_SINGLE", "MPI_THREAD_FUNNELED", "MPI_THREAD_MULTIPLE")
    assert entry["grid_workers"] in ("one", "all", "all-but-one")
    assert entry["at_scale"] in AT_SCALE


@pytest.mark.parametrize("transport", hf.transport_names())
def test_transport_traits_say_what_each_needs_of_mpi(transport):
    entry = traits.transport_traits()[transport]
    assert entry["mpi_version"] in (1, 2, 3, 4)
    assert entry["mpi_needs"] and "MPI_" in entry["mpi_needs"]
    assert isinstance(entry["collective_setup"], bool)
    assert isinstance(entry["unavailable"], str)
    support = hf.transport_support(transport)
    assert entry["schedules"] == support["schedules"] and entry["models"] == support["models"]
    if entry["unavailable"]:
        assert transport in entry["unavailable"]  # names the transport it is about


def test_the_performance_model_counts_the_registry_s_exchanges_and_hiding():
    assert EXCHANGES_PER_BATCH == traits.exchanges_per_batch()
    schedules = hf.schedule_names()
    settings = Settings(
        model=("flat",) * len(schedules),
        schedule=schedules,
        batch=(4,) * len(schedules),
        slope=(0,) * len(schedules),
        threads=(1,) * len(schedules),
    )
    rows = _rows(settings, 8)
    for row, schedule in enumerate(schedules):
        entry = traits.schedule_traits()[schedule]
        assert rows.exchanges[row] == entry["exchanges_per_batch"]
        assert bool(rows.hidden[row]) == (entry["hides_exchange_behind"] != "nothing"), schedule
        assert bool(rows.overlap_xy[row]) == (entry["hides_exchange_behind"] == "interior-rows"), schedule


def test_the_performance_model_counts_the_registry_s_grid_workers():
    models = hf.model_names()
    settings = Settings(
        model=models,
        schedule=("all-dims",) * len(models),
        batch=(1,) * len(models),
        slope=(0,) * len(models),
        threads=(4,) * len(models),
    )
    rows = _rows(settings, 8)
    expected = {"one": 1, "all": 4, "all-but-one": 3}
    for row, model in enumerate(models):
        assert rows.workers[row] == expected[traits.model_traits()[model]["grid_workers"]], model


def test_the_tuner_slopes_the_registry_s_sloped_schedules():
    sloped = {name for name, entry in traits.schedule_traits().items() if entry["takes_slope"]}
    assert set(tune.SLOPED_SCHEDULES) == sloped


@pytest.mark.parametrize("model", hf.model_names())
def test_the_simulation_runs_each_model_at_scale_as_its_trait_says(model):
    at_scale = traits.model_traits()[model]["at_scale"]
    placed = experiments.model_at_scale(model, 16, 4)
    if at_scale == "none":
        assert placed is None
        return
    ranks, arguments = placed
    assert ranks == {"rank-per-core": 16, "grid-groups": 16, "node-cores": 4}[at_scale]
    assert (arguments == []) == (at_scale == "rank-per-core")
    # Only a rank per core runs on part of a node.
    assert (experiments.model_at_scale(model, 6, 4) is None) == (at_scale != "rank-per-core")
