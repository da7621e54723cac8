"""`dse zoo list|export`: the built-in AR/VR model zoo."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the ``zoo`` command group to the root app."""
    zoo = typer.Typer(help="The built-in model zoo (plain torch.nn models, seeded weights).", no_args_is_help=True)
    app.add_typer(zoo, name="zoo")
