"""Wrong arguments at the Python API: an error that names the argument and what was expected (a
TypeError for a wrong kind of object, a UserError or IndexError for a bad value), never an
AttributeError from deep inside or a file created by accident; and a config may be named where an
Architecture is expected."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from costmodel.arch import load_architecture
from costmodel.errors import UserError
from costmodel.evaluate import evaluate, evaluate_batch
from costmodel.problem import matmul
from costmodel.random_mappings import random_mappings
from dse.mappers import map_layer
from dse.network import best_mapping, map_model

ARCH = load_architecture("tiny")
LAYER = matmul(8, 8, 8)
BATCH = random_mappings(LAYER, ARCH, 4, seed=1)
MAPPING = BATCH.mapping(0, LAYER)


def _api():
    from dse import api

    return api


@pytest.mark.parametrize(("call", "names"), [
    (lambda: evaluate(LAYER, ARCH, MAPPING.to_dict(ARCH)), "mapping: expected a Mapping"),
    (lambda: evaluate(LAYER.to_dict(), ARCH, MAPPING), "problem: expected a costmodel.problem.Problem"),
    (lambda: evaluate_batch(LAYER, ARCH, [MAPPING]), "batch: expected a MappingBatch"),
    (lambda: evaluate_batch(LAYER, ARCH, MAPPING), "batch: expected a MappingBatch"),
    (lambda: random_mappings(LAYER, 3, 2), "arch: expected an Architecture"),
    (lambda: map_layer("matmul", ARCH), "problem: expected"),
    (lambda: map_model(LAYER, ARCH, db=False), "workload: expected a Workload"),
    (lambda: best_mapping(LAYER, ARCH, db=1), "db: expected True, False, a path or a MappingDB"),
    (lambda: load_architecture(None), "a hardware config: expected a path"),
    # the dse.api loaders (had been pathlib's TypeError, or an AttributeError from inside)
    (lambda: _api().load_layer(None), "path: expected a file path or name"),
    (lambda: _api().load_workload(42), "model: expected a file path or name"),
    (lambda: _api().compile_model(None, "tpu_like"), "model: expected a file path or name"),
    (lambda: _api().load_mapping("m.yaml", None, ARCH), "problem: expected a costmodel.problem.Problem"),
    (lambda: _api().load_mapping("m.yaml", ARCH, LAYER), "problem: expected a costmodel.problem.Problem"),
    (lambda: _api().load_mapping("m.yaml", LAYER, 3), "arch: expected an Architecture"),
    (lambda: _api().simulate(None, {}), "binary: expected a file path or name"),
    (lambda: evaluate_batch(LAYER, ARCH, BATCH, check="no"), "check must be True or False"),
    (lambda: __import__("dse.study", fromlist=["run_study"]).run_study(None), "load_study: expected the study file"),
])
def test_wrong_kind_of_object_is_a_type_error_naming_the_argument(call, names):
    with pytest.raises(TypeError, match=names):
        call()


def test_an_empty_path_is_a_user_error() -> None:
    """The right type with no value: a user's mistake (`dse evaluate --hw ""`), exit 2 on the CLI."""
    with pytest.raises(UserError, match="^hw: empty; expected a file path or name$"):
        _api().load_hw("")
    out = subprocess.run([sys.executable, "-c", "from dse.cli import main; main()", "evaluate", "--hw", "",
                          "--layer", "l.yaml", "--mapping", "m.yaml"], capture_output=True, text=True, timeout=120,
                         check=False)
    assert (out.returncode, out.stderr) == (2, "error: hw: empty; expected a file path or name\n")


def test_a_config_name_serves_as_the_architecture():
    """As map_model and best_mapping already took it: evaluate, evaluate_batch, random_mappings and
    map_layer give the same numbers for "tiny" as for the loaded config."""
    assert evaluate(LAYER, "tiny", MAPPING).energy_pj == evaluate(LAYER, ARCH, MAPPING).energy_pj
    assert (evaluate_batch(LAYER, "tiny", BATCH).energy_pj == evaluate_batch(LAYER, ARCH, BATCH).energy_pj).all()
    assert random_mappings(LAYER, "tiny", 4, seed=1).mapping(2, LAYER) == BATCH.mapping(2, LAYER)
    a = map_layer(LAYER, "tiny", max_evaluations=200)
    assert a.mapping == map_layer(LAYER, ARCH, max_evaluations=200).mapping


def test_row_of_a_batch_checks_its_index_and_area():
    ev = evaluate_batch(LAYER, ARCH, BATCH)
    from costmodel.area import area_breakdown

    area = dict(area_breakdown(ARCH))
    assert ev.row(-1, area).energy_pj == ev.energy_pj[3]
    for i in (4, -5, 1.0, True):
        with pytest.raises(IndexError, match="the batch has 4 mappings"):
            ev.row(i, area)
    with pytest.raises(ValueError, match="area_breakdown"):
        ev.row(0, {})


def test_run_study_checks_trials_and_workers(tmp_path: Path):
    from dse.study.runner import run_study
    from tests.study.helpers import small_study

    path = small_study(tmp_path, trials=2)
    for kw in ({"trials": -1}, {"trials": 0}, {"trials": 1.5}, {"trials": "2"}, {"workers": 0}, {"workers": "2"}):
        with pytest.raises(UserError, match=f"{next(iter(kw))}: expected a positive integer"):
            run_study(path, **kw)
    assert not (tmp_path / "out").exists()


def test_map_document_without_costed_layers(tmp_path: Path):
    from dse.report import write_map_report

    doc = {"hw": "tiny", "layers": [], "energy_pj": 0, "latency_s": 0, "power_mw": 0, "area_mm2": 0,
           "utilization": 0, "config_fingerprint": ARCH.fingerprint()}
    src = tmp_path / "m.json"
    src.write_text(json.dumps(doc))
    with pytest.raises(UserError, match="holds no layer with energy or latency"):
        write_map_report(src, tmp_path / "r.html")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]


def test_mapping_of_another_layer_or_config_is_refused(tmp_path: Path):
    from costmodel.mapping import load_mapping
    from costmodel.problem import conv2d

    conv_like = random_mappings(conv2d(4, 4, 4, 4, kernel=3), ARCH, 1, seed=1)  # 8 dims, not 4
    with pytest.raises(ValueError, match="the batch has 8 dims and 3 tensors"):
        conv_like.mapping(0, LAYER)
    with pytest.raises(ValueError, match="has 3 levels, architecture tpu_like has 4"):
        MAPPING.to_dict(load_architecture("tpu_like"))
    with pytest.raises(UserError, match="factors multiply to"):
        MAPPING.loop_nest(matmul(16, 8, 8), ARCH)
    saved = MAPPING.save(tmp_path / "new" / "m.yaml", ARCH)  # a missing folder is created
    assert load_mapping(saved, LAYER, ARCH) == MAPPING
    with pytest.raises(UserError, match="cannot write"):
        MAPPING.save(tmp_path / "new", ARCH)  # a folder


def test_flags_of_the_wrong_kind(tmp_path: Path):
    from dse import api

    with pytest.raises(ValueError, match=r"unknown systolic mode 'bogus' \(expected one of \['overlapped', 'scalesim'\]\)"):
        evaluate_batch(LAYER, ARCH, BATCH, systolic_mode="bogus")  # tiny is no systolic array: still a typo
    # a number given as text is refused, as run_study's trials are (it had been coerced)
    for option in ({"max_evaluations": "10"}, {"victory": True}, {"time_limit_s": "1"}):
        with pytest.raises(UserError, match=f"mapper option '{next(iter(option))}' = .*: expected a number, got"):
            map_layer(LAYER, ARCH, **option)
    with pytest.raises(TypeError, match="timing must be True or False"):
        api.simulate(tmp_path / "x.axb", {}, timing="no")


@pytest.mark.parametrize(("option", "why"), [({"bypass_p": None}, "bypass_p must be a probability"),
                                             ({"seed": -1}, "seed must be an integer >= 0"),
                                             ({"max_rounds": None}, "max_rounds must be an integer >= 1")])
def test_random_mappings_names_its_bad_option(option, why):
    with pytest.raises(ValueError, match=why):
        random_mappings(LAYER, ARCH, 4, **option)


def test_a_folder_named_like_a_zoo_model_does_not_hide_it(tmp_path, monkeypatch):
    """`dse inspect keyword_spotting` in a folder holding a keyword_spotting/ folder said "a folder, not an
    ONNX file"; a folder with any other name still gets that message."""
    from dse import api, workloads

    monkeypatch.chdir(tmp_path)
    (tmp_path / "keyword_spotting").mkdir()
    monkeypatch.setattr(workloads, "load", lambda name: f"zoo:{name}")
    assert api.load_workload("keyword_spotting") == "zoo:keyword_spotting"
    (tmp_path / "other").mkdir()
    with pytest.raises(UserError, match="other: a folder, not an ONNX file"):
        api.load_workload("other")


@pytest.mark.parametrize("args", [
    ("compile", "keyword_spotting", "--hw", "tpu_like", "-o", "build/"),
    ("zoo", "export", "keyword_spotting", "-o", "out/"),
    ("map", "keyword_spotting", "--hw", "tiny", "--json", "res/"),
    ("map", "keyword_spotting", "--hw", "tiny", "--db", "cache/"),
    ("disasm", "p.axb", "-o", "text/"),
    ("report", "STUDY", "-o", "site/"),
    ("report", "STUDY", "--page", "pngs/"),
])
def test_an_output_file_path_naming_a_folder_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        args: tuple) -> None:
    """pathlib drops a trailing '/': `dse compile -o build/` wrote a file named build (and
    build.q.onnx, build.map.json beside it). Exit 2 before any work, nothing written."""
    from tests.study.helpers import dse, small_study

    study = small_study(tmp_path, trials=1)
    monkeypatch.chdir(tmp_path)
    before = sorted(tmp_path.iterdir())
    code, err = dse(*(str(study) if a == "STUDY" else a for a in args))
    text = " ".join(err.replace("│", " ").split())  # (typer's usage box wraps the line)
    assert code == 2 and "ends with '/', a folder; expected a file path" in text and "Traceback" not in err, err
    assert sorted(tmp_path.iterdir()) == before


@pytest.mark.parametrize("args", [
    ("compile", "", "--hw", "tpu_like", "-o", "m.axb"),
    ("compile", " ", "--hw", "tpu_like", "-o", "m.axb"),
    ("map", " ", "--hw", "tiny"),
    ("inspect", ""),
])
def test_an_empty_model_argument_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple) -> None:
    """The model is a file or a zoo name (a str, so the path parser does not see it): `dse compile ""`
    read "" as the current folder ("cannot load the ONNX model (Is a directory)")."""
    from tests.study.helpers import dse

    monkeypatch.chdir(tmp_path)
    assert dse(*args) == (2, "error: model: empty; expected a file path or name\n")
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("args", [
    ("sweep", ""),
    ("sweep", "STUDY", "-o", ""),
    ("results", " "),
    ("report", "STUDY", "--output="),
    ("compile", "keyword_spotting", "--hw", "tpu_like", "-o", ""),
    ("evaluate", "--hw", "tiny", "--layer", "", "--mapping", "m.yaml"),
    ("map", "keyword_spotting", "--hw", "tiny", "--db", ""),
    ("disasm", ""),
    ("zoo", "export", "keyword_spotting", "-o", ""),
])
def test_an_empty_path_parameter_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple) -> None:
    """Every path parameter: "" would be read as the current folder (a sweep wrote its files there,
    `dse compile -o ""` failed with a traceback). Exit 2, the parameter named, nothing written."""
    from tests.study.helpers import dse, small_study

    study = small_study(tmp_path, trials=1)
    monkeypatch.chdir(tmp_path)
    before = sorted(tmp_path.iterdir())
    code, err = dse(*(str(study) if a == "STUDY" else a for a in args))
    assert code == 2 and "empty; expected a path" in err and "Traceback" not in err, err
    assert sorted(tmp_path.iterdir()) == before


def _commands(command, path=()):
    """(argv prefix, click command) of every command and group under ``command``."""
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, (*path, name))


def test_help_shows_no_type_for_a_flag_and_a_lower_case_one_for_a_path_option() -> None:
    """typer's help gave every flag the type `<bool>` (`--json <bool>` reads as `--json true`,
    which is refused) and a path option that of its class, `<Path>`."""
    import typer
    from typer.testing import CliRunner

    from dse.cli import app

    seen_flags = 0
    for path, command in _commands(typer.main.get_command(app)):
        out = CliRunner().invoke(app, [*path, "--help"], terminal_width=200)
        assert out.exit_code == 0, out.output
        rows = [line for line in out.output.splitlines() if "--" in line]
        for param in command.params:
            names = [n for n in param.opts if n.startswith("--")]
            if not names:
                continue
            row = next(r for r in rows if f" {names[0]} " in r or f",{names[0]} " in r)
            if getattr(param, "is_flag", False):
                seen_flags += 1
                assert "<" not in row, (path, row)
            assert "<Path>" not in row, (path, row)
        assert "<bool>" not in out.output, path  # (--help itself too)
    assert seen_flags >= 10
