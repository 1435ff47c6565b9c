"""Settings for the whole suite."""

import pytest
from hypothesis import settings

# CI shares 2 cores with multi-rank runs: time limits per example would only add noise.
settings.register_profile("hybridfd", deadline=None)
settings.load_profile("hybridfd")


@pytest.fixture(scope="session")
def installed_core(tmp_path_factory: pytest.TempPathFactory) -> tuple:
    """The C++ core built and installed on its own, once per session (_cpp_build.py)."""
    from _cpp_build import install_core

    return install_core(tmp_path_factory.mktemp("core-build") / "core", tmp_path_factory.mktemp("core-prefix"))
