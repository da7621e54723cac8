"""A mistake in a layer file is one UserError line naming the file, the field as written and what was
expected; never a traceback, a raw Python exception text or a silently accepted value."""

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from costmodel.arch import load_architecture
from costmodel.errors import UserError
from costmodel.mapping import FACTOR_DTYPE, MappingBatch
from costmodel.problem import MAX_COUNT, MAX_DIM, conv1d, conv2d, matmul
from costmodel.problem_io import load_problem, save_problem

REPO = Path(__file__).resolve().parents[2]
MATMUL = "kind: matmul\nm: 64\nk: 32\nn: 48\n"
CONV = "kind: conv2d\nc_in: 8\nc_out: 16\nh: 8\nw: 8\n"
CONV1D = "kind: conv1d\nc_in: 8\nc_out: 16\nlength: 8\n"

# (layer file text, what the message must contain besides the file name)
CASES = {
    "stride 0": (CONV + "stride: 0\n", ["bad_layer.yaml:6: ", "field 'stride'", "positive integer"]),
    "bits word": (MATMUL + "bits: eight\n", ["bad_layer.yaml:5: ", "field 'bits'", "'eight'"]),
    "bits pair": (MATMUL + "bits: [8, 8]\n", ["field 'bits'", "list of 3"]),
    "bits 0": (MATMUL + "bits: 0\n", ["field 'bits'", "got 0"]),
    "bits -8": (MATMUL + "bits: -8\n", ["field 'bits'", "got -8"]),
    "conv1d padding [1]": (CONV1D + "padding: [1]\n", ["field 'padding'", "integer >= 0 or a list of 2"]),
    "padding -1": (CONV + "padding: -1\n", ["field 'padding'", "integer >= 0"]),
    "params 5": (MATMUL + "params: 5\n", ["field 'params'", "expected a mapping"]),
    "params 0": (MATMUL + "params: 0\n", ["field 'params'", "got 0"]),
    # a dimension past 2**31 - 1 is named before the MAC count it also makes too large
    "m 2**63": (f"kind: matmul\nm: {2**63}\nk: 32\nn: 48\n", ["dimension M = 9,223,372,036,854,775,808 exceeds"]),
    "m=k=n=2**20": (f"kind: matmul\nm: {2**20}\nk: {2**20}\nn: {2**20}\n", ["MACs exceed 2**48", "int64"]),
    "huge stride": (f"kind: conv2d\nc_in: 4\nc_out: 4\nh: {2**60}\nw: {2**60}\nkernel: 1\nstride: {2**59}\n",
                    ["elements of tensor I exceed 2**48"]),
    "m 2**31": (f"kind: matmul\nm: {2**31}\nk: 1\nn: 1\n", ["dimension M = 2,147,483,648 exceeds 2,147,483,647"]),
    "m 0": ("kind: matmul\nm: 0\nk: 32\nn: 48\n", ["bad_layer.yaml:2: ", "field 'm'", "got 0"]),
    "m true": ("kind: matmul\nm: true\nk: 32\nn: 48\n", ["field 'm'", "got True"]),
    "groups 0": (CONV + "groups: 0\n", ["field 'groups'", "positive integer"]),
    "groups 3": (CONV + "groups: 3\n", ["field 'groups'", "must divide c_in=8 and c_out=16"]),
    "h 0": ("kind: conv2d\nc_in: 8\nc_out: 8\nh: 0\nw: 8\n", ["field 'h'", "got 0"]),
    "h too small": ("kind: conv2d\nc_in: 8\nc_out: 8\nh: 2\nw: 8\n", ["field 'kernel'", "does not fit input h=2"]),
    "h 8.5": ("kind: conv2d\nc_in: 8\nc_out: 8\nh: 8.5\nw: 8\n", ["field 'h'", "got 8.5"]),
    "kernel word": (CONV + "kernel: three\n", ["field 'kernel'", "'three'"]),
    "c_out -8": ("kind: conv2d\nc_in: 8\nc_out: -8\nh: 8\nw: 8\n", ["field 'c_out'", "got -8"]),
    "fc in_features 0": ("kind: fc\nin_features: 0\nout_features: 8\n", ["field 'in_features'", "got 0"]),
    "conv1d kernel too long": (CONV1D + "kernel: 20\n", ["field 'kernel'", "does not fit input length=8"]),
    "depthwise channels 0": ("kind: depthwise_conv2d\nchannels: 0\nh: 8\nw: 8\n", ["field 'channels'"]),
    "typo": (MATMUL + "mm: 64\n", ["unknown field 'mm'", "expected one of ['m', 'k', 'n', 'batch', 'bits'"]),
    "fc typo": ("kind: fc\nin_features: 4\nout_features: 8\nbatch: 2\n", ["unknown field 'batch'", "'rows'"]),
    "typo under params": ("kind: matmul\nparams: {m: 4, k: 4, n: 4, stride: 2}\n", ["unknown field 'params.stride'"]),
    "bad under params": ("kind: matmul\nparams:\n  m: 4\n  k: 0\n  n: 4\n", ["bad_layer.yaml:4: ", "field 'k'"]),
    "missing": ("# a comment\nkind: conv2d\nc_in: 4\n", ["bad_layer.yaml:2: ", "missing field(s) c_out, h, w"]),
    "no kind": ("# a comment\nm: 4\nk: 4\nn: 4\n", ["bad_layer.yaml:2: field 'kind' is missing; expected one of"]),
    "kind list": ("kind: [conv2d]\n", ["field 'kind'", "expected one of"]),
    "psum_bits": (MATMUL + "psum_bits: x\n", ["field 'psum_bits'", "'x'"]),
    "wrapped": ("layer:\n  kind: matmul\n  m: 4\n  k: 0\n  n: 4\n", ["bad_layer.yaml:4: ", "field 'k'"]),
}


def _write(tmp_path: Path, text: str, name: str = "bad_layer.yaml") -> Path:
    f = tmp_path / name
    f.write_text(text)
    return f


@pytest.mark.parametrize("text, parts", CASES.values(), ids=CASES.keys())
def test_loader_names_file_field_and_expectation(tmp_path, text, parts):
    f = _write(tmp_path, text)
    with pytest.raises(UserError) as exc:
        load_problem(f)
    msg = str(exc.value)
    assert msg.startswith(f"{f}:") and "\n" not in msg, msg
    for part in parts:
        assert part in msg, msg


def _einsum(change) -> dict:
    doc = matmul(64, 32, 48).to_dict()
    change(doc)
    return doc


EINSUM_CASES = {
    "dim 0": (lambda d: d["dims"].update(M=0), "field 'dims.M': expected a positive integer, got 0"),
    "dim bool": (lambda d: d["dims"].update(M=True), "field 'dims.M'"),
    "tensor bits": (lambda d: d["tensors"][0].update(bits="eight"), "field 'tensors[0].bits'"),
    "coefficient": (lambda d: d["tensors"][1]["axes"][0][0].__setitem__(0, 0), "field 'tensors[1].axes[0][0][0]'"),
    "axes shape": (lambda d: d["tensors"][0].update(axes=[[1, "M"]]), "field 'tensors[0].axes'"),
    "is_output": (lambda d: d["tensors"][2].update(is_output="yes"), "field 'tensors[2].is_output'"),
    # a dimension twice in one tensor (here I[B + B]): refused on reading, not when first evaluated
    "dim twice": (lambda d: d["tensors"][0]["axes"][0].append([1, d["tensors"][0]["axes"][0][0][1]]),
                  "field 'tensors[0].axes[0][1][1]': dimension 'B' appears twice in tensor I"),
    "tensors": (lambda d: d.update(tensors=5), "field 'tensors': expected a list"),
    "typo": (lambda d: d.update(psum_bit=16), "unknown field 'psum_bit'"),
    "tensor typo": (lambda d: d["tensors"][0].update(bit=4), "unknown field 'tensors[0].bit'"),
    # the configs hold tensors by role: other names were bypassed at every on-chip level, silently
    "tensor names": (lambda d: [t.update(name=n) for t, n in zip(d["tensors"], "ABC")],
                     "expected the tensors I, W and O (the output), each once; got A, B, C (output)"),
    "tensor twice": (lambda d: d["tensors"][1].update(name="I"), "got I, I, O (output)"),
    "no output": (lambda d: d["tensors"][2].update(is_output=False), "got I, W, O"),
    "no dims": (lambda d: d.update(dims={}, tensors=[]), "no dimensions"),
    # ranks are int8 in a MappingBatch: 33 dims (M plus 32 of size 1 that W uses) are refused
    "33 dims": (lambda d: (d["dims"].update({f"X{i}": 1 for i in range(29)}),
                           d["tensors"][1]["axes"].extend([[1, f"X{i}"]] for i in range(29))),
                "33 dimensions, more than the 32"),
}


@pytest.mark.parametrize("change, part", EINSUM_CASES.values(), ids=EINSUM_CASES.keys())
def test_einsum_form_names_the_field(tmp_path, change, part):
    for name, dump in (("bad.json", json.dumps), ("bad.yaml", yaml.safe_dump)):
        f = _write(tmp_path, dump(_einsum(change)), name)
        with pytest.raises(UserError) as exc:
            load_problem(f)
        assert str(exc.value).startswith(f"{f}:") and part in str(exc.value)


def test_the_layers_own_checks_point_at_dims_or_tensors(tmp_path):
    """The checks of the whole layer (tensor roles, dimensions used) name no one field but the list
    they are about: in YAML, the line of ``tensors:`` / ``dims:``."""
    doc = yaml.safe_dump(_einsum(lambda d: d["tensors"][1].update(name="X")), sort_keys=False)
    line = doc.splitlines().index("tensors:") + 1
    f = _write(tmp_path, doc)
    with pytest.raises(UserError, match=rf"^{re.escape(str(f))}:{line}: problem matmul: expected the tensors I, W"):
        load_problem(f)


def test_line_numbers_only_where_known(tmp_path):
    # JSON files carry no line; a defaulted field (kernel 3 here) has no line of its own
    f = _write(tmp_path, json.dumps({"kind": "matmul", "m": 4, "k": 4, "n": 4, "bits": 0}), "bad.json")
    with pytest.raises(UserError, match=r"bad\.json: field 'bits'"):
        load_problem(f)
    f = _write(tmp_path, "kind: conv2d\nc_in: 8\nc_out: 8\nh: 2\nw: 8\n")
    with pytest.raises(UserError, match=r"bad_layer\.yaml: field 'kernel'"):
        load_problem(f)


def test_constructors_check_their_own_names():
    with pytest.raises(UserError, match="field 'stride'"):
        conv2d(8, 8, 8, 8, stride=0)
    with pytest.raises(UserError, match="field 'length'"):
        conv1d(8, 8, True)
    with pytest.raises(UserError, match="field 'padding'"):
        conv1d(8, 8, 8, padding=(1, 1, 1, 1))


def test_dim_limit_is_inclusive_and_fits_a_batch():
    """The largest dim loads, and its factors fit the batch's int32 arrays exactly."""
    p = matmul(MAX_DIM, 1, 1)
    assert np.iinfo(FACTOR_DTYPE).max == MAX_DIM
    m = p.dim_names.index("M")
    tem = np.ones((1, 1, 4), np.int64)
    tem[0, 0, m] = MAX_DIM
    batch = MappingBatch(tem, np.ones_like(tem), np.ones_like(tem), np.arange(4)[None, None], np.ones((1, 1, 3), bool))
    assert batch.temporal.dtype == FACTOR_DTYPE and int(batch.temporal[0, 0, m]) == p.sizes["M"]
    tem[0, 0, m] = MAX_DIM + 1
    with pytest.raises(ValueError, match="do not fit int32"):
        MappingBatch(tem, np.ones_like(tem), np.ones_like(tem), np.arange(4)[None, None], np.ones((1, 1, 3), bool))
    with pytest.raises(ValueError, match="order: values 0..200 do not fit int8"):
        MappingBatch(np.ones_like(tem), np.ones_like(tem), np.ones_like(tem), np.array([[[0, 1, 2, 200]]]),
                     np.ones((1, 1, 3), bool))
    with pytest.raises(UserError, match="exceeds 2,147,483,647"):
        matmul(MAX_DIM + 1, 1, 1)


def test_a_mapping_past_the_batch_dtypes_is_a_value_error():
    """from_mappings of an unvalidated mapping whose factor exceeds int32: the batch's ValueError,
    not numpy's OverflowError from filling an int32 array."""
    from costmodel.mapping import LevelMapping, Mapping

    p = matmul(8, 8, 8)
    arch = load_architecture("tiny")
    m = Mapping(tuple(LevelMapping(temporal={"M": 2**31} if i == 0 else {}) for i in range(len(arch.levels))))
    with pytest.raises(ValueError, match="temporal: values 1..2147483648 do not fit int32"):
        MappingBatch.from_mappings([m], p, arch)


def test_mac_limit_is_inclusive():
    assert matmul(2**16, 2**16, 2**16).macs == MAX_COUNT
    with pytest.raises(UserError, match="MACs exceed 2\\*\\*48"):
        matmul(2**16, 2**16, 2**16 + 1)


def test_every_example_still_loads(tmp_path):
    files = sorted((REPO / "examples" / "layers").glob("*.yaml"))
    assert files
    for f in files:
        p = load_problem(f)
        for name in ("again.yaml", "again.json"):  # and its einsum form reads back the same
            assert load_problem(save_problem(p, tmp_path / name)) == p


def _dse(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from dse.cli import main; main()", *map(str, args)],
                          check=False, capture_output=True, text=True, timeout=120, cwd=cwd)


@pytest.mark.parametrize("case", ["stride 0", "bits pair", "params 5", "m 2**63", "m true", "typo"])
def test_cli_exit_2_one_line(tmp_path, case):
    text, parts = CASES[case]
    f = _write(tmp_path, text)
    mapping = REPO / "examples" / "mappings" / "tiny_small_matmul.yaml"
    for args in (("evaluate", "--hw", "tiny", "--layer", f, "--mapping", mapping),
                 ("best-mapping", "--hw", "tiny", "--layer", f, "--no-db")):
        out = _dse(*args, cwd=tmp_path)
        assert out.returncode == 2, out.stderr
        assert "Traceback" not in out.stderr and out.stdout == ""
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"error: {f}:"), out.stderr
        assert all(part in lines[0] for part in parts), out.stderr


def test_cli_example_still_evaluates(tmp_path):
    out = _dse("evaluate", "--hw", "tiny", "--layer", REPO / "examples" / "layers" / "small_matmul.yaml",
               "--mapping", REPO / "examples" / "mappings" / "tiny_small_matmul.yaml", "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["macs"] == 64 * 32 * 48


def test_window_table_too_large_is_refused_before_it_is_built():
    """A long 1-D sequence with a highly composite length (56,159 samples, 720 taps: 120 x 30 tile
    shapes x 112,321 shifts) asked for 3 GiB; it is a UserError now, and a smaller one still works."""
    from costmodel.arch import load_architecture
    from costmodel.random_mappings import random_mappings

    arch = load_architecture("tiny")
    with pytest.raises(UserError, match=r"3600 tile shapes x 112321 shifts = 3\.0 GiB .*split the layer"):
        random_mappings(conv1d(1, 1, 56159, kernel=720), arch, 2)
    assert len(random_mappings(conv1d(1, 1, 4000, kernel=9), arch, 2)) == 2
