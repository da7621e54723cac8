"""``map_model``: the best mapping of every layer of a network, and ``best_mapping`` for one layer.

Layers of equal shape (equal ``Problem``, hence equal :func:`dse.mapdb.layer_signature`) share one
search; searches already in the mapping database are answered from it; the rest run in parallel
(:mod:`dse.network.solve`) and are stored. Every answer is then evaluated once more with
:func:`costmodel.evaluate.evaluate` (milliseconds), so the per-layer breakdowns are always those
of the current cost model. Non-MAC layers are costed by :mod:`costmodel.vector`.
"""

from __future__ import annotations

import copy
import hashlib
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from costmodel.errors import UserError
from dse.mapdb import MappingDB, SearchKey, Stored, canonical, layer_signature
from dse.network.result import LayerResult, NetworkResult
from dse.network.solve import Search, solve

if TYPE_CHECKING:
    from compiler.frontend.workload import Layer, Workload
    from costmodel.arch import Architecture
    from costmodel.mapping import Mapping
    from costmodel.problem import Problem

DbSpec = MappingDB | str | Path | bool | None
"""``True``: the default database file; ``False``/``None``: none; a path or an open MappingDB."""


def open_db(db: DbSpec) -> MappingDB | None:
    """``db``: True (the default database), False or None (none), a path, or an open MappingDB."""
    if db is None or db is False:
        return None
    if isinstance(db, MappingDB):
        return db
    if db is not True and not isinstance(db, (str, Path)):
        raise TypeError(f"db: expected True, False, a path or a MappingDB, got {type(db).__name__} {db!r:.40}")
    return MappingDB(None if db is True else db)


def _options_key(mapper: str, seed: int, options: dict[str, Any]) -> str:
    opts = dict(options)
    c = opts.get("constraints")
    if isinstance(c, (str, Path)):  # a constraints file: key on its content, not its name
        try:
            opts["constraints"] = hashlib.sha256(Path(c).read_bytes()).hexdigest()
        except OSError:
            raise UserError(f"{c}: cannot read the constraints file") from None
    return canonical({"mapper": mapper, "seed": seed, "options": opts})


def search_for(problem: Problem, arch: Architecture, objective: Any, mapper: str, seed: int,
               options: dict[str, Any], layers: tuple[str, ...] = ()) -> Search:
    from dse.mappers import Objective
    from dse.mappers.options import check_mapper, check_options, check_seed

    check_mapper(mapper)
    obj = Objective.parse(objective)
    seed = check_seed(seed)
    options = {**check_options(mapper, {k: v for k, v in options.items() if k != "constraints"}),
               **{k: v for k, v in options.items() if k == "constraints"}}
    key = SearchKey(layer_signature(problem), arch.fingerprint(), canonical(obj.to_dict()),
                    _options_key(mapper, seed, options))
    return Search(key, problem, obj, mapper, seed, options, layers)


def _evaluated(layer_name: str, search: Search, arch: Architecture, stored: Stored) -> tuple[Mapping, dict]:
    """The stored mapping of a search, checked, and its metrics (before a layer's post-ops) under the
    search's own latency model (``overlap``, ``systolic_mode``: the numbers it optimized)."""
    from costmodel.evaluate import evaluate
    from costmodel.mapping import Mapping

    problem = search.problem
    m = Mapping.from_dict(stored.mapping, arch, where=f"mapping database entry for {layer_name}")
    m.validate(problem, arch, where=f"mapping database entry for {layer_name}")
    m = m.in_dim_order(problem.dim_names)  # (printed as the search printed it: the row's keys are sorted)
    timing = {k: v for k, v in search.options.items() if k in ("overlap", "systolic_mode")}
    return m, evaluate(problem, arch, m, **timing).to_dict()


def _stored_answer(store: MappingDB, search: Search, arch: Architecture) -> Stored | None:
    """The database's answer for ``search``, or None (a miss) when there is none or its mapping no
    longer fits the layer and config (an edited or damaged row): searched again and overwritten,
    with a warning (such a row used to stop the command with an error)."""
    from costmodel.mapping import Mapping

    stored = store.get(search.key)
    if stored is None:
        return None
    try:
        Mapping.from_dict(stored.mapping, arch, where="entry").validate(search.problem, arch, where="entry")
    except UserError as exc:
        warnings.warn(f"{store.path}: the mapping stored for layer {search.layers[0]} is not valid ({exc}); "
                      "searching it again", UserWarning, stacklevel=2)
        return None
    return stored


def _storable(search: Search) -> bool:
    """Whether a search's answer may be kept for later runs: not one cut off by a time limit, which
    depends on the machine's speed (a warm run would then differ from a fresh one)."""
    return "time_limit_s" not in search.options


def _searched_problem(layer: Layer) -> Problem:
    """What a MAC layer's search maps: its Problem, or for a recurrent one (an LSTM's or GRU's
    ``h_gates``) one time step's, since step t needs h[t-1] (mapping all T steps as one matmul put
    them in inner loops, with the weights reused across steps: up to 13x too few cycles)."""
    if layer.attrs.get("recurrent"):
        return layer.attrs["step_problem"]
    return layer.problem


def _scaled(metrics: dict[str, Any], steps: int) -> dict[str, Any]:
    """One step's metrics for ``steps`` steps run one after another: energy, cycles, seconds, MACs and
    access counts add up; power and utilization stay; EDP is the new energy x the new time."""
    def times(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: times(x) for k, x in v.items()}
        return v * steps

    out = dict(metrics)
    for key in ("energy_pj", "latency_cycles", "latency_s", "macs", "compute_cycles", "accesses",
                "energy_breakdown_pj"):
        out[key] = times(metrics[key])
    out["edp"] = out["energy_pj"] * out["latency_s"]
    out["recurrent_steps"] = steps
    return out


def _mac_result(layer_name: str, op_type: str, problem: Problem, arch: Architecture,
                evaluated: tuple[Mapping, dict[str, Any]], post_ops: int = 0, steps: int = 1) -> LayerResult:
    """A MAC layer's result from its search's ``evaluated`` mapping (shared by the network's layers
    of that shape: they are evaluated once) and its own post-GEMM vector ops; a recurrent layer's
    ``problem`` and mapping are one step's, run ``steps`` times (see :func:`_searched_problem`)."""
    from costmodel.vector import post_ops_pj

    m, metrics = evaluated[0], copy.deepcopy(evaluated[1])
    if steps > 1:
        metrics = _scaled(metrics, steps)
    if post_ops:
        extra = post_ops_pj(arch, post_ops)
        metrics["energy_breakdown_pj"]["vector_unit"] = extra
        metrics["energy_pj"] += extra
        metrics["edp"] = metrics["energy_pj"] * metrics["latency_s"]
        metrics["power_mw"] = metrics["energy_pj"] * 1e-9 / metrics["latency_s"]
    metrics["post_ops_vector_ops"] = int(post_ops)
    return LayerResult(layer_name, "mac", op_type, metrics, problem, m)


def _zero(area_mm2: float) -> dict[str, Any]:
    return {"energy_pj": 0.0, "latency_cycles": 0, "latency_s": 0.0, "area_mm2": area_mm2, "power_mw": 0.0,
            "macs": 0, "utilization": 0.0, "edp": 0.0, "accesses": {}, "energy_breakdown_pj": {}}


def _select(workload: Workload, layer: str | None) -> list[Layer]:
    layers = workload.layers()
    if layer is None:
        return layers
    hit = [x for x in layers if x.name == layer]
    if not hit:
        names = [x.name for x in layers]
        shown = ", ".join(names[:8]) + (f", ... ({len(names)} layers)" if len(names) > 8 else "")
        raise UserError(f"layer {layer!r}: no such layer in {workload.name} (layers: {shown})")
    return hit


def map_model(workload: Workload | str | Path, arch: Architecture | str | Path, *, objective: Any = "edp",
              mapper: str = "fast", seed: int = 0, workers: int | None = None, db: DbSpec = True,
              progress: bool = True, layer: str | None = None, **options: Any) -> NetworkResult:
    """Map every layer (or only ``layer``) of ``workload`` on ``arch``; ``options`` go to the mapper."""
    from compiler.frontend.workload import Workload as _Workload
    from costmodel.arch import as_architecture
    from costmodel.area import area_breakdown
    from costmodel.vector import layer_cost
    from dse import api
    from dse.mappers import Objective
    from dse.mappers.options import check_mapper, check_workers

    obj = Objective.parse(objective)  # cheap checks first
    check_mapper(mapper)
    workers = check_workers(workers)
    hw = as_architecture(arch)
    if not isinstance(workload, (str, Path, _Workload)):
        raise TypeError(f"workload: expected a Workload (load_workload(...)), a zoo model's name or an ONNX path, "
                        f"got {type(workload).__name__} (one layer: best_mapping or map_layer)")
    wl = workload if isinstance(workload, _Workload) else api.load_workload(workload)
    selected = _select(wl, layer)
    area = dict(area_breakdown(hw))

    searches: dict[str, Search] = {}
    first: dict[str, str] = {}
    layer_digest: dict[str, str] = {}
    for x in selected:
        if x.kind == "mac" and x.problem is not None:
            s = search_for(_searched_problem(x), hw, obj, mapper, seed, options)
            d = s.key.digest
            layer_digest[x.name] = d
            if d not in searches:
                searches[d] = s
                first[d] = x.name
    for d, s in list(searches.items()):
        names = tuple(n for n, dd in layer_digest.items() if dd == d)
        searches[d] = Search(s.key, s.problem, s.objective, s.mapper, s.seed, s.options, names)

    store = open_db(db)
    try:
        answers: dict[str, Stored] = {}
        if store is not None:
            for d, s in searches.items():
                hit = _stored_answer(store, s, hw)
                if hit is not None:
                    answers[d] = hit
        from_db = set(answers)
        todo = [s for d, s in searches.items() if d not in answers]
        t0 = time.perf_counter()
        put = ((lambda s, st: store.put(s.key, s.problem, st) if _storable(s) else None)
               if store is not None else None)
        answers.update(solve(todo, hw, workers=workers, progress=progress, on_done=put))
        search_seconds = time.perf_counter() - t0 if todo else 0.0
    finally:
        if store is not None and not isinstance(db, MappingDB):
            store.close()

    results: list[LayerResult] = []
    layer_warnings: list[str] = list(wl.warnings)  # the import's (symbolic dims fixed to 1, host layers...)
    done: dict[str, LayerResult] = {}
    plain: dict[str, tuple[Mapping, dict[str, Any]]] = {}  # per search: its mapping's metrics before post-ops
    for x in selected:
        if x.name in layer_digest:
            d = layer_digest[x.name]
            if d not in plain:
                plain[d] = _evaluated(x.name, searches[d], hw, answers[d])
            r = _mac_result(x.name, x.op_type, _searched_problem(x), hw, plain[d], x.vector_ops,
                            steps=int(x.attrs.get("steps", 1)) if x.attrs.get("recurrent") else 1)
            r.from_db = d in from_db
            if d in done:
                r.same_as = done[d].name
            else:
                if not r.from_db:
                    r.mappings_evaluated = answers[d].mappings_evaluated
                    r.search_seconds = answers[d].search_seconds
                done[d] = r
            results.append(r)
            continue
        cost = layer_cost(hw, x, area_mm2=area["total"]) if x.kind != "mac" else None
        note = ""
        if cost is None:
            note = "not costed (runs on the host)" if x.kind == "host" else "free (a view)"
            if x.kind == "host":
                layer_warnings.append(f"layer {x.name} ({x.op_type}) runs on the host: not costed")
            if x.kind == "mac":
                note = "MAC layer without a problem: not costed"
                layer_warnings.append(f"layer {x.name}: {note}")
            cost = _zero(area["total"])
        results.append(LayerResult(x.name, x.kind, x.op_type, cost, note=note))
    return NetworkResult(wl.name, hw, obj.to_dict(), mapper, seed, results, search_seconds,
                         len(todo), len(from_db), area["total"], layer_warnings)


def best_mapping(problem: Problem, arch: Architecture | str | Path, *, objective: Any = "edp",
                 mapper: str = "fast", seed: int = 0, db: DbSpec = True, **options: Any) -> LayerResult:
    """The best mapping of one layer, from the database when it was searched before."""
    from costmodel.arch import as_architecture
    from costmodel.problem import expect_problem

    problem, hw = expect_problem(problem), as_architecture(arch)
    s = search_for(problem, hw, objective, mapper, seed, options, (problem.describe(),))
    store = open_db(db)
    try:
        stored = _stored_answer(store, s, hw) if store is not None else None
        from_db = stored is not None
        if stored is None:
            stored = solve([s], hw, workers=1, progress=False)[s.key.digest]
            if store is not None and _storable(s):
                store.put(s.key, problem, stored)
    finally:
        if store is not None and not isinstance(db, MappingDB):
            store.close()
    r = _mac_result(problem.describe(), problem.kind, problem, hw, _evaluated(problem.describe(), s, hw, stored))
    r.from_db = from_db
    if not from_db:
        r.mappings_evaluated, r.search_seconds = stored.mappings_evaluated, stored.search_seconds
    return r
