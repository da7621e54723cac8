"""The study YAML format (pydantic models; ``dse schema study`` can print them) and ``load_study``.

Loading checks everything that can be checked before the first trial, each error naming the file,
line and field: the hardware template is a valid config, knob paths exist in it, every value a knob
takes fits its field, ranges are ordered, expressions parse and name known knobs, objectives and
constraints name metrics, workloads exist. The result is a :class:`Study` that the runner uses
without re-reading the file.
"""

from __future__ import annotations

import keyword
import os
import re
import string
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from costmodel.errors import FieldError, UserError
from costmodel.yamlio import LineMap, format_path, load_yaml, validation_error
from dse.mappers.options import SEED_MAX
from dse.study.expr import Expr, ExprError, parse, parse_comparison
from dse.study.knobs import Knob, PathKey, apply_knobs, derived_order, resolve_path
from dse.study.metrics import WORKLOAD_METRICS, metric_names

Number = int | float
TRIAL_COLUMNS = ("trial", "state", "same_as", "feasible", "invalid")
"""The trials table's columns besides knobs, metrics and violations (dse.study.results)."""
TAKEN_NAMES = (*metric_names([]), "fps", *TRIAL_COLUMNS)
"""Names a knob may not take (an expression or a table column would read two things)."""


class _Strict(BaseModel):
    # strict: `trials: true` is not 1 and `'40'` is not 40; .inf / .nan are typos
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class WorkloadSpec(_Strict):
    """One network of the scenario."""

    name: str = Field(description="Short name, used in metric names (NAME.latency_ms): an identifier.",
                      json_schema_extra={"pattern": r"^[^.\s0-9-][^.\s-]*$", "not": {"enum": keyword.kwlist}})
    model: str | None = Field(None, description="A zoo model name or an ONNX path (relative to the study file).")
    layers: list[dict[str, Any]] | None = Field(
        None, min_length=1, description="Instead of a model: layers in the layer-file format (kind: conv2d, ...).")
    fps: float | None = Field(None, gt=0, description="Frame-rate target (frames/s); sets power and load.")
    weight: float = Field(1.0, ge=0, description="Weight in the study-wide sums (energy, latency, power).")
    constraints: list[str] = Field(default_factory=list, json_schema_extra={"uniqueItems": True},
                                   description="Per-workload constraints on its own metrics, e.g. "
                                   "'latency_ms <= 1000 / fps'.")


class KnobSpec(_Strict):
    """A hardware knob: exactly one of choices, low/high, expr, or presets."""

    path: str | None = Field(None, description="Field path into the hardware config, e.g. "
                             "levels.buffer.capacity (not with presets).")
    choices: list[Any] | None = Field(  # (any items here: the hardware field's own check says what it wants)
        None, min_length=1,
        json_schema_extra={"items": {"type": ["boolean", "integer", "number", "string", "null"]}, "uniqueItems": True},
        description="Categorical values (numbers, strings, booleans or null), each once.")
    presets: dict[str, dict[str, Any]] | None = Field(
        None, min_length=1, description="Named choices that each set several fields: {LABEL: {PATH: VALUE}}, "
        "e.g. a dataflow that changes the systolic mode, a PE register and a constraint together.")
    low: Number | None = Field(None, description="Range lower bound (inclusive).")
    high: Number | None = Field(None, description="Range upper bound (inclusive).")
    step: Number | None = Field(None, gt=0, description="Range step (not with log).")
    log: bool = Field(False, description="Sample the range on a log scale.")
    type: Literal["int", "float"] | None = Field(None, description="Range type; default: int if both bounds are.")
    expr: str | None = Field(None, description="Derived value from other knobs, e.g. 'rows * cols'.")
    format: str | None = Field(None, description="Text written into the config, e.g. '{} KiB'.")


class ObjectiveSpec(_Strict):
    metric: str = Field(description="A metric name (see docs/studies.md).")
    direction: Literal["minimize", "maximize"] = "minimize"


class SamplerSpec(_Strict):
    kind: Literal["grid", "random", "tpe", "nsga2"] = "tpe"
    seed: int = Field(0, ge=0, le=SEED_MAX, description="Seed of the sampler (numpy's range).")
    population: int = Field(20, gt=1, description="NSGA-II population size.")
    history_lag: int = Field(1, ge=1, description="TPE / NSGA-II: trial n is drawn from trials 0 .. n - "
                             "history_lag, once they have finished, so that any number of workers runs the "
                             "same trials; at most this many trials run at once (1: one at a time, as a "
                             "serial run). Grid and random ignore it.")


def _objective(text: str) -> str:
    """The mapper objectives of ``dse map --objective`` (a study had taken three of them only)."""
    from dse.mappers.objectives import Objective

    try:
        Objective.parse(text)
    except UserError as exc:
        raise ValueError(str(exc).removeprefix("objective: ")) from None
    return text


class MapperSpec(_Strict):
    mapper: Literal["fast", "exhaustive"] = "fast"
    objective: Annotated[str, AfterValidator(_objective)] = Field(
        "edp", description="What the mapper minimizes per layer: edp, energy, latency, ed2p or a mix like "
        "'energy:1,latency:2' (as dse map --objective).")
    max_evaluations: int = Field(2000, gt=0, description="Fast mapper budget per distinct layer shape.")
    seed: int = Field(0, ge=0, le=SEED_MAX, description="Seed of the mapper's search (numpy's range).")
    workers: int = Field(1, gt=0, description="Processes mapping a model's layers in parallel inside a trial "
                         "(map_model workers); use with --workers 1.")


FOLDER_NAME = r"^[^./\\\s-][^/\\\s]*$"
"""A study's name: its output folder under runs/ (no separator, no space, not hidden, not an option)."""


class StudySpec(_Strict):
    """A study file."""

    name: str = Field(description="The study's name; its output folder is runs/NAME.",
                      json_schema_extra={"pattern": FOLDER_NAME})
    hardware: str = Field(description="Base hwconfig: a shipped name (tiny, ar_glasses_npu) or a YAML path.")
    workloads: list[WorkloadSpec] = Field(min_length=1)
    knobs: dict[str, KnobSpec] = Field(default_factory=dict, json_schema_extra={"propertyNames": {
        "pattern": r"^[^.\s0-9][^.\s]*$", "not": {"enum": [*TAKEN_NAMES, *keyword.kwlist]}}})
    objectives: list[ObjectiveSpec] = Field(min_length=1)
    constraints: list[str] = Field(default_factory=list, json_schema_extra={"uniqueItems": True},
                                   description="e.g. 'area_mm2 <= 4'.")
    sampler: SamplerSpec = Field(default_factory=SamplerSpec)
    trials: int = Field(20, gt=0)
    mapper: MapperSpec = Field(default_factory=MapperSpec)
    output: str | None = Field(None, description="Output folder (default: runs/NAME, relative to the "
                               "current directory).")


STRICT_EQUAL = 1e-9
"""The violation of ``a < b`` (or ``a > b``) when a == b: positive, so the design is infeasible."""


@dataclass(frozen=True)
class ConstraintDef:
    """``lhs op rhs``; ``workload`` set for a per-workload constraint (names resolve to its metrics)."""

    text: str
    lhs: Expr
    op: str
    rhs: Expr
    workload: str | None = None
    at: PathKey = ()
    """Where the study file gives it (``constraints[1]``, ``workloads[0].constraints[0]``)."""

    @property
    def key(self) -> str:
        """Its name in a trial's violations (and the table's ``violation:`` columns)."""
        return f"{self.workload}: {self.text}" if self.workload else self.text

    def violation(self, env: dict[str, float]) -> float:
        """<= 0 when satisfied; otherwise the relative amount by which it is violated (for ``<`` and
        ``>``, equal sides violate it by :data:`STRICT_EQUAL`)."""
        a, b = self.lhs.evaluate(env), self.rhs.evaluate(env)
        if a == b and self.op in ("<", ">"):
            return STRICT_EQUAL
        scale = max(abs(b), 1e-12)
        return (a - b) / scale if self.op in ("<=", "<") else (b - a) / scale


@dataclass
class Study:
    spec: StudySpec
    source: Path
    base_config: dict[str, Any]
    hw_source: Path
    knobs: list[Knob]
    constraints: list[ConstraintDef]
    output: Path
    root: Path
    """Folder that relative paths in the file (hardware, ONNX models) are relative to."""
    lines: LineMap
    """Where each field of the file is, for errors found after loading (a model that does not load)."""

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def sampled_knobs(self) -> list[Knob]:
        return [k for k in self.knobs if not k.derived]

    @property
    def workload_names(self) -> list[str]:
        return [w.name for w in self.spec.workloads]

    def model_path(self, w: WorkloadSpec) -> str:
        """A workload's model as the loader wants it (ONNX paths relative to the study file)."""
        assert w.model is not None
        p = Path(w.model)
        if p.suffix == ".onnx" and not p.is_absolute():
            return str(self.root / p)
        return w.model


def _knob(name: str, spec: KnobSpec, base: dict[str, Any], lines: LineMap, at: tuple) -> Knob:
    from costmodel.arch import HwConfig

    if spec.presets is not None:
        if spec.path is not None or spec.choices is not None or spec.expr is not None or spec.low is not None:
            raise lines.error(at, "presets set their own paths: no path, choices, low/high or expr with them")
        presets, texts = {}, {}
        for label, fields in spec.presets.items():
            try:
                paths = [resolve_path(p, base, HwConfig) for p in fields]
            except ValueError as exc:
                raise lines.error((*at, "presets", label), str(exc)) from None
            texts.update(zip(paths, fields, strict=True))
            presets[label] = tuple(zip(paths, fields.values(), strict=True))
        return _checked(Knob(name, (), choices=tuple(presets), presets=presets), base, texts, lines, at)
    if spec.path is None:
        raise lines.error(at, "a knob needs a path (or presets)")
    try:
        path = resolve_path(spec.path, base, HwConfig)
    except ValueError as exc:
        raise lines.error((*at, "path"), f"{exc}") from None
    forms = [spec.choices is not None, spec.low is not None or spec.high is not None, spec.expr is not None]
    if sum(forms) != 1:
        raise lines.error(at, "expected exactly one of: choices, low+high, expr, presets")
    if spec.expr is not None:
        try:
            expr = parse(spec.expr)
        except ExprError as exc:
            raise lines.error((*at, "expr"), str(exc)) from None
        return _checked(Knob(name, path, expr=expr, format=spec.format), base, {}, lines, at)
    if spec.choices is not None:
        knob = _checked(Knob(name, path, choices=tuple(spec.choices), format=spec.format), base,
                        {path: spec.path}, lines, at)
        for i, choice in enumerate(spec.choices):  # (optuna stores scalars; a list broke every table at the end)
            if choice is not None and not isinstance(choice, (int, float, str, bool)):  # (null: an unset field)
                raise lines.error((*at, "choices", i), f"expected a number, string or boolean, got {choice!r} "
                                  "(several fields at once: presets)")
            same = [j for j, c in enumerate(spec.choices[:i])  # (equal as JSON: 8 and 8.0, not true and 1)
                    if isinstance(c, bool) == isinstance(choice, bool) and c == choice]
            if same:  # (a grid point spent twice, and the samplers drew it twice as often)
                raise lines.error((*at, "choices", i), f"{choice!r} is listed twice (first at choices[{same[0]}])")
        return knob
    if spec.low is None or spec.high is None:
        raise lines.error(at, "a range needs both low and high")
    if spec.low > spec.high:
        raise lines.error((*at, "low"), f"low ({spec.low}) is greater than high ({spec.high})")
    if spec.log and spec.low <= 0:
        raise lines.error((*at, "low"), f"a log range needs low > 0, got {spec.low}")
    if spec.log and spec.step is not None:
        raise lines.error((*at, "step"), "step cannot be combined with log")
    is_int = spec.type == "int" or (spec.type is None and isinstance(spec.low, int) and isinstance(spec.high, int))
    for bound in ("low", "high"):  # (int() truncated 100.9 to 100, a value below the range)
        if is_int and not float(getattr(spec, bound)).is_integer():
            raise lines.error((*at, bound), f"expected a whole number for an integer range, got {getattr(spec, bound)}")
    if spec.step is not None:  # (optuna refused a fractional step of an int range per trial, or took int(step))
        if is_int and not float(spec.step).is_integer():
            raise lines.error((*at, "step"), f"expected a whole step for an integer range, got {spec.step}")
        if spec.high > spec.low and spec.step > (spec.high - spec.low) * (1 + 1e-9):  # (1.2 - 1.1 < 0.1)
            raise lines.error((*at, "step"), f"expected a step of at most high - low ({spec.high - spec.low}), "
                                             f"got {spec.step}: the range would hold low alone")
    knob = Knob(name, path, low=spec.low, high=spec.high, step=spec.step, log=spec.log, is_int=is_int,
                format=spec.format)
    return _checked(knob, base, {path: spec.path}, lines, at)


class _Locating(LineMap):
    """A line map whose errors are :class:`FieldError` (for configs that have no file: a template
    with one knob value applied)."""

    def error(self, path: Sequence[str | int], message: str) -> UserError:
        return FieldError(path, message)


_LOCATING = _Locating("", {})


def _at(obj: Any, path: PathKey) -> Any:
    """The value at ``path`` of config data (dicts, lists) or of a validated config (models)."""
    for key in path:
        obj = obj[key] if isinstance(obj, (dict, list)) else getattr(obj, str(key))
    return obj


def _value_error(knob: Knob, value: Any, base: dict[str, Any]) -> tuple[PathKey, str] | None:
    """Why the template with this one knob value is not a valid config, as (field, reason), or None.

    Checked as a trial's config is, for what is the value's own fault: the field's type (pydantic;
    and ``true`` is not taken for 1) and, for the free-form fields whose text is parsed later
    (``clock``, ``capacity``), that parse. Rules across fields (fan-outs vs ``mac.count``, ...) are
    left to the trials: other knobs may meet them.
    """
    from costmodel.arch import HwConfig
    from costmodel.arch_resolve import resolve

    data = apply_knobs(base, [knob], {knob.name: value})
    try:
        cfg = HwConfig.model_validate(data)
    except ValidationError as exc:
        err = validation_error(exc, _LOCATING, HwConfig, data)
        assert isinstance(err, FieldError)
        return err.path, str(err)
    paths = [p for p, _ in knob.presets[value]] if knob.presets is not None else [knob.path]
    free = []
    for p in paths:
        given, got = _at(data, p), _at(cfg, p)
        if isinstance(given, bool) and not isinstance(got, bool):
            return p, f"expected {'an integer' if isinstance(got, int) else 'a number'}, got {given!r}"
        if type(_at(cfg, p[:-1])).model_fields[str(p[-1])].annotation is Any:
            free.append(p)
    if free:
        try:
            resolve(cfg, _LOCATING, "")
        except FieldError as exc:
            if any(exc.path[:len(p)] == p for p in free):
                return exc.path, str(exc)
    return None


def _inner_value(low: float, high: float, step: float | None) -> float:
    """A value of a float range that is a fraction if the range has any: does the field take fractions?"""
    if step is not None:
        return low + step if low + step <= high else low
    mid = (low + high) / 2
    return mid + min(0.5, (high - low) / 4) if mid.is_integer() else mid


def _tried_values(knob: Knob) -> Iterator[tuple[PathKey, Any, str]]:
    """(where in the knob, value, note) for each value to try on the template: every choice or preset;
    a range's bounds and, for a float range, a value inside it. A handful per knob: loading stays fast."""
    if knob.presets is not None:
        yield from ((("presets", label), label, "") for label in knob.presets)
    elif knob.choices is not None:
        yield from ((("choices", i), v, "") for i, v in enumerate(knob.choices))
    elif not knob.derived:
        assert knob.low is not None and knob.high is not None
        cast = int if knob.is_int else float
        low, high = cast(knob.low), cast(knob.high)

        def note(v: float) -> str:
            return "" if knob.is_int else (f" ({v:g} is a value of this float range: for an integer field "
                                           "give integer low and high, or type: int)")

        yield ("low",), low, note(low)
        yield ("high",), high, note(high)
        if not knob.is_int:
            inner = _inner_value(low, high, knob.step)
            yield (), inner, note(inner)


def _check_format(fmt: str, values: list[Any], lines: LineMap, at: tuple) -> None:
    """A format must place the value (``'{} KiB'``) and accept every value the knob takes."""
    try:
        for v in values:
            fmt.format(v)
        placed = any(field is not None for _, field, _, _ in string.Formatter().parse(fmt))
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise lines.error(at, f"expected a format like '{{}} KiB' that takes the knob's values, got {fmt!r} "
                          f"({type(exc).__name__}: {exc})") from None
    if not placed:
        raise lines.error(at, f"expected a format with {{}} where the value goes, like '{{}} KiB', got {fmt!r}")


def _checked(knob: Knob, base: dict[str, Any], texts: dict[PathKey, str], lines: LineMap, at: tuple) -> Knob:
    """``knob``, once every value it takes fits its field(s) of the template (``texts``: the paths as
    the study file spells them, for messages); else UserError at the value."""
    tried = list(_tried_values(knob))
    if knob.format is not None:
        _check_format(knob.format, [v for _, v, _ in tried], lines, (*at, "format"))
    for sub, value, note in tried:
        if (err := _value_error(knob, value, base)) is not None:
            path, reason = err
            note = note if "expected an integer" in reason else ""  # (the float-range hint: only then)
            raise lines.error((*at, *sub), f"{texts.get(path, format_path(path))}: {reason}{note}")
    return knob


def _constraint(text: str, names: set[str], lines: LineMap, at: tuple, workload: str | None) -> ConstraintDef:
    try:
        lhs, op, rhs = parse_comparison(text)
    except ExprError as exc:
        raise lines.error(at, str(exc)) from None
    unknown = sorted((lhs.names | rhs.names) - names)
    if unknown:
        raise lines.error(at, f"unknown name(s) {', '.join(unknown)} in {text!r} (metrics, knobs"
                          f"{' and fps' if workload else ''} are allowed; see docs/studies.md)")
    return ConstraintDef(text, lhs, op, rhs, workload, tuple(at))


def _check_workload(study_dir: Path, w: WorkloadSpec, lines: LineMap, at: tuple) -> None:
    from costmodel.problem import Problem

    if (w.model is None) == (w.layers is None):
        raise lines.error(at, "expected exactly one of: model (zoo name or ONNX path), layers")
    if w.layers is not None:
        for i, layer in enumerate(w.layers):
            try:
                Problem.from_dict(layer, where="layer")
            except UserError as exc:
                raise lines.error((*at, "layers", i), str(exc).removeprefix("layer: ")) from None
        return
    assert w.model is not None
    from dse import workloads

    p = Path(w.model)
    if p.suffix == ".onnx":
        if not (p if p.is_absolute() else study_dir / p).exists():
            raise lines.error((*at, "model"), f"ONNX file {w.model!r} does not exist")
    elif w.model not in workloads.names():
        raise lines.error((*at, "model"), f"{w.model!r} is not a zoo model (zoo: "
                          f"{', '.join(workloads.names())}) nor an existing .onnx path")


@dataclass(frozen=True)
class _Within(LineMap):
    """The line map seen from the field ``at`` down, for a part of the file validated on its own."""

    at: PathKey = ()

    def where(self, path: Sequence[str | int]) -> str:
        return super().where((*self.at, *path))


def _check_knob_fields(knobs: Any, lines: LineMap) -> None:
    """Each knob's mapping validated on its own, so that a misspelt field (``choises``) gets its "did
    you mean": seen from the whole study, the knob's name stands between ``knobs`` and KnobSpec."""
    for name, spec in knobs.items() if isinstance(knobs, dict) else ():
        try:
            KnobSpec.model_validate(spec)
        except ValidationError as exc:
            raise validation_error(exc, _Within(lines.file, lines.lines, at=("knobs", name)), KnobSpec, spec) from None


def read_spec(path: str | Path) -> tuple[StudySpec, LineMap]:
    """A study file's fields, type-checked, and their lines (:func:`load_study` checks the rest)."""
    data, lines = load_yaml(path)
    if not isinstance(data, dict):
        raise lines.error((), "expected a mapping of study fields")
    _check_knob_fields(data.get("knobs"), lines)
    try:
        return StudySpec.model_validate(data), lines
    except ValidationError as exc:
        raise validation_error(exc, lines, StudySpec, data) from None


def _check_numeric(knobs: list[Knob], cons: list[ConstraintDef], lines: LineMap) -> None:
    """Knobs that an expression reads (a derived knob's, a constraint's) must take numbers."""
    users: dict[str, str] = {}
    for k in knobs:
        for n in k.expr.names if k.expr is not None else ():
            users.setdefault(n, f"knobs.{k.name}.expr")
    for c in cons:
        for n in c.lhs.names | c.rhs.names:
            users.setdefault(n, f"constraint {c.text!r}")
    for k in knobs:
        if k.name not in users or k.choices is None:
            continue
        if k.presets is not None:
            raise lines.error(("knobs", k.name), f"expected a knob with numbers ({users[k.name]} reads it), "
                              f"got presets (labels: {', '.join(k.presets)})")
        for i, v in enumerate(k.choices):
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise lines.error(("knobs", k.name, "choices", i), f"expected a number ({users[k.name]} "
                                  f"reads the knob), got {v!r}")


def _check_knob_paths(knobs: list[Knob], lines: LineMap) -> None:
    """Two knobs writing one config field (or one a part of the other's): the later write would
    win unseen, and the trials table would report the loser's values next to numbers it never set."""
    owners: list[tuple[PathKey, str]] = []
    for k in knobs:
        mine = {p for preset in k.presets.values() for p, _ in preset} if k.presets is not None else {k.path}
        for p in sorted(mine, key=str):
            for q, other in owners:
                if other != k.name and (p[:len(q)] == q or q[:len(p)] == p):
                    raise lines.error(("knobs", k.name), f"writes {format_path(p)}, which knob '{other}' writes "
                                      f"too ({format_path(q)}): give each config field one knob")
        owners += [(p, k.name) for p in mine]


def load_study(path: str | Path, root: str | Path | None = None) -> Study:
    """Read and check a study file; every mistake -> UserError with file:line: field: reason.
    Relative paths inside it are relative to ``root`` (default: the file's folder)."""
    from costmodel.arch import architecture_from_dict, load_config_data

    if not isinstance(path, (str, os.PathLike)):  # (pathlib's message names no argument)
        raise TypeError(f"load_study: expected the study file's path (str or os.PathLike), got {path!r:.60}")
    src = Path(path)
    base_dir = Path(root) if root is not None else src.parent
    spec, lines = read_spec(src)
    if not re.fullmatch(FOLDER_NAME, spec.name):  # ("" wrote into runs/, "../x" two folders up)
        raise lines.error(("name",), f"study name {spec.name!r} names its output folder runs/NAME: expected no "
                          "'/', no space, and no '.' or '-' first")
    hw = spec.hardware
    hw_path = base_dir / hw if hw.endswith((".yaml", ".yml")) and not Path(hw).is_absolute() else hw
    try:
        base, hw_lines, hw_file = load_config_data(hw_path)
        architecture_from_dict(base, hw_lines, source=str(hw_file))  # knob values are checked against it
    except UserError as exc:
        raise lines.error(("hardware",), str(exc)) from None
    knobs = [_knob(n, k, base, lines, ("knobs", n)) for n, k in spec.knobs.items()]
    _check_knob_paths(knobs, lines)
    knob_names = {k.name for k in knobs}
    taken = set(TAKEN_NAMES)
    for n in spec.knobs:
        if n in taken or "." in n or not n.isidentifier() or keyword.iskeyword(n):
            raise lines.error(("knobs", n), f"knob name {n!r} must be an identifier that is not a Python keyword, "
                              f"a metric, 'fps' or a column of the trials table (taken: {', '.join(sorted(taken))})")
    for k in knobs:
        if k.expr is not None and (bad := sorted(k.expr.names - knob_names)):
            raise lines.error(("knobs", k.name, "expr"), f"unknown knob(s) {', '.join(bad)} "
                              f"(knobs: {', '.join(sorted(knob_names))})")
    try:
        derived_order(knobs)
    except ValueError as exc:
        raise lines.error(("knobs",), str(exc)) from None
    names = [w.name for w in spec.workloads]
    for i, w in enumerate(spec.workloads):
        if not w.name.isidentifier() or keyword.iskeyword(w.name):  # (constraints read NAME.latency_ms)
            raise lines.error(("workloads", i, "name"), f"workload name {w.name!r} must be an identifier (it "
                              "names the workload's metrics, NAME.latency_ms, in constraints and objectives)")
        if w.name in names[:i]:  # (at the second use: the first was fine when it was written)
            raise lines.error(("workloads", i, "name"), f"workload name {w.name!r} is used twice (first at "
                              f"workloads[{names.index(w.name)}])")
        _check_workload(base_dir, w, lines, ("workloads", i))
    metrics = set(metric_names(names))
    for i, o in enumerate(spec.objectives):
        if o.metric not in metrics:
            raise lines.error(("objectives", i, "metric"), f"{o.metric!r} is not a metric (metrics: "
                              f"{', '.join(sorted(m for m in metrics if '.' not in m))}, and "
                              f"WORKLOAD.<{'|'.join(WORKLOAD_METRICS)}>)")
    cons: list[ConstraintDef] = []
    seen: dict[str, tuple] = {}  # each names a column of the trials table: twice broke the table
    places = [(("constraints", i), c, None) for i, c in enumerate(spec.constraints)]
    places += [(("workloads", i, "constraints", j), c, w.name)
               for i, w in enumerate(spec.workloads) for j, c in enumerate(w.constraints)]
    for at, text, workload in places:
        local = set(WORKLOAD_METRICS) | knob_names | {"fps"} if workload else metrics | knob_names
        c = _constraint(text, local, lines, at, workload)
        if c.key in seen:
            raise lines.error(at, f"constraint {c.text!r} is given twice (first at {format_path(seen[c.key])})")
        seen[c.key] = at
        cons.append(c)
    for i, w in enumerate(spec.workloads):
        if any("fps" in c.lhs.names | c.rhs.names for c in cons if c.workload == w.name) and not w.fps:
            raise lines.error(("workloads", i, "fps"), "a constraint uses fps but the workload has no fps")
    _check_numeric(knobs, cons, lines)
    if spec.sampler.kind == "grid":
        for k in knobs:
            if not k.derived:
                try:
                    k.grid_values()
                except ValueError as exc:
                    raise lines.error(("knobs", k.name), str(exc)) from None
    out = Path(spec.output) if spec.output else Path("runs") / spec.name
    return Study(spec, src, base, Path(hw_file), knobs, cons, out, base_dir, lines)
