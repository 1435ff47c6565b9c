"""Settings for the whole suite."""

import shutil

import pytest
from hypothesis import settings

# CI shares 2 cores with multi-rank runs: time limits per example would only add noise.
settings.register_profile("hybridfd", deadline=None)
settings.load_profile("hybridfd")


@pytest.fixture(scope="session")
def installed_core() -> tuple:
    """The C++ core built and installed on its own, once per test run (_cpp_build.py), from
    an empty directory inside the tree: there the compiler cache (Makefile) sees paths
    relative to the tree, so a later run or clone reuses this one's objects."""
    from _cpp_build import ROOT, install_core

    build = ROOT / "build" / "test-core"
    shutil.rmtree(build, ignore_errors=True)
    return install_core(build / "core", build / "prefix")
