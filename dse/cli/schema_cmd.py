"""`dse schema hw|study [--check FILE]`: the JSON Schema of a YAML format, or a check of one file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from costmodel.errors import UserError
from dse.cli.params import path_option


def _hw_schema() -> dict[str, Any]:
    from costmodel.arch import HwConfig

    return HwConfig.model_json_schema()


def _hw_check(path: Path) -> str:
    from costmodel.arch import load_architecture

    arch = load_architecture(path)
    compilable = ""
    if arch.compilable is not None:
        from compiler.target import Target

        Target.from_arch(arch)  # the compiler template's own checks (UserError on a bad block)
        compilable = ", compilable"
    return (
        f"OK {path}: {arch.name}, {len(arch.levels)} levels, {arch.num_pes} MACs{compilable}, "
        f"{arch.fingerprint()}"
    )


def _study_schema() -> dict[str, Any]:
    from dse.study.schema import StudySpec

    return StudySpec.model_json_schema()


def _study_check(path: Path) -> str:
    """Everything `dse sweep` checks before its first trial, the workloads' models loaded included."""
    from dse.study.design import load_layers
    from dse.study.schema import load_study

    s = load_study(path)
    layers = sum(len(x) if isinstance(x, list) else len(x.layers()) for x in load_layers(s).values())
    return (f"OK {path}: {s.name}, {len(s.spec.workloads)} workloads ({layers} layers), {len(s.sampled_knobs)} sampled + "
            f"{len(s.knobs) - len(s.sampled_knobs)} derived knobs, {len(s.spec.objectives)} objectives, "
            f"{len(s.constraints)} constraints on {s.hw_source.name}")


def _type(prop: dict[str, Any]) -> str:
    """A JSON Schema property as a short human type: ``int > 0``, ``list of I|W|O``, ``LevelConfig``."""
    if "$ref" in prop:
        return prop["$ref"].rsplit("/", 1)[-1]
    if "allOf" in prop:  # (a type and rules on it: the type)
        return _type(prop["allOf"][0])
    if "enum" in prop:
        return " | ".join(map(str, prop["enum"]))
    if "anyOf" in prop:
        parts = [_type(p) for p in prop["anyOf"] if p.get("type") != "null"]
        opt = any(p.get("type") == "null" for p in prop["anyOf"])
        return " or ".join(parts) + (" (optional)" if opt else "")
    kind = prop.get("type", "any")
    if kind == "array":
        return f"list of {_type(prop.get('items', {}))}"
    if kind == "object" and "additionalProperties" in prop and isinstance(prop["additionalProperties"], dict):
        return f"map of {_type(prop['additionalProperties'])}"
    names = {"integer": "int", "number": "number", "string": "string", "boolean": "bool", "object": "mapping"}
    out = names.get(kind, kind)
    for key, op in (("exclusiveMinimum", ">"), ("minimum", ">="), ("maximum", "<=")):
        if key in prop:
            value = prop[key]  # (an integer bound exactly: 2**53 is not 9.0072e+15)
            out += f" {op} {value:,}" if isinstance(value, int) and abs(value) > 1e6 else f" {op} {value:g}"
    return out


PIPE = "\\|"  # a literal | inside a Markdown table cell


def schema_markdown(schema: dict[str, Any]) -> str:
    """The schema as Markdown tables, one per object (the top level first), for docs/hwconfig.md."""
    models = [(schema.get("title", "top level"), schema), *sorted(schema.get("$defs", {}).items())]
    out = []
    for name, model in models:
        out += [
            f"### `{name}`",
            "",
            model.get("description", ""),
            "",
            "| field | type | default | description |",
            "|---|---|---|---|",
        ]
        required = set(model.get("required", []))
        for field, prop in model.get("properties", {}).items():
            default = "**required**" if field in required else f"`{json.dumps(prop.get('default'))}`"
            if "default" not in prop and field not in required:
                default = "`[]`" if prop.get("type") == "array" else "(all defaults)"
            desc = prop.get("description", "").replace("|", PIPE)
            kind = _type(prop).replace("|", PIPE)
            out.append(f"| `{field}` | {kind} | {default} | {desc} |")
        out.append("")
    return "\n".join(out)


FORMATS = {"hw": (_hw_schema, _hw_check), "study": (_study_schema, _study_check)}
"""Format name -> (JSON Schema builder, file checker)."""


def schema(
    kind: Annotated[str, typer.Argument(metavar="KIND", help=f"Format: {', '.join(FORMATS)}.")],
    check: Annotated[
        Path | None, path_option("--check", help="Validate FILE instead; print OK or the error.")
    ] = None,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Print the schema as Markdown tables.")
    ] = False,
) -> None:
    """Print the JSON Schema of a config format (for editor completion), or validate a file."""
    if kind not in FORMATS:
        raise UserError(f"unknown schema '{kind}' (expected one of: {', '.join(FORMATS)})")
    build, checker = FORMATS[kind]
    if check is not None and markdown:
        raise UserError("--markdown prints the schema, --check validates a file: give one of them")
    if check is not None:
        print(checker(check))
    elif markdown:
        print(schema_markdown(build()))
    else:
        print(json.dumps(build(), indent=2))


def register(app: typer.Typer) -> None:
    """Add this module's command(s) to the root app."""
    app.command("schema")(schema)
