"""Every shipped hwconfig loads; resolved fields follow from the YAML by hand arithmetic."""

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from costmodel.arch import HWCONFIGS, architecture_from_dict, load_architecture
from costmodel.area import area_breakdown

SHIPPED = sorted(p.stem for p in HWCONFIGS.glob("*.yaml"))


def test_required_configs_are_shipped():
    required = {
        "eyeriss_like",
        "eyeriss_timeloop_32nm",
        "simba_like",
        "tpu_like",
        "edge_tpu_like",
        "nvdla_small_like",
        "ar_glasses_npu",
        "tiny",
    }
    assert required <= set(SHIPPED)


@pytest.mark.parametrize("name", SHIPPED)
def test_config_loads_and_is_consistent(name):
    arch = load_architecture(name)
    assert arch.levels[0].kind == "dram"
    assert all(lv.kind != "dram" for lv in arch.levels[1:])
    # instances of level i = product of fan-outs above it; MACs = product of all fan-outs
    prod = 1
    for lv in arch.levels:
        assert lv.instances == prod
        prod *= lv.fanout_x * lv.fanout_y
    assert arch.num_pes == prod
    raw = yaml.safe_load((HWCONFIGS / f"{name}.yaml").read_text())
    if raw["mac"].get("count"):
        assert raw["mac"]["count"] == prod
    parts = area_breakdown(arch)
    assert parts["total"] == pytest.approx(sum(v for k, v in parts.items() if k != "total"))
    assert parts["total"] > 0
    assert len(arch.fingerprint()) == 16 and int(arch.fingerprint(), 16) >= 0
    for lv in arch.levels:
        assert lv.read_pj >= 0 and lv.write_pj >= 0 and lv.hop_pj >= 0 and lv.area_mm2 >= 0


def test_bare_name_and_path_agree():
    a, b = load_architecture("tiny"), load_architecture(HWCONFIGS / "tiny.yaml")
    assert a.fingerprint() == b.fingerprint()


def test_a_folder_named_like_a_shipped_config_does_not_hide_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tiny").mkdir()  # (it was read as the config: "tiny: cannot read file (Is a directory)")
    assert load_architecture("tiny").fingerprint() == load_architecture(HWCONFIGS / "tiny.yaml").fingerprint()


def test_tiny_hand_worked():
    arch = load_architecture("tiny")
    buf = arch.level("buffer")
    # capacity 4 KiB of 8-bit words = 4096 words; fan-out 2x2 below it; rf has 4 instances of 16 words.
    assert buf.capacity_words == 4096 and (buf.fanout_x, buf.fanout_y) == (2, 2)
    rf = arch.level("rf")
    assert (rf.instances, rf.capacity_words) == (4, 16)
    # DRAM: LPDDR4 8 pJ/bit x 8 bits = 64 pJ per word.
    assert arch.levels[0].read_pj == pytest.approx(64.0)
    # MAC at 45 nm = Horowitz 0.3 pJ (8 b mult 0.2 + 32 b add 0.1, costmodel/data/mac.csv).
    assert arch.mac.energy_pj == pytest.approx(0.3)
    # Areas are Aladdin's at 40 nm, scaled by Stillmaker & Baas's area table (data/scaling.csv):
    # 40 nm lies between 32 nm (0.46) and 45 nm (1.0): 0.46 + 8/13 x 0.54 = 0.79231, so x 1 / 0.79231.
    to_45 = 1 / (0.46 + 8 / 13 * 0.54)
    # 4 int8 MACs of 396.9 (8x8 mult) + 278 (32 b add) um2 each
    assert area_breakdown(arch)["mac"] == pytest.approx(4 * (396.9 + 278) * to_45 * 1e-6)
    # 4 rf instances of 16 words x 8 bits x 5.98 um2 per bit (one port)
    assert area_breakdown(arch)["rf"] == pytest.approx(4 * 16 * 8 * 5.98 * to_45 * 1e-6)


def test_timeloop_overrides_are_ert_over_block():
    # reference/timeloop-eyeriss-exercise.md: vector-access energy / block words.
    arch = load_architecture("eyeriss_timeloop_32nm")
    ert = {
        "DRAM": (512, 512, 8),
        "shared_glb": (18.18, 14.14, 8),
        "ifmap_spad": (0.2024, 0.1767, 2),
        "weights_spad": (1.9766, 1.8817, 2),
        "psum_spad": (0.2513, 0.2191, 1),
    }
    for name, (rd, wr, block) in ert.items():
        lv = arch.level(name)
        assert lv.block_words == block
        assert lv.read_pj == pytest.approx(rd / block) and lv.write_pj == pytest.approx(wr / block)
        assert lv.hop_pj == 0
    assert arch.mac.energy_pj == pytest.approx(0.2077)
    assert [lv.instances for lv in arch.levels] == [1, 1, 168, 168, 168]
    assert [lv.capacity_words for lv in arch.levels] == [None, 131072, 24, 384, 16]
    assert arch.level("shared_glb").holds == ("I", "O")


def test_tpu_like_is_the_compiler_target():
    arch = load_architecture("tpu_like")
    assert arch.systolic is not None and (arch.systolic.rows, arch.systolic.cols) == (16, 16)
    assert arch.systolic.dataflow == "WS" and arch.num_pes == 256
    spad, acc = arch.level("scratchpad"), arch.level("accumulator")
    assert spad.capacity_words * spad.word_bits // 8 == 256 * 1024
    assert acc.capacity_words * acc.word_bits // 8 == 64 * 1024 and acc.word_bits == 32
    from compiler.target import Target

    t = Target.from_arch(arch)
    assert (t.rows, t.cols, t.spad_bytes, t.acc_bytes) == (16, 16, 256 * 1024, 64 * 1024)


def test_ar_glasses_npu_figures():
    arch = load_architecture("ar_glasses_npu")
    assert arch.node_nm == 7 and arch.num_pes == 1024 and arch.mac.datatype == "int8"
    sram = sum(lv.capacity_words * lv.word_bits / 8 for lv in arch.levels if lv.kind == "sram")
    assert 2 * 2**20 <= sram <= 2.2 * 2**20  # 2 MB of macros (+ the 96 KB of buffers, after ZigZag)


def _data(name: str) -> dict:
    return yaml.safe_load((HWCONFIGS / f"{name}.yaml").read_text())


def test_overrides_win_and_fingerprint_tracks_them():
    base = _data("tiny")
    d = _data("tiny")
    d["levels"][1]["read_pj"] = 1.25
    d["levels"][1]["area_mm2"] = 0.5
    d["mac"]["energy_pj"] = 0.01
    a, b = architecture_from_dict(base), architecture_from_dict(d)
    assert b.level("buffer").read_pj == 1.25 and b.level("buffer").area_mm2 == 0.5
    assert b.mac.energy_pj == 0.01
    assert a.fingerprint() != b.fingerprint()
    assert a.fingerprint() == architecture_from_dict(_data("tiny")).fingerprint()


def test_hop_energy_uses_child_pitch():
    # hop_pj = wire pJ/bit/mm x word bits x sqrt(area of one child subtree).
    import math

    from costmodel.tech import wire_pj_per_bit_mm

    arch = load_architecture("tiny")
    buf, rf = arch.level("buffer"), arch.level("rf")
    child = rf.area_mm2 + arch.mac.area_mm2  # one PE: its register file and its MAC
    expect = wire_pj_per_bit_mm(arch.technology) * 8 * math.sqrt(child)
    assert buf.hop_pj == pytest.approx(expect)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 8), st.integers(1, 8)), min_size=1, max_size=3),
    st.sampled_from([7, 16, 28, 45, 65]),
)
def test_random_configs_resolve(fanouts, node):
    levels = [
        {"name": "DRAM", "kind": "dram", "holds": ["I", "W", "O"], "word_bits": 8, "fanout": {"x": 1, "y": 1}}
    ]
    for i, (x, y) in enumerate(fanouts):
        levels.append(
            {
                "name": f"L{i}",
                "kind": "sram" if i == 0 else "regfile",
                "holds": ["I", "W", "O"],
                "capacity": 64 * (len(fanouts) - i),
                "word_bits": 8,
                "fanout": {"x": x, "y": y},
            }
        )
    d = {
        "name": "rnd",
        "clock": 1e9,
        "technology": {"node_nm": node},
        "mac": {"datatype": "int8"},
        "levels": levels,
    }
    arch = architecture_from_dict(d, source=str(Path("rnd.yaml")))
    import math

    assert arch.num_pes == math.prod(x * y for x, y in fanouts)
    parts = area_breakdown(arch)
    assert parts["mac"] == pytest.approx(arch.num_pes * arch.mac.area_mm2)
    assert parts["total"] == pytest.approx(sum(v for k, v in parts.items() if k != "total"))


def test_network_area_override_and_dataframe():
    from costmodel.arch import load_config_data

    data, lines, path = load_config_data("tiny")
    assert path == HWCONFIGS / "tiny.yaml" and lines.line(("levels", 1, "capacity")) is not None
    data["levels"][1]["network_area_mm2"] = 0.25
    arch = architecture_from_dict(data, lines, str(path))
    assert area_breakdown(arch)["network"] == pytest.approx(
        0.25 + sum(lv.network_area_mm2 for lv in arch.levels if lv.name != "buffer")
    )
    df = arch.to_dataframe()
    assert list(df.index) == ["DRAM", "buffer", "rf"] and df.loc["rf", "instances"] == 4


def test_architecture_is_hashable_and_compares_by_content():
    a, b = load_architecture("tiny"), load_architecture("tiny")
    assert a == b and hash(a) == hash(b) and {a: 1}[b] == 1
    d = _data("tiny")
    d["levels"][1]["capacity"] = "8 KiB"
    c = architecture_from_dict(d, source=a.source)
    assert c != a and c.level("buffer").capacity_words == 8192
