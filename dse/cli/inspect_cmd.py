"""`dse inspect MODEL.onnx|ZOO_NAME`: the per-layer table of a model."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the ``inspect`` command to the root app."""
