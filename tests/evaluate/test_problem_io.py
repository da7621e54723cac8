"""Layer files: short and einsum forms, JSON and YAML, and errors that name the file."""

import json

import pytest

from costmodel.errors import UserError
from costmodel.problem import conv2d
from costmodel.problem_io import load_problem, save_problem


def test_short_form_yaml(tmp_path):
    f = tmp_path / "l.yaml"
    f.write_text("kind: conv2d\nc_in: 128\nc_out: 256\nh: 56\nw: 56\nkernel: 3\npadding: 1\n")
    p = load_problem(f)
    # (56 + 2 - 3)/1 + 1 = 56 output rows; 256*128*56*56*9 = 924,844,032 MACs
    assert p.sizes["P"] == 56 and p.macs == 924_844_032


def test_einsum_form_round_trip(tmp_path):
    p = conv2d(8, 16, 9, 9, kernel=3, stride=2, dilation=1, groups=2)
    for name in ("l.json", "l.yaml"):
        save_problem(p, tmp_path / name)
        assert load_problem(tmp_path / name) == p
    assert not list(tmp_path.glob(".*tmp"))  # no temp files left behind


def test_shipped_examples_load():
    from pathlib import Path

    from dse import api

    ex = Path(__file__).parents[2] / "examples"
    files = sorted((ex / "layers").glob("*.yaml"))
    assert files
    for f in files:
        assert load_problem(f).macs > 0
    # every example mapping validates against its layer and config (named in the file name)
    pairs = {"eyeriss_vgg16_conv5": ("eyeriss_timeloop_32nm", "vgg16_conv5"),
             "tpu_like_resnet50_conv3x3_128": ("tpu_like", "resnet50_conv3x3_128"),
             "tiny_small_matmul": ("tiny", "small_matmul")}
    assert {f.stem for f in (ex / "mappings").glob("*.yaml")} == set(pairs)
    for mapping, (hw, layer) in pairs.items():
        arch, prob = api.load_hw(hw), load_problem(ex / "layers" / f"{layer}.yaml")
        api.load_mapping(ex / "mappings" / f"{mapping}.yaml", prob, arch)


@pytest.mark.parametrize("text, match", [
    ("kind: conv2d\nc_in: [1\n", r"bad.yaml:\d+: YAML syntax error"),
    ("", "empty layer file"),
    ("kind: nope\n", "field 'kind'"),
    ("kind: conv2d\nc_in: 4\n", "bad arguments for conv2d"),
    ("- 1\n- 2\n", "expected a mapping"),
    # a field both at the top and under params (to_dict's form): which one wins would be a guess
    ("kind: matmul\nm: 10\nparams: {m: 64, k: 32, n: 48}\n",
     r"bad.yaml:3: field 'params.m': m is given twice, here and at the top level \(10\); give it once$"),
])
def test_bad_files_name_the_file(tmp_path, text, match):
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    with pytest.raises(UserError, match=match) as exc:
        load_problem(f)
    assert str(f) in str(exc.value)


def test_missing_and_bad_json(tmp_path):
    with pytest.raises(UserError, match=r"nope.yaml: cannot read file \(No such file"):
        load_problem(tmp_path / "nope.yaml")
    f = tmp_path / "bad.json"
    f.write_text(json.dumps({"kind": "matmul", "m": 2})[:-3])
    with pytest.raises(UserError, match=r"bad.json:1: invalid JSON"):
        load_problem(f)
