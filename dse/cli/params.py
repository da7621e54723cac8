"""Parameters shared by the commands: path options and arguments that refuse an empty value."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer


def nonempty_path(value: str | Path) -> Path:
    """A path parameter's value. Why: typer reads "" as the current folder, so ``-o "$UNSET"`` would
    have `dse sweep` write its files there (and `dse compile` fail with a traceback)."""
    if not str(value).strip():
        raise typer.BadParameter("empty; expected a path")
    return Path(value)


def path_option(*names: str, **kwargs: Any) -> Any:
    """``typer.Option`` for a path (an empty value is a usage error, exit 2)."""
    return typer.Option(*names, parser=nonempty_path, **kwargs)


def path_argument(**kwargs: Any) -> Any:
    """``typer.Argument`` for a path (an empty value is a usage error, exit 2)."""
    return typer.Argument(parser=nonempty_path, **kwargs)
