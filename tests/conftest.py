"""Suite-wide settings: hypothesis profiles (deterministic in CI)."""
import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", derandomize=True, database=None, print_blob=True, deadline=None,
                          max_examples=100, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None, max_examples=50)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
