"""Settings for the whole suite."""

from hypothesis import settings

# CI shares 2 cores with multi-rank runs: time limits per example would only add noise.
settings.register_profile("hybridfd", deadline=None)
settings.load_profile("hybridfd")
