"""The parts of a ``dse map --json`` document that ``dse report MAP.json`` reads, as pydantic models.

Why: the document is a file a user may cut or edit by hand. A missing or mistyped part is named here
(``map.json: layers[0].energy_pj: ...``), before any computation, whose own errors stay bugs rather
than the user's. Only what the report reads is checked; other keys pass through.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, PlainValidator, ValidationError, field_validator

from costmodel.errors import UserError
from costmodel.yamlio import format_path


def _number(v: Any, where: str = "") -> Any:
    """``v`` is a finite JSON number: not a string, a boolean, null or a mapping."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError(f"{where}{': ' if where else ''}expected a finite number, got {v!r:.40}")
    return v


def _numbers(v: Any, where: str = "") -> Any:
    """``v`` is a number, or a mapping whose leaves are numbers (an energy breakdown)."""
    if not isinstance(v, dict):
        return _number(v, where)
    for key, x in v.items():
        _numbers(x, f"{where}.{key}" if where else str(key))
    return v


Number = Annotated[Any, PlainValidator(_number)]


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class Accesses(_Open):
    reads: Number
    writes: Number


class MapLayer(_Open):
    name: str
    energy_pj: Number
    latency_cycles: Number
    compute_cycles: Number = None  # (absent: the latency; given, a number)
    macs: Number
    utilization: Number
    energy_breakdown_pj: dict[str, Any] = {}
    accesses: dict[str, dict[str, Accesses]] = {}

    @field_validator("energy_breakdown_pj")
    @classmethod
    def _leaves_are_numbers(cls, v: dict[str, Any]) -> dict[str, Any]:
        if "network" in v and not isinstance(v["network"], dict):  # (per level, summed into each level's energy)
            raise ValueError(f"network: expected a mapping of level: energy, got {v['network']!r:.40}")
        return _numbers(v)


class MapDocument(_Open):
    hw: str
    config_fingerprint: str  # (missing, it had been taken for another config's)
    model: str = "model"
    energy_pj: Number
    latency_s: Number
    power_mw: Number
    area_mm2: Number
    utilization: Number
    layers: list[MapLayer]


def check_map_document(doc: Any, src: Path) -> None:
    """UserError naming the first part of ``doc`` that is missing or of the wrong type."""
    if not isinstance(doc, dict):
        raise UserError(f"{src}: not a `dse map --json` document (expected a JSON object, got {type(doc).__name__})")
    try:
        MapDocument.model_validate(doc)
    except ValidationError as exc:
        err = exc.errors()[0]
        if err["type"] == "missing":
            what = "missing"
        elif err["type"] == "value_error":
            what = err["msg"].removeprefix("Value error, ")
        else:
            what = f"{err['msg'].lower().removeprefix('input should be ')}, got {err['input']!r:.40}"
        raise UserError(f"{src}: not a `dse map --json` document: {format_path(err['loc'])}: {what}") from None
