"""`dse schema hw|...`: JSON Schemas of the YAML formats."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this module's command(s) to the root app."""
