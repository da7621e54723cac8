"""Parameters shared by the commands: path options and arguments that refuse an empty value, and
the help's type column (:class:`PlainTypes`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup, TyperOption


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
    file's (a trailing '/' is one too). The help shows ``<file>`` or ``<path>`` (typer, given a
    parser, would show the annotation's class name, ``<Path>``)."""
    kwargs.setdefault("metavar", "<file>" if file else "<path>")
    return typer.Option(*names, parser=file_path if file else nonempty_path, **kwargs)


def path_argument(**kwargs: Any) -> Any:
    """``typer.Argument`` for a path (an empty value is a usage error, exit 2)."""
    return typer.Argument(parser=nonempty_path, **kwargs)


class PlainTypes(TyperGroup):
    """A command group whose help shows no type for a flag. Why: typer's help gives ``--json`` the
    type ``<bool>``, which reads as an option taking a value (``--json true`` is then refused).
    The flags are found when a command is looked up or a group's help is drawn, because click
    makes each ``--help`` option only then."""

    def get_command(self, ctx: typer.Context, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            _untyped_flags(command, ctx)
        return command

    def format_help(self, ctx: typer.Context, formatter: Any) -> None:
        _untyped_flags(self, ctx)
        super().format_help(ctx, formatter)


def _untyped_flags(command: TyperCommand | TyperGroup, ctx: typer.Context) -> None:
    for param in command.get_params(ctx):
        if isinstance(param, TyperOption) and param.is_flag:
            param.metavar = ""  # (typer's help shows an option's metavar, when set, as its type)
