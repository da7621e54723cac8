"""Fixtures shared by the study tests."""

from tests.study.pg import pg_url  # noqa: F401 -- a fixture, registered by importing it here
