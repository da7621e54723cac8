"""`dse report`: one self-contained HTML page with every section and an embedded PNG per plot; the
PNG files next to it are real images of the documented size."""

from __future__ import annotations

import base64
import re
import struct
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from costmodel.errors import UserError
from dse.report import SECTIONS
from dse.report.analysis import chosen_trial, main_effects
from dse.report.plots import DPI, SIZE
from dse.study.runner import run_study
from tests.study.helpers import small_study, study_app

PLOTS = ("pareto", "energy", "latency", "roofline", "utilization", "area", "importance")


def _png_size(data: bytes) -> tuple[int, int]:
    """Width and height from the PNG header (signature, then the IHDR chunk)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("report")
    run_study(small_study(tmp, sampler="random", trials=8))
    out = tmp / "rep" / "report.html"
    r = CliRunner().invoke(study_app(), ["report", str(tmp / "out"), "-o", str(out), "--page",
                                         str(tmp / "rep" / "page.png")])
    assert r.exit_code == 0, r.output
    return out


def test_every_section_and_image(report: Path) -> None:
    html = report.read_text()
    want = (round(SIZE[0] * DPI), round(SIZE[1] * DPI))
    for sec in SECTIONS:
        m = re.search(rf'<section id="{sec}">(.*?)</section>', html, re.DOTALL)
        assert m, f"section {sec} missing"
        if sec in PLOTS:
            img = re.search(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', m.group(1))
            assert img, f"no embedded image in {sec}"
            data = base64.b64decode(img.group(1))
            assert _png_size(data) == want
            assert (report.parent / "report_files" / f"{sec}.png").read_bytes() == data
    assert "src=\"http" not in html and "<script" not in html  # self-contained
    ppa = re.search(r'<section id="ppa">(.*?)</section>', html, re.DOTALL).group(1)
    assert "<table" in ppa and "area_mm2" in ppa and "rows" in ppa


def test_svg_next_to_each_png(report: Path) -> None:
    """Every plot also as SVG: an <svg> document of the same 8 x 4.5 in (576 x 324 pt)."""
    import xml.etree.ElementTree as ET

    for name in PLOTS:
        root = ET.parse(report.parent / "report_files" / f"{name}.svg").getroot()
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
        assert (root.get("width"), root.get("height")) == (f"{SIZE[0] * 72:g}pt", f"{SIZE[1] * 72:g}pt")


def test_page_png_holds_every_section(report: Path) -> None:
    """--page: one PNG, two plots wide; its parser finds every section and exactly the report's images."""
    from dse.report.page import DPI as PAGE_DPI
    from dse.report.page import WIDTH_IN, parse_report

    width, height = _png_size((report.parent / "page.png").read_bytes())
    assert width == WIDTH_IN * PAGE_DPI and height > 4 * SIZE[1] * DPI  # 7 plots: 4 rows of 450 px at least
    title, sections = parse_report(report.read_text())
    assert title.startswith("Study report: ") and tuple(s.id for s in sections) == SECTIONS
    for s in sections:
        want = report.parent / "report_files" / f"{s.id}.png"
        assert (s.png == want.read_bytes()) if s.id in PLOTS else s.png is None
    ppa = next(s for s in sections if s.id == "ppa").table
    assert "rows" in ppa[0] and len(ppa) >= 2


def test_the_ppa_table_lists_every_pareto_design() -> None:
    """It stopped at 30 rows without a word (a 40-design front showed 30)."""
    from dse.report import ppa_table
    from dse.report.page import _strip

    n = 40
    front = pd.DataFrame({"trial": range(n), "rows": range(1, n + 1), "area_mm2": np.linspace(1, 2, n),
                          **{c: np.ones(n) for c in ("power_mw", "latency_ms", "energy_uj", "utilization")}})
    rows = re.findall(r"<tr>(.*?)</tr>", ppa_table(front, ["rows"], ["area_mm2"]), re.DOTALL)
    assert len(rows) == n + 1  # (and the header)
    assert [_strip(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", rows[-1])][:3] == ["39", "40", "2"]


def test_main_effects_hand_worked() -> None:
    """y = 10 ** (a_effect): knob a explains all of log-variance, knob b (balanced, no effect) none."""
    df = pd.DataFrame({"state": ["COMPLETE"] * 4, "a": [1, 1, 2, 2], "b": [1, 2, 1, 2],
                       "y": [10.0, 10.0, 1000.0, 1000.0]})
    imp = main_effects(df, ["a", "b"], ["y"])
    assert imp.loc["a", "y"] == pytest.approx(1.0) and imp.loc["b", "y"] == pytest.approx(0.0)


def test_chosen_trial_is_closest_to_ideal() -> None:
    # normalized: t0 (0, 1), t1 (0.1, 0.1), t2 (1, 0): t1 is nearest the ideal (0, 0)
    front = pd.DataFrame({"trial": [0, 1, 2], "e": [1.0, 1.1, 2.0], "l": [3.0, 1.2, 1.0]})
    assert chosen_trial(front, ["e", "l"], ["minimize", "minimize"]) == 1
    assert chosen_trial(front, ["e", "l"], ["maximize", "maximize"]) in (0, 2)


def test_report_of_one_map_result(tmp_path: Path) -> None:
    """`dse report MAP.json`: the per-layer sections of one design; the energy bars add up to the total."""
    import json

    from dse.network import map_model
    from dse.report import MAP_SECTIONS

    net = map_model("keyword_spotting", "tiny", db=False, progress=False, workers=1, max_evaluations=200)
    src = tmp_path / "map.json"
    src.write_text(json.dumps(net.to_dict()))
    from dse.study.design import layer_result

    for x in net.to_dict()["layers"]:  # the stacked parts of each bar add up to the layer's energy
        if x["energy_pj"]:
            parts = layer_result(x["name"], x, net.arch).energy_by_level_pj
            assert sum(parts.values()) == pytest.approx(x["energy_pj"], rel=1e-9)
    out = tmp_path / "one.html"
    # a study report written to the same name before: its Pareto and importance figures must not
    # stay beside this report, which has neither; a file of the user's stays
    (tmp_path / "one_files").mkdir()
    for name in ("pareto.png", "pareto.svg", "importance.png", "importance.svg", "energy.png", "notes.txt"):
        (tmp_path / "one_files" / name).write_bytes(b"old")
    r = CliRunner().invoke(study_app(), ["report", str(src), "-o", str(out)])
    assert r.exit_code == 0, r.output
    html = out.read_text()
    for sec in MAP_SECTIONS:
        assert f'<section id="{sec}">' in html
    assert '<section id="pareto">' not in html
    assert _png_size((tmp_path / "one_files" / "energy.png").read_bytes()) == (800, 450)
    assert sorted(p.name for p in (tmp_path / "one_files").iterdir()) == sorted(
        [f"{s}.{ext}" for s in ("energy", "latency", "roofline", "utilization", "area") for ext in ("png", "svg")]
        + ["notes.txt"])
    r = CliRunner().invoke(study_app(), ["report", str(src), "-o", str(out), "--hw", "tpu_like"])
    assert "different config" in str(r.exception)


@pytest.mark.parametrize(("counts", "labelled"), [((5,), 5), ((300, 163), 47)])
def test_layer_axis_labels_stay_readable(counts: tuple[int, ...], labelled: int) -> None:
    """Every layer gets a bar; a big network labels every k-th (k = ceil(n / 48)) and marks where each
    workload starts."""
    from types import SimpleNamespace

    from dse.report.plots import utilization

    layers = {f"w{j}": [SimpleNamespace(name=f"l{i}", utilization=0.5) for i in range(n)]
              for j, n in enumerate(counts)}
    ax = utilization(layers).axes[0]
    names = [t.get_text() for t in ax.get_xticklabels()]
    assert len(ax.patches) == sum(counts) and len(names) == labelled
    step = -(-sum(counts) // 48)
    flat = [f"{w}/{x.name}" if len(counts) > 1 else x.name for w, xs in layers.items() for x in xs]
    assert names == flat[::step]
    assert [t.get_text().strip() for t in ax.texts] == (list(layers) if len(counts) > 1 else [])


def test_rerun_is_byte_identical_and_reads_do_not_write(report: Path) -> None:
    """A review needs the same files from the same trials: the HTML's table id and the SVGs' clip
    ids are fixed. `dse report` and `dse results` only read the study: its journal is unchanged."""
    folder = report.parent.parent / "out"
    journal = (folder / "study.journal").read_bytes()
    again = report.parent.parent / "again" / "report.html"
    r = CliRunner().invoke(study_app(), ["report", str(folder), "-o", str(again)])
    assert r.exit_code == 0, r.output
    assert again.read_bytes() == report.read_bytes()
    for f in sorted((report.parent / "report_files").glob("*.svg")):
        assert (again.parent / "report_files" / f.name).read_bytes() == f.read_bytes(), f.name
    assert CliRunner().invoke(study_app(), ["results", str(folder)]).exit_code == 0
    assert (folder / "study.journal").read_bytes() == journal


def test_summary_names_models_mapper_and_objective(report: Path) -> None:
    html = report.read_text()
    assert "fast mapper, objective edp, budget" in html and "seed 0" in html


def test_report_of_layers_without_macs(tmp_path: Path) -> None:
    """A design of vector layers only (an Add): the roofline has no point to place and drew from an
    empty array (a ValueError traceback, with some figures already written); it shows the roof."""
    import json

    from dse.network import map_model

    net = map_model("keyword_spotting", "tiny", db=False, progress=False, workers=1, layer="node_add")
    assert all(x["macs"] == 0 for x in net.to_dict()["layers"])
    src = tmp_path / "vec.json"
    src.write_text(json.dumps(net.to_dict()))
    r = CliRunner().invoke(study_app(), ["report", str(src), "-o", str(tmp_path / "vec.html")])
    assert r.exit_code == 0, r.output
    assert '<section id="roofline">' in (tmp_path / "vec.html").read_text()
    assert _png_size((tmp_path / "vec_files" / "roofline.png").read_bytes()) == (800, 450)


def test_a_report_that_fails_half_way_leaves_the_old_one(tmp_path: Path, map_doc: dict,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The figures are written with the page, all at once: a failure at the third figure (or a
    kill) leaves the earlier report's page and figures as they were, not new ones beside old."""
    import json

    from dse.report import plots

    src, out = tmp_path / "map.json", tmp_path / "d.html"
    src.write_text(json.dumps(map_doc))
    assert CliRunner().invoke(study_app(), ["report", str(src), "-o", str(out)]).exit_code == 0
    before = {p.name: p.read_bytes() for p in [out, *(tmp_path / "d_files").iterdir()]}
    for p in [out, *(tmp_path / "d_files").iterdir()]:
        p.write_bytes(b"old " + p.name.encode())

    def broken(*_args: object) -> None:
        raise RuntimeError("drawing failed")

    monkeypatch.setattr(plots, "roofline", broken)
    r = CliRunner().invoke(study_app(), ["report", str(src), "-o", str(out)])
    assert isinstance(r.exception, RuntimeError)
    after = {p.name: p.read_bytes() for p in [out, *(tmp_path / "d_files").iterdir()]}
    assert after == {name: b"old " + name.encode() for name in before}


@pytest.fixture(scope="module")
def map_doc() -> dict:
    from dse.network import map_model

    return map_model("keyword_spotting", "tiny", db=False, progress=False, workers=1, max_evaluations=100).to_dict()


def _edit(doc: dict, path: tuple, value: object) -> dict:
    import copy

    doc = copy.deepcopy(doc)
    at = doc
    for key in path[:-1]:
        at = at[key]
    if value is KeyError:
        del at[path[-1]]
    else:
        at[path[-1]] = value
    return doc


@pytest.mark.parametrize(("edit", "why"), [
    ("[]", "expected a JSON object"),
    ("{", "JSONDecodeError"),
    ((("layers",), KeyError), "layers: missing"),  # the right config, the rest cut off
    ((("energy_pj",), "x"), "energy_pj: expected a finite number, got 'x'"),
    ((("energy_pj",), {"a": 1}), "energy_pj: expected a finite number, got {'a': 1}"),
    ((("layers", 0, "energy_pj"), "x"), "layers[0].energy_pj: expected a finite number, got 'x'"),
    ((("layers", 0, "utilization"), True), "layers[0].utilization: expected a finite number, got True"),
    ((("layers", 0, "macs"), float("nan")), "layers[0].macs: expected a finite number, got nan"),
    ((("layers", 0, "compute_cycles"), None), "layers[0].compute_cycles: expected a finite number, got None"),
    ((("layers", 0, "energy_breakdown_pj", "network"), 5), "network: expected a mapping of level: energy"),
    ((("model",), [1]), "model: a valid string"),
    ((("layers", 0, "accesses"), None), "layers[0].accesses: a valid dictionary, got None"),
    ((("layers", 0, "energy_breakdown_pj", "leakage", "mac"), "q"),
     "layers[0].energy_breakdown_pj: leakage.mac: expected a finite number, got 'q'"),
    ((("layers", 1, "macs"), KeyError), "layers[1].macs: missing"),
    ((("hw",), "nosuch"), "hw: "),  # the config the document names (no --hw)
    # (it had been blamed on another config, whose fingerprint "None" could never match)
    ((("config_fingerprint",), KeyError), "config_fingerprint: missing"),
    ((("config_fingerprint",), 5), "config_fingerprint: a valid string, got 5"),
])
def test_broken_map_document_is_one_error_and_no_output(tmp_path: Path, map_doc: dict, edit, why: str) -> None:
    """A map document cut or edited by hand: one message naming the part, exit 2, no output (these
    had been tracebacks from deep inside the report)."""
    import json

    src = tmp_path / "map.json"
    src.write_text(edit if isinstance(edit, str) else json.dumps(_edit(map_doc, *edit)))
    r = CliRunner().invoke(study_app(), ["report", str(src), "-o", str(tmp_path / "out" / "d.html")])
    assert isinstance(r.exception, UserError), r.output
    assert str(r.exception).startswith(f"{src}: ") and why in str(r.exception), str(r.exception)
    assert not (tmp_path / "out").exists()  # the probe of the output path left no folder behind


def test_metric_axis_labels_carry_units() -> None:
    from dse.report.plots import metric_label

    # (EDP is energy_pj x latency_s: dse.study.metrics)
    assert [metric_label(n) for n in ("power_mw", "latency_ms", "area_mm2", "edp", "kws.edp", "kws.latency_cycles")] == \
        ["power (mW)", "latency (ms)", "area (mm²)", "edp (pJ·s)", "kws.edp (pJ·s)", "kws.latency (cycles)"]


def test_report_of_a_study_whose_knobs_are_plain_numbers(tmp_path: Path) -> None:
    """A capacity and a clock given as bare numbers (words, Hz): the trials table holds them as
    numpy integers, which the report's design must take as the numbers they are (it was a bare
    AssertionError)."""
    from dse.report import write_report
    from dse.study.design import build_arch
    from dse.study.runner import read_study

    knobs = {"glb": {"path": "levels.buffer.capacity", "choices": [1024, 4096]},
             "clk": {"path": "clock", "choices": [200_000_000, 400_000_000]}}
    res = run_study(small_study(tmp_path, sampler="random", trials=3, knobs=knobs))
    out = write_report(res.out, tmp_path / "r.html")
    assert out.exists() and "Energy breakdown" in out.read_text()
    study, _ = read_study(res.out)
    arch = build_arch(study, {"glb": np.int64(4096), "clk": np.int64(400_000_000)})
    assert arch.level("buffer").capacity_words == 4096 and arch.clock_hz == 4e8


def test_page_says_how_many_table_rows_it_leaves_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The page shows the first TABLE_ROWS rows of a table and says how many more the HTML holds;
    a table with no rows (a study with no feasible design yet) reads "(none)"."""
    from matplotlib.figure import Figure

    from dse.report.html import Section, render
    from dse.report.page import TABLE_ROWS, render_page

    def table(n: int) -> str:
        return pd.DataFrame({"trial": range(n), "energy_pj": [1.5] * n}).to_html(index=False)

    said: list[str] = []
    real = Figure.text
    monkeypatch.setattr(Figure, "text", lambda self, x, y, s, *a, **k: said.append(s) or real(self, x, y, s, *a, **k))
    for n, note in ((TABLE_ROWS + 12, "... and 12 more rows in the HTML report"), (TABLE_ROWS, None), (0, None)):
        said.clear()
        html = tmp_path / f"r{n}.html"
        html.write_text(render("t", [Section("ppa", "PPA", table=table(n))]))
        render_page(html, tmp_path / f"p{n}.png")
        assert [s for s in said if "more rows" in s] == ([note] if note else [])
        assert ("(none)" in said) == (n == 0)


def test_report_refuses_to_overwrite_its_inputs(report: Path, tmp_path: Path) -> None:
    """The report may not replace a file of the study folder it reads, a map document it reads,
    nor itself by --page: each is exit 2 before anything is written."""
    folder = report.parent.parent / "out"
    before = {p: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    names = sorted(p.name for p in before)
    assert {"study.yaml", "study.journal"} <= set(names)
    for name in names:
        r = CliRunner().invoke(study_app(), ["report", str(folder), "-o", str(folder / name)])
        assert "is also an input of this command" in str(r.exception), name
        r = CliRunner().invoke(study_app(), ["report", str(folder), "-o", str(tmp_path / "r.html"),
                                             "--page", str(folder / name)])
        assert "is also an input of this command" in str(r.exception), name
    assert {p: p.read_bytes() for p in folder.iterdir() if p.is_file()} == before
    r = CliRunner().invoke(study_app(), ["report", str(folder), "-o", str(tmp_path / "r.html"),
                                         "--page", str(tmp_path / "r.html")])
    assert "the same file as the report" in str(r.exception)
    r = CliRunner().invoke(study_app(), ["report", str(tmp_path / "nope.json"), "-o", str(tmp_path / "r.html")])
    assert "nope.json: no such file or folder" in str(r.exception)
    doc = tmp_path / "map.json"
    doc.write_text("{}")
    r = CliRunner().invoke(study_app(), ["report", str(doc), "-o", str(doc)])
    assert "is also an input of this command" in str(r.exception) and doc.read_text() == "{}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["map.json"]


def test_report_refuses_to_overwrite_the_files_the_study_reads(tmp_path: Path) -> None:
    """Beyond the folder: the journal kept elsewhere (--storage) and the hardware template."""
    from costmodel.arch import load_architecture

    hw = tmp_path / "myhw.yaml"
    hw.write_text(Path(load_architecture("tiny").source).read_text())
    journal = tmp_path / "ext.journal"
    run_study(small_study(tmp_path, sampler="random", trials=2, hardware=str(hw)), storage=str(journal))
    kept = {p: p.read_bytes() for p in (hw, journal)}
    for out, extra in ((hw, []), (journal, ["--storage", str(journal)]), (journal, [])):  # (the folder remembers it)
        r = CliRunner().invoke(study_app(), ["report", str(tmp_path / "out"), "-o", str(out), *extra])
        assert "is also an input of this command" in str(r.exception), (out, extra, r.output)
    assert {p: p.read_bytes() for p in kept} == kept


def test_names_are_shown_as_written(tmp_path: Path, map_doc: dict) -> None:
    """Layer and model names reach matplotlib and rich as text: "conv$1$" had been read as math (a
    ParseException traceback), "net[/v2]" as markup (a MarkupError)."""
    import json

    doc = _edit(_edit(map_doc, ("model",), "net[/v2] $x$"), ("layers", 0, "name"), "conv$$1[/]")
    src = tmp_path / "map.json"
    src.write_text(json.dumps(doc))
    r = CliRunner().invoke(study_app(), ["report", str(src), "-o", str(tmp_path / "d.html"),
                                         "--page", str(tmp_path / "d.png")])
    assert r.exit_code == 0, r.output
    assert "Design report: net[/v2] $x$ on tiny" in (tmp_path / "d.html").read_text()
    assert "conv$$1[/]" in (tmp_path / "d_files" / "energy.svg").read_text()


def test_a_read_only_study_folder_can_be_read(report: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An archived study (a read-only mount, simulated: every write into the folder fails as there):
    `dse results` and `dse report` only read it. optuna's journal backend had opened the journal
    for appending and locked it with a link beside it: a traceback, or "cannot write"."""
    import builtins
    import errno
    import os
    import shutil

    from dse.report import write_report
    from dse.study.results import trials_table
    from dse.study.runner import read_study

    folder = tmp_path / "archived"
    shutil.copytree(report.parent.parent / "out", folder)
    real_open, real_symlink = builtins.open, os.symlink

    def read_only(path: object) -> None:
        if str(path).startswith(str(folder)):
            raise OSError(errno.EROFS, "Read-only file system", str(path))

    def guarded_open(file, mode="r", *args, **kwargs):
        if any(c in mode for c in "wax+"):
            read_only(file)
        return real_open(file, mode, *args, **kwargs)

    def guarded_symlink(src, dst, *args, **kwargs):
        read_only(dst)
        return real_symlink(src, dst, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", guarded_open)
    monkeypatch.setattr(os, "symlink", guarded_symlink)
    study, ost = read_study(folder)
    assert len(trials_table(study, ost)) > 0
    assert write_report(folder, tmp_path / "r.html").exists()


def test_a_failed_write_leaves_no_empty_figures_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A full disk while writing the report: the error, and no empty <stem>_files/ folder left (a
    folder that was there before stays)."""
    import dse.report as report_mod

    def full(files: dict) -> None:
        raise UserError("no space left on device")

    monkeypatch.setattr(report_mod, "atomic_write_all", full)
    figures = report_mod.Figures(tmp_path / "rep.html")
    with pytest.raises(UserError):
        figures.write("<html></html>", SECTIONS)
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "rep_files").mkdir()
    with pytest.raises(UserError):
        figures.write("<html></html>", SECTIONS)
    assert [p.name for p in tmp_path.iterdir()] == ["rep_files"]


def test_the_report_functions_refuse_to_overwrite_their_inputs(report: Path, tmp_path: Path) -> None:
    """The Python API checks what the CLI checks: `write_report(dir, dir/"study.journal")` had
    replaced the journal (every trial) with the HTML page."""
    import json

    from dse.report import write_map_report, write_report
    from dse.report.page import render_page

    folder = report.parent.parent / "out"
    kept = {p: p.read_bytes() for p in [*folder.iterdir(), report] if p.is_file()}
    for name in ("study.journal", "study.yaml"):
        with pytest.raises(UserError, match="is also an input of this command"):
            write_report(folder, folder / name)
    with pytest.raises(UserError, match="ends with '/', a folder"):
        write_report(folder, str(tmp_path / "newdir") + "/")
    with pytest.raises(TypeError, match="output: expected a file path"):
        write_report(folder, 5)
    doc = tmp_path / "m.json"
    doc.write_text(json.dumps({"hw": "tiny"}))
    with pytest.raises(UserError, match="is also an input of this command"):
        write_map_report(doc, doc)
    with pytest.raises(UserError, match="the same file as the report"):
        render_page(report, report)
    with pytest.raises(UserError, match="inside the report's figures folder"):
        render_page(report, report.parent / "report_files" / "pareto.png")
    with pytest.raises(UserError, match="not a page written by `dse report`"):
        render_page(folder / "study.yaml", tmp_path / "p.png")
    with pytest.raises(UserError, match="nope.html: cannot read the report"):
        render_page(tmp_path / "nope.html", tmp_path / "p.png")
    assert {p: p.read_bytes() for p in kept} == kept and sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]


def test_the_page_may_not_replace_a_figure_of_the_report(report: Path) -> None:
    figure = report.parent / "report_files" / "pareto.png"
    before = figure.read_bytes()
    r = CliRunner().invoke(study_app(), ["report", str(report.parent.parent / "out"), "-o", str(report),
                                         "--page", str(figure)])
    assert "inside the report's figures folder" in str(r.exception) and figure.read_bytes() == before


def test_the_roofline_ticks_are_plain_text(report: Path) -> None:
    """The report draws text as written (no mathtext), so matplotlib's log ticks read
    `$\\mathdefault{10^{2}}$`; the SVG keeps each label as text."""
    svg = (report.parent / "report_files" / "roofline.svg").read_text()
    assert "mathdefault" not in svg and "$" not in svg
    from dse.report.plots import _decade

    assert [_decade(x) for x in (1e-3, 0.1, 1, 10, 100, 1e6, 30)] == ["10⁻³", "10⁻¹", "1", "10", "10²", "10⁶", "30"]


def test_the_ppa_table_escapes_the_users_text() -> None:
    from dse.report import ppa_table

    front = pd.DataFrame({"trial": [0], "buf": ["<script>alert(1)</script>&b"], "area_mm2": [1.0],
                          **{c: [1.0] for c in ("power_mw", "latency_ms", "energy_uj", "utilization")}})
    table = ppa_table(front, ["buf"], ["area_mm2"])
    assert "<script>" not in table and "&lt;script&gt;alert(1)&lt;/script&gt;&amp;b" in table


def test_knob_labels_write_booleans_as_the_summary_does() -> None:
    from dse.report.plots import knob_label

    row = pd.Series({"dbuf": np.bool_(True), "b": False, "kib": np.int64(64), "f": 0.25, "name": "x"})
    assert knob_label(row, list(row.index)) == "dbuf=True, b=False, kib=64, f=0.25, name=x"


@pytest.mark.parametrize("directions", [("minimize", "minimize"), ("maximize", "minimize"),
                                        ("minimize", "maximize"), ("maximize", "maximize")])
def test_the_pareto_staircase_passes_only_where_a_front_design_dominates(directions) -> None:
    """Each corner of the drawn step line is attained: some front design is at least as good on
    both objectives (for a maximized x the line had cut through (0.45, 1.0), which no design reaches)."""
    from matplotlib import cbook

    from dse.report.plots import pareto_front

    sign = [-1 if d == "maximize" else 1 for d in directions]
    xs = np.array([0.2, 0.5, 0.9])  # a front for each pair of directions: y follows x or opposes it
    ys = np.array([1.0, 2.0, 4.0]) if sign[0] != sign[1] else np.array([4.0, 2.0, 1.0])
    front = pd.DataFrame({"trial": range(3), "k": range(3), "x": xs, "y": ys, "area_mm2": 1.0})
    table = front.assign(state="COMPLETE", feasible=True)
    fig = pareto_front(table, front, ["x", "y"], ["k"], list(directions))
    (line,) = [ln for ln in fig.axes[0].get_lines() if ln.get_label() == "Pareto front"]
    step = {"steps-pre": cbook.pts_to_prestep, "steps-post": cbook.pts_to_poststep}[line.get_drawstyle()]
    for cx, cy in zip(*step(*line.get_data()), strict=True):
        assert any(sign[0] * x <= sign[0] * cx and sign[1] * y <= sign[1] * cy for x, y in zip(xs, ys, strict=True)), (cx, cy)


def test_results_json_keeps_full_precision(report: Path) -> None:
    """pandas' to_json keeps 10 decimals: 1.5707008940823217e-05 came out 1.5707e-05."""
    import json

    from dse.study.results import trials_table
    from dse.study.runner import read_study

    folder = report.parent.parent / "out"
    r = CliRunner().invoke(study_app(), ["results", str(folder), "--json"])
    assert r.exit_code == 0, r.output
    study, ost = read_study(folder)
    table = trials_table(study, ost).set_index("trial")
    got = json.loads(r.stdout)["pareto"]
    assert got and all(row["latency_ms"] == table.loc[row["trial"], "latency_ms"] and
                       row["energy_pj"] == table.loc[row["trial"], "energy_pj"] for row in got)


def test_main_effects_of_a_knob_drawn_from_a_range() -> None:
    """Each trial its own value of a range knob: one group per value had given it (and a column of
    pure noise) a share of 1.0 of every objective, while a boolean knob explained 99 %."""
    rng = np.random.default_rng(7)
    n = 60
    dbuf = rng.integers(0, 2, n).astype(bool)
    clk = rng.uniform(100.0, 500.0, n)
    df = pd.DataFrame({"state": "COMPLETE", "dbuf": dbuf, "clk": clk, "noise": rng.uniform(0, 1, n),
                       "energy": np.exp(3.0 * dbuf + rng.normal(0, 0.1, n)),  # dbuf alone
                       "latency": 1e6 / clk * np.exp(rng.normal(0, 0.01, n))})  # clk alone
    imp = main_effects(df, ["dbuf", "clk", "noise"], ["energy", "latency"])
    assert imp.loc["dbuf", "energy"] > 0.9 and imp.loc["clk", "latency"] > 0.9
    assert imp.loc["clk", "energy"] < 0.15 and imp.loc["noise", "energy"] < 0.15 and imp.loc["noise", "latency"] < 0.15
    assert imp.loc["dbuf", "latency"] < 0.15


def test_main_effects_with_too_few_trials_per_group_are_unknown() -> None:
    df = pd.DataFrame({"state": "COMPLETE", "k": ["a", "b", "c"], "y": [1.0, 2.0, 4.0]})
    assert np.isnan(main_effects(df, ["k"], ["y"]).loc["k", "y"])
