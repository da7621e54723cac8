"""`dse map` and `dse best-mapping` through a subprocess (keyword_spotting on the tiny config)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dse import workloads
from tests.network.helpers import REPO, run_dse
from tests.zoo.hook_count import count

# DESIGN.md section 4: keys reviews rely on
TOP_KEYS = {"energy_pj", "latency_cycles", "latency_s", "area_mm2", "power_mw", "macs", "utilization", "edp",
            "mappings_evaluated", "search_seconds", "layers", "from_db"}
LAYER_KEYS = {"name", "energy_pj", "latency_cycles", "latency_s", "utilization", "edp", "macs", "accesses",
              "energy_breakdown_pj", "mapping"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("map_cli")
    db = tmp / "m.sqlite"
    first = run_dse("map", "keyword_spotting", "--hw", "tiny", "--db", str(db), "--json", str(tmp / "out" / "a.json"),
                    cache=tmp)
    second = run_dse("map", "keyword_spotting", "--hw", "tiny", "--db", str(db), "--json", "-", cache=tmp)
    return tmp, first, second


def test_table_and_json_document(runs) -> None:
    tmp, first, _ = runs
    assert first.returncode == 0, first.stderr
    for text in ("node_Conv_102", "node_avg_pool2d", "totals", "mappings evaluated", "E share"):
        assert text in first.stdout
    doc = json.loads((tmp / "out" / "a.json").read_text())  # (its folder created)
    assert TOP_KEYS <= set(doc)
    assert doc["from_db"] == 0 and doc["searched"] == 3  # 8 conv/gemm layers, 3 distinct shapes
    macs = [x for x in doc["layers"] if x["kind"] == "mac"]
    assert len(macs) == 8
    for x in macs:
        assert LAYER_KEYS <= set(x)
        assert set(x["accesses"]["DRAM"]["W"]) >= {"reads", "writes", "fills"}
        assert [lv["level"] for lv in x["mapping"]["levels"]] == ["DRAM", "buffer", "rf"]
    assert doc["energy_pj"] == pytest.approx(sum(x["energy_pj"] for x in doc["layers"]))
    assert doc["latency_cycles"] == sum(x["latency_cycles"] for x in doc["layers"])
    # the zoo model's MACs, counted independently by forward hooks on the torch model
    hooked = count(*workloads.build("keyword_spotting"))
    assert doc["macs"] == sum(x.macs for x in hooked if x.kind != "LayerNorm")
    assert not list((tmp / "out").glob(".a.json.*"))  # no temp file left behind


def test_second_run_is_answered_from_the_database(runs) -> None:
    tmp, _first, second = runs
    assert second.returncode == 0, second.stderr
    doc = json.loads(second.stdout)  # --json -: stdout holds the document and nothing else
    a = json.loads((tmp / "out" / "a.json").read_text())
    assert doc["from_db"] == 3 and doc["searched"] == 0
    assert doc["search_seconds"] == 0.0 and doc["mappings_evaluated"] == 0
    assert [x["mapping"] for x in doc["layers"]] == [x["mapping"] for x in a["layers"]]
    assert doc["energy_pj"] == a["energy_pj"]


def test_best_mapping(tmp_path) -> None:
    layer = str(REPO / "examples/layers/small_matmul.yaml")
    r = run_dse("best-mapping", "--hw", "tiny", "--layer", layer, "--db", str(tmp_path / "b.sqlite"), "--json",
                cache=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["macs"] == 64 * 32 * 48 and doc["mappings_evaluated"] > 0 and not doc["from_db"]
    t = run_dse("best-mapping", "--hw", "tiny", "--layer", layer, "--db", str(tmp_path / "b.sqlite"), cache=tmp_path)
    assert t.returncode == 0, t.stderr
    assert "mac()" in t.stdout and "level: DRAM" in t.stdout and "from the mapping database" in t.stdout


def test_budget_and_victory_flags_reach_the_fast_mapper(tmp_path) -> None:
    layer = str(REPO / "examples/layers/small_matmul.yaml")

    def evaluated(*flags: str) -> int:
        r = run_dse("best-mapping", "--hw", "tiny", "--layer", layer, "--no-db", "--json", *flags, cache=tmp_path)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)["mappings_evaluated"]

    full = evaluated("--max-evaluations", "1500", "--victory", "1500")
    assert 0 < full <= 1500
    assert evaluated("--max-evaluations", "1500", "--victory", "30") < full  # stalls long before the budget


BAD = [
    (("map", "keyword_spotting", "--hw", "tiny", "--layer", "nope", "--no-db"), "no such layer"),
    (("map", "keyword_spotting", "--hw", "tiny", "--objective", "speed", "--no-db"), "objective"),
    (("map", "keyword_spotting", "--hw", "tiny", "--mapper", "magic", "--no-db"), "mapper"),
    # the unknown mapper is the mistake, not the budget given for it
    (("map", "keyword_spotting", "--hw", "tiny", "--mapper", "magic", "--max-evaluations", "9", "--no-db"),
     "mapper: expected one of ['fast', 'exhaustive'], got 'magic'"),
    (("map", "keyword_spotting", "--hw", "tiny", "--db", "x.sqlite", "--no-db"), "contradict"),
    (("map", "no_such_model", "--hw", "tiny"), "not a zoo model (zoo: hand_tracking, eye_segmentation, "),
    (("map", "keyword_spotting", "--hw", "tiny", "--mapper", "exhaustive", "--victory", "100", "--no-db"),
     "--victory: options of the fast mapper"),
    # a negative weight would search for the worst mapping; inf / nan make every score equal
    (("map", "keyword_spotting", "--hw", "tiny", "--objective", "energy:1,latency:-1", "--no-db"), "latency -1"),
    (("map", "keyword_spotting", "--hw", "tiny", "--objective", "energy:nan", "--no-db"), "energy nan"),
    (("map", "keyword_spotting", "--hw", "tiny", "--objective", "latency:1e400", "--no-db"), "latency inf"),
    (("map", "keyword_spotting", "--hw", "tiny", "--objective", "energy:1,energy:2", "--no-db"), "each named once"),
    # the --json file is checked before the search: a folder, or the model itself
    (("map", "keyword_spotting", "--hw", "tiny", "--json", ".", "--no-db"), ".: cannot write (is a folder)"),
    (("map", str(REPO / "pyproject.toml"), "--hw", "tiny", "--json", str(REPO / "pyproject.toml"), "--no-db"),
     "is also an input of this command"),
]


@pytest.mark.parametrize(("args", "why"), BAD)
def test_bad_input_exits_2_with_one_line(tmp_path, args, why) -> None:
    r = run_dse(*args, cache=tmp_path)
    assert r.returncode == 2, r.stderr
    assert why in r.stderr and r.stderr.strip().count("\n") == 0 and "Traceback" not in r.stderr


def test_json_out_may_not_be_the_config_or_the_database(tmp_path) -> None:
    hw, db = tmp_path / "hw.yaml", tmp_path / "maps.sqlite"
    hw.write_text((REPO / "hwconfigs/tiny.yaml").read_text())
    db.write_bytes(b"")
    for args in (("--hw", str(hw), "--no-db", "--json", str(hw)), ("--hw", "tiny", "--db", str(db), "--json", str(db))):
        r = run_dse("map", "keyword_spotting", *args, cache=tmp_path)
        assert r.returncode == 2 and "is also an input of this command" in r.stderr, r.stderr
    assert hw.read_text() == (REPO / "hwconfigs/tiny.yaml").read_text() and db.read_bytes() == b""
    new = tmp_path / "new.sqlite"  # a database the command would create, then replace by the JSON
    r = run_dse("map", "keyword_spotting", "--hw", "tiny", "--db", str(new), "--json", str(new), cache=tmp_path)
    assert r.returncode == 2 and "is also an input of this command" in r.stderr and not new.exists(), r.stderr


def _marked(marker: str) -> list[int]:
    """Processes whose environment holds ``marker`` (the command, its forkserver and workers)."""
    pids = []
    for env in Path("/proc").glob("[0-9]*/environ"):
        with contextlib.suppress(OSError):
            if marker.encode() in env.read_bytes():
                pids.append(int(env.parent.name))
    return pids


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads /proc")
@pytest.mark.parametrize(("signum", "line"), [(signal.SIGTERM, "terminated (SIGTERM)"),
                                              (signal.SIGINT, "interrupted (Ctrl-C)")])
def test_a_signal_stops_the_search_and_its_workers(tmp_path, signum, line) -> None:
    """`kill PID` (or `kill -INT PID`) during a two-worker search: exit 128 + the signal with one
    line, and no worker left running (they get no signal of their own; they used to outlive the
    command, idle, until killed). SIGINT's line was missing: typer exits 130 in silence."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)  # two 3x3 convs of ResNet-50's size: minutes of exhaustive search each
    weights = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
               for name, shape in (("w1", (64, 64, 3, 3)), ("w2", (128, 64, 3, 3)))]
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w1"], ["h"], pads=[1, 1, 1, 1]),
         helper.make_node("Conv", ["h", "w2"], ["y"], pads=[1, 1, 1, 1])], "two_convs",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 56, 56])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 128, 56, 56])], weights)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), tmp_path / "two.onnx")
    marker = f"accel-dse-sigterm-test-{os.getpid()}-{time.time_ns()}"
    proc = subprocess.Popen([sys.executable, "-c", "from dse.cli import main; main()", "map", "two.onnx",
                             "--hw", "tpu_like", "--no-db", "--workers", "2", "--mapper", "exhaustive"],
                            cwd=tmp_path, env={**os.environ, "ACCEL_DSE_TEST_MARKER": marker},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while len(_marked(marker)) < 5 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)  # until the workers run (command, resource tracker, forkserver, 2 workers)
        time.sleep(1)
        assert proc.poll() is None, "the search ended before the signal: the test proves nothing"
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signum and err.strip().endswith(f"{line}; finished work is kept, nothing "
                                                                    "half-written") and "Traceback" not in err, err
    deadline = time.monotonic() + 20
    while _marked(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _marked(marker) == []


def test_no_valid_mapping_names_the_buffer(tmp_path) -> None:
    hw = tmp_path / "small.yaml"
    # the rf (2 words, double-buffered: 1 usable) must keep all three tensors: no tile fits
    text = (REPO / "hwconfigs/tiny.yaml").read_text().replace("capacity: 16\n", "capacity: 2\n")
    hw.write_text(text + "constraints:\n  - {level: rf, keep: [I, W, O]}\n")
    layer = tmp_path / "l.yaml"
    layer.write_text("kind: conv2d\nc_in: 4\nc_out: 8\nh: 8\nw: 8\nkernel: 3\n")
    r = run_dse("best-mapping", "--hw", str(hw), "--layer", str(layer), "--no-db", cache=tmp_path)
    assert r.returncode == 2
    assert "level rf" in r.stderr and "words" in r.stderr and r.stderr.strip().count("\n") == 0


def test_contradictory_constraints(tmp_path) -> None:
    c = tmp_path / "c.yaml"
    c.write_text("- {level: buffer, keep: [W], bypass: [W]}\n")
    layer = str(REPO / "examples/layers/small_matmul.yaml")
    r = run_dse("best-mapping", "--hw", "tiny", "--layer", layer, "--constraints", str(c), "--no-db", cache=tmp_path)
    assert r.returncode == 2 and r.stderr.startswith("error:") and "W" in r.stderr, r.stderr


def test_seed_out_of_range_is_a_usage_error(tmp_path) -> None:
    layer = str(REPO / "examples/layers/small_matmul.yaml")
    r = run_dse("best-mapping", "--hw", "tiny", "--layer", layer, "--no-db", "--seed", "-1", cache=tmp_path)
    assert r.returncode == 2 and "--seed" in r.stderr and "Traceback" not in r.stderr


def test_a_budget_of_one_evaluation_gives_a_mapping(tmp_path) -> None:
    """The smallest budget the option takes evaluates one mapping and returns it (it had evaluated
    none and reported that no mapping was found within the budget)."""
    layer = str(REPO / "examples/layers/small_matmul.yaml")
    r = run_dse("best-mapping", "--hw", "tiny", "--layer", layer, "--no-db", "--max-evaluations", "1", cache=tmp_path)
    assert r.returncode == 0 and "search: 1 mapping evaluated in " in r.stdout, r.stderr


def test_import_warnings_are_one_line_each(tmp_path) -> None:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.ones((4, 8, 3, 3), np.float32), "w")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], name="c")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8, "H", "W"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    path = tmp_path / "dyn.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    r = run_dse("map", str(path), "--hw", "tiny", "--no-db", cache=tmp_path)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and "UserWarning" not in r.stderr, r.stderr
    assert lines[0].startswith("warning: ") and "symbolic input dims fixed to 1" in lines[0]
    assert lines[-1].startswith("error: ") and "node 'c' (Conv)" in lines[-1] and len(lines) == 2
    # a batch dim alone fixed to 1 maps; the warning is shown once and kept in --json's warnings (was [])
    g.input[0].type.tensor_type.shape.dim[2].dim_value = 6
    g.input[0].type.tensor_type.shape.dim[3].dim_value = 6
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    for args in ((), ("--json", str(tmp_path / "r.json"))):
        r = run_dse("map", str(path), "--hw", "tiny", "--no-db", *args, cache=tmp_path)
        assert r.returncode == 0 and r.stderr.count("symbolic input dims fixed to 1: x[0]=N") == 1, r.stderr
    assert json.loads((tmp_path / "r.json").read_text())["warnings"] == [f"{path}: symbolic input dims fixed to 1: x[0]=N"]


def test_allow_unsupported_maps_around_an_unknown_op(tmp_path) -> None:
    """The importer's hint names --allow-unsupported; `dse map` takes it (it used to say "No such
    option"): the op becomes a zero-cost host layer, with a warning."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("NonZero", ["x"], ["y"])], "nz",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.INT64, [2, None])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), tmp_path / "nz.onnx")
    r = run_dse("map", str(tmp_path / "nz.onnx"), "--hw", "tiny", "--no-db", cache=tmp_path)
    assert r.returncode == 2 and "(allow_unsupported, the CLI's --allow-unsupported, makes it a zero-cost host layer)" in r.stderr, r.stderr
    r = run_dse("map", str(tmp_path / "nz.onnx"), "--hw", "tiny", "--no-db", "--allow-unsupported", "--json", "-",
                cache=tmp_path)
    assert r.returncode == 0 and "NonZero_0') imported as a zero-cost host layer" in r.stderr, r.stderr
    assert [x["op_type"] for x in json.loads(r.stdout)["layers"]] == ["NonZero"]


def test_json_out_may_not_be_the_default_database_or_the_zoo_cache(tmp_path, monkeypatch) -> None:
    """Every later command failed on the JSON left in their place. (In this process, on a cache of its
    own: the check comes before the model is exported or searched.)"""
    from dse.workloads.cache import cached_path
    from tests.study.helpers import dse

    monkeypatch.setenv("ACCEL_DSE_CACHE", str(tmp_path))
    for out in (tmp_path / "mappings.sqlite", cached_path("keyword_spotting")):
        code, err = dse("map", "keyword_spotting", "--hw", "tiny", "--json", out)
        assert code == 2 and f"{out}: is also an input of this command" in err, err
        assert not out.exists()
