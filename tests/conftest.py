import os

from hypothesis import HealthCheck, settings

# Property tests draw shapes and values; a modest number of examples per test keeps the suite fast on two
# cores, and no deadline because shared machines are noisy. HYPOTHESIS_PROFILE=thorough draws many more.
settings.register_profile("default", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
