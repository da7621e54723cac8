import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # bruteforce.py, standin.py


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: larger randomized runs; run with -m slow or ACCEL_DSE_SLOW=1")


def pytest_collection_modifyitems(config, items):
    """Slow tests are opt-in, so the default run of tests/costmodel stays well under a minute."""
    if "slow" in (config.getoption("-m") or "") or os.environ.get("ACCEL_DSE_SLOW"):
        return
    skip = pytest.mark.skip(reason="slow: run with -m slow or ACCEL_DSE_SLOW=1")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
