"""`dse simulate model.axb --input x.npy`: run a binary on the simulator."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this module's command(s) to the root app."""
