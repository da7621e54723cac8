"""The study YAML format (pydantic models; ``dse schema study`` can print them) and ``load_study``.

Loading checks everything that can be checked before the first trial, each error naming the file,
line and field: knob paths exist in the hardware config, ranges are ordered, expressions parse and
name known knobs, objectives and constraints name metrics, workloads exist. The result is a
:class:`Study` that the runner uses without re-reading the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from costmodel.errors import UserError
from costmodel.yamlio import LineMap, load_yaml, validation_error
from dse.study.expr import Expr, ExprError, parse, parse_comparison
from dse.study.knobs import Knob, derived_order, resolve_path
from dse.study.metrics import WORKLOAD_METRICS, metric_names

Number = int | float


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class WorkloadSpec(_Strict):
    """One network of the scenario."""

    name: str = Field(description="Short name, used in metric names (NAME.latency_ms).")
    model: str | None = Field(None, description="A zoo model name or an ONNX path (relative to the study file).")
    layers: list[dict[str, Any]] | None = Field(
        None, description="Instead of a model: layers in the layer-file format (kind: conv2d, ...).")
    fps: float | None = Field(None, gt=0, description="Frame-rate target (frames/s); sets power and load.")
    weight: float = Field(1.0, ge=0, description="Weight in the study-wide sums (energy, latency, power).")
    constraints: list[str] = Field(default_factory=list,
                                   description="Per-workload constraints on its own metrics, e.g. "
                                   "'latency_ms <= 1000 / fps'.")


class KnobSpec(_Strict):
    """A hardware knob: exactly one of choices, low/high, expr, or presets."""

    path: str | None = Field(None, description="Field path into the hardware config, e.g. "
                             "levels.buffer.capacity (not with presets).")
    choices: list[Any] | None = Field(None, min_length=1, description="Categorical values.")
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
    seed: int = 0
    population: int = Field(20, gt=1, description="NSGA-II population size.")


class MapperSpec(_Strict):
    mapper: Literal["fast", "exhaustive"] = "fast"
    objective: Literal["edp", "energy", "latency"] = "edp"
    max_evaluations: int = Field(2000, gt=0, description="Fast mapper budget per distinct layer shape.")
    seed: int = 0
    workers: int = Field(1, gt=0, description="Processes mapping a model's layers in parallel inside a trial "
                         "(map_model workers); use with --workers 1.")


class StudySpec(_Strict):
    """A study file."""

    name: str
    hardware: str = Field(description="Base hwconfig: a shipped name (tiny, ar_glasses_npu) or a YAML path.")
    workloads: list[WorkloadSpec] = Field(min_length=1)
    knobs: dict[str, KnobSpec] = Field(default_factory=dict)
    objectives: list[ObjectiveSpec] = Field(min_length=1)
    constraints: list[str] = Field(default_factory=list, description="e.g. 'area_mm2 <= 4'.")
    sampler: SamplerSpec = Field(default_factory=SamplerSpec)
    trials: int = Field(20, gt=0)
    mapper: MapperSpec = Field(default_factory=MapperSpec)
    output: str | None = Field(None, description="Output folder (default: runs/NAME, relative to the "
                               "current directory).")


@dataclass(frozen=True)
class ConstraintDef:
    """``lhs op rhs``; ``workload`` set for a per-workload constraint (names resolve to its metrics)."""

    text: str
    lhs: Expr
    op: str
    rhs: Expr
    workload: str | None = None

    def violation(self, env: dict[str, float]) -> float:
        """<= 0 when satisfied; otherwise the relative amount by which it is violated."""
        a, b = self.lhs.evaluate(env), self.rhs.evaluate(env)
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
        presets = {}
        for label, fields in spec.presets.items():
            try:
                presets[label] = tuple((resolve_path(p, base, HwConfig), v) for p, v in fields.items())
            except ValueError as exc:
                raise lines.error((*at, "presets", label), str(exc)) from None
        return Knob(name, (), choices=tuple(presets), presets=presets)
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
        return Knob(name, path, expr=expr, format=spec.format)
    if spec.choices is not None:
        return Knob(name, path, choices=tuple(spec.choices), format=spec.format)
    if spec.low is None or spec.high is None:
        raise lines.error(at, "a range needs both low and high")
    if spec.low > spec.high:
        raise lines.error((*at, "low"), f"low ({spec.low}) is greater than high ({spec.high})")
    if spec.log and spec.low <= 0:
        raise lines.error((*at, "low"), f"a log range needs low > 0, got {spec.low}")
    if spec.log and spec.step is not None:
        raise lines.error((*at, "step"), "step cannot be combined with log")
    is_int = spec.type == "int" or (spec.type is None and isinstance(spec.low, int) and isinstance(spec.high, int))
    return Knob(name, path, low=spec.low, high=spec.high, step=spec.step, log=spec.log, is_int=is_int,
                format=spec.format)


def _constraint(text: str, names: set[str], lines: LineMap, at: tuple, workload: str | None) -> ConstraintDef:
    try:
        lhs, op, rhs = parse_comparison(text)
    except ExprError as exc:
        raise lines.error(at, str(exc)) from None
    unknown = sorted((lhs.names | rhs.names) - names)
    if unknown:
        raise lines.error(at, f"unknown name(s) {', '.join(unknown)} in {text!r} (metrics, knobs"
                          f"{' and fps' if workload else ''} are allowed; see docs/studies.md)")
    return ConstraintDef(text, lhs, op, rhs, workload)


def _check_workload(study_dir: Path, w: WorkloadSpec, lines: LineMap, at: tuple) -> None:
    from costmodel.problem import Problem

    if (w.model is None) == (w.layers is None):
        raise lines.error(at, "expected exactly one of: model (zoo name or ONNX path), layers")
    if w.layers is not None:
        for i, layer in enumerate(w.layers):
            try:
                Problem.from_dict(layer, where="layer")
            except (UserError, ValueError) as exc:
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


def load_study(path: str | Path, root: str | Path | None = None) -> Study:
    """Read and check a study file; every mistake -> UserError with file:line: field: reason.
    Relative paths inside it are relative to ``root`` (default: the file's folder)."""
    from costmodel.arch import load_config_data

    src = Path(path)
    base_dir = Path(root) if root is not None else src.parent
    data, lines = load_yaml(src)
    if not isinstance(data, dict):
        raise lines.error((), "expected a mapping of study fields")
    try:
        spec = StudySpec.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, lines, StudySpec, data) from None
    hw = spec.hardware
    hw_path = base_dir / hw if hw.endswith((".yaml", ".yml")) and not Path(hw).is_absolute() else hw
    try:
        base, _, hw_file = load_config_data(hw_path)
    except UserError as exc:
        raise lines.error(("hardware",), str(exc)) from None
    knobs = [_knob(n, k, base, lines, ("knobs", n)) for n, k in spec.knobs.items()]
    knob_names = {k.name for k in knobs}
    taken = set(metric_names([])) | {"fps"}
    for n in spec.knobs:
        if n in taken or "." in n or not n.isidentifier():
            raise lines.error(("knobs", n), f"knob name {n!r} must be an identifier that is not a metric or "
                              f"'fps' (taken: {', '.join(sorted(taken))})")
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
        if names.count(w.name) > 1:
            raise lines.error(("workloads", i, "name"), f"workload name {w.name!r} is used twice")
        _check_workload(base_dir, w, lines, ("workloads", i))
    metrics = set(metric_names(names))
    for i, o in enumerate(spec.objectives):
        if o.metric not in metrics:
            raise lines.error(("objectives", i, "metric"), f"{o.metric!r} is not a metric (metrics: "
                              f"{', '.join(sorted(m for m in metrics if '.' not in m))}, and "
                              f"WORKLOAD.<{'|'.join(WORKLOAD_METRICS)}>)")
    cons = [_constraint(c, metrics | knob_names, lines, ("constraints", i), None)
            for i, c in enumerate(spec.constraints)]
    for i, w in enumerate(spec.workloads):
        local = set(WORKLOAD_METRICS) | knob_names | {"fps"}
        cons += [_constraint(c, local, lines, ("workloads", i, "constraints", j), w.name)
                 for j, c in enumerate(w.constraints)]
        if any("fps" in c.lhs.names | c.rhs.names for c in cons if c.workload == w.name) and not w.fps:
            raise lines.error(("workloads", i, "fps"), "a constraint uses fps but the workload has no fps")
    if spec.sampler.kind == "grid":
        for k in knobs:
            if not k.derived:
                try:
                    k.grid_values()
                except ValueError as exc:
                    raise lines.error(("knobs", k.name), str(exc)) from None
    out = Path(spec.output) if spec.output else Path("runs") / spec.name
    return Study(spec, src, base, Path(hw_file), knobs, cons, out, base_dir)
