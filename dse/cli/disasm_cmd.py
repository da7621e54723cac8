"""`dse disasm model.axb`: a binary as assembler text with its debug map."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this module's command(s) to the root app."""
