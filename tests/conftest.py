import os

import pytest

from hypothesis import settings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# CI runs derandomized, so that a red run is reproducible from its log.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")


def _block_imports_prelude(*packages: str) -> str:
    """Python code that makes importing ``packages`` (and their submodules) fail
    the way it does when they are not installed: for a ``python -c`` child."""
    return (
        "import sys\n"
        "class _Block:\n"
        f"    names = {tuple(packages)!r}\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in self.names:\n"
        "            raise ModuleNotFoundError(f\"No module named '{name}'\")\n"
        "sys.meta_path.insert(0, _Block())\n"
    )


@pytest.fixture
def block_imports():
    """``block_imports("tensorflow", ...)``: a prelude for child processes run
    as if those packages were not installed."""
    return _block_imports_prelude
