"""Parameters shared by the commands: path options and arguments that refuse an empty value."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import typer


def nonempty_path(value: str | Path) -> Path:
    """A path parameter's value. Why: typer reads "" as the current folder, so ``-o "$UNSET"`` would
    have `dse sweep` write its files there (and `dse compile` fail with a traceback)."""
    if not str(value).strip():
        raise typer.BadParameter("empty; expected a path")
    return Path(value)


def file_path(value: str | Path) -> Path:
    """An output file's path. Why: pathlib drops a trailing '/', so ``-o build/`` would write a file
    named ``build`` (and its sidecars beside it) where a folder was meant."""
    if str(value).endswith(("/", os.sep)):
        raise typer.BadParameter(f"{value!r} ends with '/', a folder; expected a file path")
    return nonempty_path(value)


def path_option(*names: str, file: bool = False, **kwargs: Any) -> Any:
    """``typer.Option`` for a path (an empty value is a usage error, exit 2); ``file``: an output
    file's (a trailing '/' is one too)."""
    return typer.Option(*names, parser=file_path if file else nonempty_path, **kwargs)


def path_argument(**kwargs: Any) -> Any:
    """``typer.Argument`` for a path (an empty value is a usage error, exit 2)."""
    return typer.Argument(parser=nonempty_path, **kwargs)
