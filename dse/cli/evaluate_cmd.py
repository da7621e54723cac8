"""`dse evaluate`: cost of one mapping of one layer on a config."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this module's command(s) to the root app."""
