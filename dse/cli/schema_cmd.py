"""`dse schema hw [--check FILE]`: the JSON Schema of a YAML format, or a check of one file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from costmodel.errors import UserError


def _hw_schema() -> dict[str, Any]:
    from costmodel.arch import HwConfig

    return HwConfig.model_json_schema()


def _hw_check(path: Path) -> str:
    from costmodel.arch import load_architecture

    arch = load_architecture(path)
    return f"OK {path}: {arch.name}, {len(arch.levels)} levels, {arch.num_pes} MACs, {arch.fingerprint()}"


FORMATS = {"hw": (_hw_schema, _hw_check)}
"""Format name -> (JSON Schema builder, file checker)."""


def schema(
    kind: Annotated[str, typer.Argument(help=f"Format: {', '.join(FORMATS)}.")],
    check: Annotated[
        Path | None, typer.Option("--check", help="Validate FILE instead; print OK or the error.")
    ] = None,
) -> None:
    """Print the JSON Schema of a config format (for editor completion), or validate a file."""
    if kind not in FORMATS:
        raise UserError(f"unknown schema '{kind}' (expected one of: {', '.join(FORMATS)})")
    build, checker = FORMATS[kind]
    if check is not None:
        print(checker(check))
    else:
        print(json.dumps(build(), indent=2))


def register(app: typer.Typer) -> None:
    """Add this module's command(s) to the root app."""
    app.command("schema")(schema)
