import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # bruteforce.py, standin.py


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: larger randomized runs (deselect with -m 'not slow')")
