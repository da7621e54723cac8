"""Fixtures shared by the study tests."""

import pytest

from tests.study.pg import pg_url  # noqa: F401 -- a fixture, registered by importing it here


@pytest.fixture
def two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two cores as far as `dse sweep --workers` knows: the tests of two sweep processes run two on
    any machine (the cap at one per core has a test of its own)."""
    from dse.network import solve

    monkeypatch.setattr(solve, "default_workers", lambda: 2)
