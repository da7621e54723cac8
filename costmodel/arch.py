"""Hardware configs: the hwconfigs YAML format (pydantic models) and the resolved Architecture.

Two layers, on purpose: ``*Config`` models are exactly what a YAML file may say (their field
descriptions are the format's spec, printed by ``dse schema hw``); :class:`Architecture` is the
validated, resolved view the mapper and the cost model use, with every per-access energy, area and
leakage filled in from the technology model (:mod:`costmodel.tech`) unless the file overrides it.
Cross-field rules (DRAM outermost, capacities, fan-out vs MAC count, names in constraints) are
checked after the field types, each error naming the file, line and field path.

Additions to CONTRACTS.md (fields only, nothing renamed): ``Level.ports``, ``Level.ideal_overlap``
(Timeloop-style overlap WITHOUT halving the capacity; the latency model should treat it like
``double_buffered`` for overlap, the mapper like a single buffer for capacity),
``Level.network_area_mm2``, ``MacSpec.leak_mw``, ``Architecture.vdd/sram_cell/dram_type/description/
fixed_overhead_mm2/technology``, ``Systolic.level``, ``VectorUnit`` costs. ``double_buffered``
defaults to False: a tile may use half the capacity of a double-buffered level.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictBool,
    ValidationError,
    field_validator,
)

from costmodel.errors import UserError
from costmodel.tech import Technology
from costmodel.yamlio import (
    FREQ_PATTERN,
    MAX_HZ,
    MAX_WORDS,
    SIZE_PATTERN,
    LineMap,
    load_yaml,
    validation_error,
)

Role = Literal["I", "W", "O"]
Dim = Literal["N", "G", "K", "C", "P", "Q", "R", "S", "H", "W", "B", "M"]  # the Problem constructors' names
Datatype = Literal["int8", "int16", "fp16", "bf16", "fp32"]


def _plain_number(what: str, *, integer: bool = False) -> BeforeValidator:
    """A number as YAML writes one: pydantic would take true/false as 1 and 0, "8" as 8 and, for an
    integer, 4.0 as 4, where the layer and mapping files refuse them (so a quoted or mistyped
    value is a mistake in every file)."""

    def check(value: Any) -> Any:
        if isinstance(value, (bool, str)) or (integer and isinstance(value, float)):
            raise ValueError(f"expected {what}, got {value!r}")  # (pydantic reports ValueErrors only)
        return value

    return BeforeValidator(check)


def _named(value: str) -> str:
    """A name a mapping, a table or a message shows must be visible."""
    if not value.strip():
        raise ValueError(f"expected a non-empty name, got {value!r}")
    return value


Number = _plain_number("a number")
PosInt = Annotated[int, Field(gt=0, le=10**9), _plain_number("an integer", integer=True)]  # bounded: counts stay exact in int64
# bounded: any energy (pJ), power (mW), area (mm^2) or bandwidth (words/cycle) a design has is far
# below 10^12, and above it products overflowed to inf (an energy of Infinity, invalid JSON)
PosFloat = Annotated[float, Field(gt=0, le=1e12), Number]
NonNeg = Annotated[float, Field(ge=0, le=1e12), Number]
Name = Annotated[str, AfterValidator(_named), Field(json_schema_extra={"pattern": r"\S"})]
RESERVED_LEVEL_NAMES = ("mac", "network", "leakage", "vector_unit", "fixed_overhead", "total")
"""Keys of the area and energy breakdowns, so no level may take these names."""
REPO = Path(__file__).resolve().parent.parent
HWCONFIGS = REPO / "hwconfigs"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)  # .inf / .nan are typos


class FanoutConfig(_Strict):
    """A 2-D mesh of child instances below a level."""

    x: PosInt = Field(1, description="Children along X (columns).")
    y: PosInt = Field(1, description="Children along Y (rows).")


class LevelConfig(_Strict):
    """One storage level. Listed outermost (DRAM) first; each instance feeds a fan-out mesh below it."""

    # the rules between fields that the schema can say (arch_resolve checks them with line numbers)
    model_config = ConfigDict(**_Strict.model_config, json_schema_extra={
        "if": {"properties": {"kind": {"const": "dram"}}},
        "then": {"properties": {"holds": {"minItems": 3}}},  # (distinct roles of three: all of them)
        "else": {"required": ["capacity"], "properties": {"capacity": {"not": {"type": "null"}}}},
        "not": {"required": ["double_buffered", "ideal_overlap"],
                "properties": {"double_buffered": {"const": True}, "ideal_overlap": {"const": True}}},
    })

    name: Name = Field(json_schema_extra={"not": {"enum": list(RESERVED_LEVEL_NAMES)}},
                       description="Unique level name, used by mappings and constraints.")
    kind: Literal["dram", "sram", "regfile"] = Field(
        description="dram (off-chip, must be the first level), sram (CACTI-fit costs) or regfile "
        "(flip-flop costs, for small per-PE buffers)."
    )
    holds: list[Role] = Field(
        json_schema_extra={"minItems": 1, "uniqueItems": True},  # (checked with a fuller message in arch_resolve)
        description="Tensor roles this level MAY keep: I (input activations), W (weights), O (outputs "
        "/ partial sums). A mapping may still bypass them. DRAM must hold all three."
    )
    capacity: Any = Field(
        None,
        json_schema_extra={"anyOf": [{"type": "integer", "minimum": 1, "maximum": MAX_WORDS},
                                     {"type": "string", "pattern": SIZE_PATTERN}, {"type": "null"}]},
        description="Per-instance capacity: a bare number is words; '64 KiB', '2 MB' are bytes "
        "(KB = KiB = 1024 B). Required for sram/regfile; omit for an unbounded DRAM.",
    )
    word_bits: PosInt = Field(description="Bits per word stored at this level.")
    block_words: PosInt = Field(
        1, description="Words per access (the port width is block_words x word_bits)."
    )
    ports: PosInt = Field(1, description="Number of read/write ports (sets SRAM/regfile energy and area).")
    read_bw: PosFloat | None = Field(
        None, description="Read bandwidth in words/cycle per instance; omit for unlimited."
    )
    write_bw: PosFloat | None = Field(
        None, description="Write bandwidth in words/cycle per instance; omit for unlimited."
    )
    fanout: FanoutConfig = Field(
        default_factory=FanoutConfig,
        description="Mesh of children below each instance (next inner level, or MACs for the innermost).",
    )
    multicast: StrictBool = Field(True, description="The network below can deliver one read to many children.")
    spatial_reduction: StrictBool = Field(
        False, description="The network below can add partial sums from children before writing here."
    )
    double_buffered: StrictBool = Field(
        False,
        description="A second buffer: each tile may use only HALF the capacity, and moving the next tile "
        "overlaps compute (latency = max of compute and traffic instead of their sum).",
    )
    ideal_overlap: StrictBool = Field(
        False,
        description="Timeloop-style idealisation: transfers overlap compute although the FULL capacity "
        "is usable by a tile (no second buffer). For comparisons with Timeloop; unphysical otherwise.",
    )
    read_pj: NonNeg | None = Field(None, description="Override: energy per word read (pJ).")
    write_pj: NonNeg | None = Field(None, description="Override: energy per word written (pJ).")
    hop_pj: NonNeg | None = Field(
        None, description="Override: energy per word moved over the fan-out network below (pJ)."
    )
    leak_mw: NonNeg | None = Field(None, description="Override: leakage power per instance (mW).")
    area_mm2: NonNeg | None = Field(None, description="Override: area per instance (mm^2).")
    network_area_mm2: NonNeg | None = Field(
        None, description="Override: area of the fan-out network below all instances (mm^2)."
    )


class MacConfig(_Strict):
    """The multiply-accumulate units (one per innermost fan-out child)."""

    datatype: Datatype = Field(description="Operand type; int types accumulate in int32, fp types in fp32.")
    count: PosInt | None = Field(
        None, description="Number of MACs; if given it must equal the product of all fan-outs."
    )
    energy_pj: NonNeg | None = Field(None, description="Override: energy per MAC (pJ).")
    area_mm2: NonNeg | None = Field(None, description="Override: area per MAC (mm^2).")
    leak_mw: NonNeg | None = Field(None, description="Override: leakage per MAC (mW).")


class TechnologyConfig(_Strict):
    """Process and memory technology; scales every cost not overridden."""

    node_nm: Annotated[float, Field(ge=7, le=180), Number] = Field(
        description="Process node in nm (7-180; 45/28/16/7 are the main nodes; others interpolate)."
    )
    vdd: PosFloat | None = Field(
        None, description="Supply voltage (V); default: the node's nominal. Within 0.5-1.5x the nominal "
        "and where the node's energy fit rises with the supply (docs/technology.md)."
    )
    sram_cell: Literal["LSTP", "HP"] = Field(
        "LSTP", description="SRAM cell flavour: LSTP (low leakage, for AR) or HP (1236x the leakage: CACTI 7, 1 MB at 22 nm)."
    )
    dram: Literal["LPDDR4", "LPDDR5", "HBM2", "DDR4", "DDR3", "GDDR5"] = Field(
        "LPDDR4", description="Off-chip DRAM type (energy per bit)."
    )


class SystolicConfig(_Strict):
    """Declares the fan-out below one level a systolic array (adds fill/drain to latency)."""

    dataflow: Literal["WS", "OS", "IS"] = Field(
        description="Stationary operand: WS weights, OS outputs, IS inputs."
    )
    level: str | None = Field(
        None,
        description="Level whose fan-out is the array (rows = fanout.y, cols = fanout.x); "
        "default: the level with the largest fan-out.",
    )


class VectorUnitConfig(_Strict):
    """Element-wise unit for non-MAC layers (pooling, activation, softmax, ...)."""

    lanes: PosInt = Field(description="Elements processed per cycle.")
    datatype: Datatype = Field("int8", description="Element type.")
    level: str | None = Field(
        None, description="Level it reads/writes; default: the outermost on-chip level."
    )
    op_pj: NonNeg | None = Field(
        None, description="Override: energy per element op (pJ); default: one MAC of its datatype."
    )
    area_mm2: NonNeg | None = Field(None, description="Override: total area (mm^2).")
    leak_mw: NonNeg | None = Field(None, description="Override: total leakage (mW).")


class Constraint(_Strict):
    """Dataflow constraint on one level (Timeloop-style); the mapspace honours it, costs ignore it."""

    level: str = Field(description="Level name.")
    spatial_x: list[Dim] | dict[Dim, PosInt | None] | None = Field(
        None,
        description="Dims that may be unrolled on the X fan-out below the level (others get factor 1); "
        "a mapping {C: 4} also fixes the factor. Omit: every dim allowed.",
    )
    spatial_y: list[Dim] | dict[Dim, PosInt | None] | None = Field(
        None, description="The same for the Y fan-out."
    )
    temporal: dict[Dim, PosInt] | None = Field(
        None,
        description="Fixed temporal factors at this level, e.g. {P: 1, Q: 1}; "
        "dims the layer lacks are ignored.",
    )
    order: list[Dim] | None = Field(
        None, json_schema_extra={"uniqueItems": True},
        description="These dims are the level's innermost loops, in this order (outer to inner).",
    )

    @field_validator("order")
    @classmethod
    def _distinct(cls, order: list[str] | None) -> list[str] | None:
        if order is not None and len(set(order)) != len(order):
            twice = sorted({d for d in order if order.count(d) > 1})
            raise ValueError(f"expected distinct dims, got {order} ({', '.join(twice)} twice)")
        return order
    bypass: list[Role] = Field(default_factory=list, description="Tensors that must bypass this level.")
    keep: list[Role] = Field(default_factory=list, description="Tensors that must be kept at this level.")


class PaddingConfig(_Strict):
    """Imperfect factors: the mappers may pad a loop bound up to a larger size with more useful
    divisors (zero-padded data), as hardware does for a prime channel count on a power-of-two array.
    A padded mapping's factors multiply to the padded bound; it pays for the padded MACs and tiles."""

    max_fraction: Annotated[float, Field(gt=0, le=1), Number] = Field(
        description="Largest padding as a fraction of the bound: a dim of size D may be padded to at "
        "most floor(D * (1 + max_fraction)) (0.125: 15 -> 16, 17 -> 19)."
    )
    dims: list[Dim] | None = Field(
        None, description="Dims that may be padded (e.g. [K, C]); dims a layer lacks are ignored. "
        "Omit: every dim."
    )
    max_candidates: PosInt = Field(
        2, description="Padded sizes the mappers try per dim: the smallest sizes in the allowance that "
        "need fewer folds on a fan-out the dim may use, or have more divisors, than every smaller size."
    )
    max_problems: PosInt = Field(
        16, description="Padded problems (combinations of per-dim sizes, least padded MACs first) the "
        "mappers search besides the unpadded one."
    )


class MapspaceConfig(_Strict):
    """Options of the mapspace that are properties of the hardware (beyond dataflow constraints)."""

    padding: PaddingConfig | None = Field(
        None, description="Optional: allow imperfect factors by padding loop bounds. Omit: perfect "
        "factorizations only."
    )


def _dram_first(schema: dict[str, Any]) -> None:
    """The schema says what arch_resolve checks of the level kinds: DRAM first, and only there."""
    levels = schema["properties"]["levels"]
    level = levels.pop("items")  # (the reference to LevelConfig, in whatever form pydantic has it here)
    levels["prefixItems"] = [{"allOf": [level, {"properties": {"kind": {"const": "dram"}}}]}]
    levels["items"] = {"allOf": [dict(level), {"properties": {"kind": {"not": {"const": "dram"}}}}]}


class HwConfig(_Strict):
    """A hardware config file (hwconfigs/*.yaml)."""

    model_config = ConfigDict(**_Strict.model_config, json_schema_extra=_dram_first)

    name: Name = Field(description="Config name.")
    description: str | None = Field(None, description="Free text (sources belong in comments too).")
    clock: Any = Field(
        json_schema_extra={"anyOf": [{"type": "number", "minimum": 1, "maximum": MAX_HZ},
                                     {"type": "string", "pattern": FREQ_PATTERN}]},
        description="Clock: '1 GHz', '200 MHz', or Hz as a number.",
    )
    technology: TechnologyConfig = Field(description="Process node, supply, SRAM cells, DRAM type.")
    mac: MacConfig = Field(description="MAC units.")
    levels: list[LevelConfig] = Field(min_length=1, description="Storage levels, outermost (DRAM) first.")
    systolic: SystolicConfig | None = Field(None, description="Optional: a systolic array.")
    vector_unit: VectorUnitConfig | None = Field(None, description="Optional: a vector unit.")
    compilable: dict[str, Any] | None = Field(
        None, description="Optional: the compiler template block, validated by compiler/target.py."
    )
    constraints: list[Constraint] = Field(default_factory=list, description="Dataflow constraints.")
    mapspace: MapspaceConfig | None = Field(None, description="Optional: mapspace options (padding).")
    fixed_overhead_mm2: NonNeg = Field(0.0, description="Area of control, I/O, etc. (mm^2).")


class Level(BaseModel):
    """A resolved storage level (see CONTRACTS.md); costs per word and per instance."""

    model_config = ConfigDict(frozen=True)
    name: str
    kind: str
    holds: tuple[str, ...]
    capacity_words: int | None
    word_bits: int
    block_words: int
    ports: int
    read_bw: float | None
    write_bw: float | None
    fanout_x: int
    fanout_y: int
    multicast: bool
    spatial_reduction: bool
    double_buffered: bool
    ideal_overlap: bool
    instances: int
    read_pj: float
    write_pj: float
    hop_pj: float
    leak_mw: float
    area_mm2: float
    network_area_mm2: float
    """Area of the fan-out network below ALL instances of this level (estimate, tech.network_area_mm2)."""

    @property
    def fanout(self) -> int:
        return self.fanout_x * self.fanout_y


class MacSpec(BaseModel):
    model_config = ConfigDict(frozen=True)
    datatype: str
    energy_pj: float
    area_mm2: float
    leak_mw: float


class Systolic(BaseModel):
    model_config = ConfigDict(frozen=True)
    dataflow: str
    level: str
    rows: int
    cols: int


class VectorUnit(BaseModel):
    model_config = ConfigDict(frozen=True)
    lanes: int
    datatype: str
    level: str
    op_pj: float
    area_mm2: float
    leak_mw: float


class Architecture(BaseModel):
    """A validated hardware config with every cost resolved. Levels: DRAM (index 0) to innermost."""

    model_config = ConfigDict(frozen=True)
    name: str
    source: str
    description: str | None = None
    clock_hz: float
    node_nm: float
    vdd: float | None
    sram_cell: str
    dram_type: str
    levels: tuple[Level, ...]
    mac: MacSpec
    systolic: Systolic | None
    vector_unit: VectorUnit | None
    compilable: dict[str, Any] | None
    constraints: tuple[Constraint, ...]
    fixed_overhead_mm2: float
    padding: PaddingConfig | None = None
    _fingerprint: str | None = PrivateAttr(default=None)

    @property
    def num_pes(self) -> int:
        """Number of MACs: the product of all fan-outs."""
        return math.prod(lv.fanout for lv in self.levels)

    @property
    def technology(self) -> Technology:
        return Technology(self.node_nm, self.vdd, self.sram_cell, self.dram_type)

    def level_index(self, name: str) -> int:
        for i, lv in enumerate(self.levels):
            if lv.name == name:
                return i
        names = ", ".join(lv.name for lv in self.levels)
        raise UserError(f"{self.source}: no level named '{name}' (levels: {names})")

    def level(self, name: str) -> Level:
        return self.levels[self.level_index(name)]

    def to_dataframe(self) -> Any:
        """One row per level (pandas, imported lazily): the resolved fields and costs."""
        import pandas as pd

        return pd.DataFrame([lv.model_dump() for lv in self.levels]).set_index("name")

    def fingerprint(self) -> str:
        """16 hex chars of sha256 over the canonical resolved config (file path and description excluded,
        so moving or re-describing a config does not invalidate binaries compiled for it)."""
        if self._fingerprint is None:
            # a config without padding keeps the fingerprint it had before the field existed
            skip = {"source", "description"} | ({"padding"} if self.padding is None else set())
            data = self.model_dump(mode="json", exclude=skip)
            blob = json.dumps(data, sort_keys=True, separators=(",", ":"))
            self._fingerprint = hashlib.sha256(blob.encode()).hexdigest()[:16]
        return self._fingerprint

    def __hash__(self) -> int:  # usable as a cache key despite its dict fields
        return hash(self.fingerprint())

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Architecture)
            and self.fingerprint() == other.fingerprint()
            and (self.source, self.description) == (other.source, other.description)
        )


def resolve_path(path_or_name: str | Path) -> Path:
    """A path, or a bare config name -> ``<repo>/hwconfigs/<name>.yaml``."""
    if not isinstance(path_or_name, (str, Path)):
        raise TypeError(f"a hardware config: expected a path or a shipped config's name, got "
                        f"{type(path_or_name).__name__} {path_or_name!r:.60}")
    p = Path(path_or_name)
    if p.is_file() or p.suffix in (".yaml", ".yml") or len(p.parts) > 1:  # (a folder named `tiny` is no config)
        return p
    return HWCONFIGS / f"{p}.yaml"


def load_config_data(path_or_name: str | Path) -> tuple[Any, LineMap, Path]:
    """The raw data of a hwconfig file with its line map (for studies that patch knobs, then resolve)."""
    path = resolve_path(path_or_name)
    if not path.exists():
        shipped = sorted(q.stem for q in HWCONFIGS.glob("*.yaml"))
        raise UserError(f"{path}: no such hardware config (shipped configs: {', '.join(shipped)})")
    data, lines = load_yaml(path)
    return data, lines, path


def load_architecture(path_or_name: str | Path) -> Architecture:
    """Load, validate and resolve a hwconfig; any mistake -> UserError with file:line: field."""
    data, lines, path = load_config_data(path_or_name)
    return architecture_from_dict(data, lines, source=str(path))


def as_architecture(arch: Any) -> Architecture:
    """An API argument that names a config: an Architecture (or a stand-in with its fields, as tests
    build), or a shipped config's name or a YAML path, loaded. Anything else is a TypeError that says
    so, not an AttributeError from deep inside."""
    if isinstance(arch, (str, Path)):
        return load_architecture(arch)
    if not hasattr(arch, "levels"):
        raise TypeError(f"arch: expected an Architecture (load_architecture(...)), a config name or a path, "
                        f"got {type(arch).__name__}")
    return arch


def architecture_from_dict(data: Any, lines: LineMap | None = None, source: str = "<dict>") -> Architecture:
    """Validate and resolve config data (e.g. a study's modified copy of a shipped config)."""
    lines = lines or LineMap(source, {})
    if not isinstance(data, dict):
        raise lines.error((), f"expected a mapping of config fields, got {type(data).__name__}")
    try:
        cfg = HwConfig.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, lines, HwConfig, data) from None
    from costmodel.arch_resolve import resolve

    return resolve(cfg, lines, source)
