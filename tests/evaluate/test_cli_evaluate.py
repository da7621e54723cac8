"""`dse evaluate` as a user runs it (subprocess): JSON keys, tables, and one-line errors with exit 2."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LAYER = REPO / "examples" / "layers" / "vgg16_conv5.yaml"
MAPPING = REPO / "examples" / "mappings" / "eyeriss_vgg16_conv5.yaml"
DSE = [sys.executable, "-c", "from dse.cli import main; main()"]


def run(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run([*DSE, "evaluate", *map(str, args)], check=False, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture(scope="module")
def doc():
    out = run("--hw", "eyeriss_timeloop_32nm", "--layer", LAYER, "--mapping", MAPPING, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)  # stdout is exactly one JSON document


def test_json_keys_and_consistency(doc):
    for key in ("energy_pj", "latency_cycles", "latency_s", "area_mm2", "power_mw", "macs", "utilization", "edp",
                "accesses", "energy_breakdown_pj", "area_breakdown_mm2"):
        assert key in doc
    assert doc["latency_cycles"] == 5_505_024
    assert doc["latency_s"] == pytest.approx(5_505_024 / 1e9)  # 1 GHz clock
    assert set(doc["accesses"]) == {"DRAM", "shared_glb", "ifmap_spad", "weights_spad", "psum_spad"}
    a = doc["accesses"]["psum_spad"]["O"]
    assert a["writes"] == a["fills"] + a["updates"]
    assert doc["area_mm2"] == pytest.approx(sum(doc["area_breakdown_mm2"].values()))


def test_tables_and_no_overlap():
    out = run("--hw", "eyeriss_timeloop_32nm", "--layer", LAYER, "--mapping", MAPPING)
    assert out.returncode == 0, out.stderr
    for text in ("5,505,024 cycles", "energy breakdown", "weights_spad", "loop nest", "for q0 in range(4):"):
        assert text in out.stdout
    slow = json.loads(run("--hw", "eyeriss_timeloop_32nm", "--layer", LAYER, "--mapping", MAPPING, "--json",
                          "--no-overlap").stdout)
    assert slow["latency_cycles"] > 5_505_024 and slow["overlap"] is False


def _bad(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_bad_inputs_exit_2_with_one_line(tmp_path):
    mapping = MAPPING.read_text()
    cases = [
        (("--layer", tmp_path / "missing.yaml", "--mapping", MAPPING), "missing.yaml: cannot read file"),
        (("--layer", _bad(tmp_path, "bad.yaml", "kind: conv2d\nc_in: [1\n"), "--mapping", MAPPING), "bad.yaml:3: YAML syntax error"),
        (("--layer", LAYER, "--mapping", _bad(tmp_path, "m1.yaml", mapping.replace("{K: 8}", "{K: 4}"))),
         "dimension K: factors multiply to 128"),
        # C 16 in the weights_spad loops: the ifmap_spad tile becomes C16 x 3 rows = 48 words > 24
        (("--layer", LAYER, "--mapping", _bad(tmp_path, "m2.yaml", mapping.replace(
            "{K: 2, C: 4, P: 8}", "{K: 2, C: 2, P: 8}").replace("{R: 3, C: 8}", "{R: 3, C: 16}"))),
         "level ifmap_spad: tiles of kept tensors need 48 words"),
        (("--layer", LAYER, "--mapping", tmp_path / "nope.yaml"), "nope.yaml"),
    ]
    for args, message in cases:
        out = run("--hw", "eyeriss_timeloop_32nm", *args)
        assert out.returncode == 2, (args, out.stderr)
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], out.stderr
        assert out.stdout == ""
    out = run("--hw", "no_such_config", "--layer", LAYER, "--mapping", MAPPING)
    assert out.returncode == 2 and "no such hardware config" in out.stderr
