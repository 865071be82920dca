import os

from hypothesis import settings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# CI runs derandomized, so that a red run is reproducible from its log.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")
