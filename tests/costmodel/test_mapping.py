"""Mapping: validation messages, YAML/JSON round trip, loop-nest printout, MappingBatch, with the
shipped hwconfigs/tiny.yaml (DRAM -> 4096-word buffer -> 2x2 PEs with 16-word register files;
both double-buffered, so 2048 and 8 usable words)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from bruteforce import walk
from standin import random_mapping

import costmodel
from costmodel import problem as P
from costmodel.analysis import access_counts
from costmodel.arch import load_architecture
from costmodel.errors import UserError
from costmodel.mapping import LevelMapping, Mapping, MappingBatch, load_mapping

ARCH = load_architecture("tiny")
PROB = P.conv2d(2, 4, 6, 6, kernel=3)  # N1 G1 K4 C2 P4 Q4 R3 S3


def good(rf: LevelMapping | None = None, dram: LevelMapping | None = None) -> Mapping:
    return Mapping((
        dram or LevelMapping({"K": 2, "C": 2, "P": 2, "R": 3}, ("K", "C", "P", "R")),
        LevelMapping({"P": 2, "Q": 2}, ("P", "Q"), spatial_x={"K": 2}, spatial_y={"Q": 2}),
        rf or LevelMapping({"S": 3}, ("S",)),
    ))


def test_good_mapping_validates():
    good().validate(PROB, ARCH)


@pytest.mark.parametrize("mapping, message", [
    (good(rf=LevelMapping()), "dimension S: factors multiply to 1 (no factors), expected its size 3"),
    (good(rf=LevelMapping({"S": 3, "Z": 2})), "level rf temporal: unknown dimension 'Z'"),
    (Mapping((LevelMapping({"K": 2, "C": 2, "P": 2, "R": 3}),
              LevelMapping({"P": 2}, spatial_x={"K": 2, "Q": 2}, spatial_y={"Q": 2}),
              LevelMapping({"S": 3}))),
     "level buffer: spatial X factors {'K': 2, 'Q': 2} use 4 instances, fan-out X is 2"),
    (good(dram=LevelMapping({"K": 2, "C": 2, "P": 2, "R": 3}, bypass=frozenset({"W"}))),
     "level DRAM (outermost) must keep every tensor"),
    (Mapping(good().levels[:2]), "has 2 levels, architecture tiny has 3"),
    (good(rf=LevelMapping({"S": 3}, bypass=frozenset({"X"}))), "level rf bypass: unknown tensors ['X']"),
    (good(rf=LevelMapping({"S": 3}, order=("S", "S"))), "level rf order ['S', 'S']: expected distinct"),
])
def test_invalid_mappings_say_why(mapping, message):
    with pytest.raises(UserError) as err:
        mapping.validate(PROB, ARCH)
    assert message in str(err.value)


def test_capacity_overflow_names_buffer_tiles_and_words():
    # rf loops P2 R3 S3 (DRAM takes one less P and no R): rf tiles are I = (2-1+3) rows x 3 cols
    # = 12 words (C fixed), W = 3 x 3 = 9, O = 2: 23 words; the 16-word rf is double-buffered:
    # 8 usable, overflow 15.
    m = good(rf=LevelMapping({"P": 2, "R": 3, "S": 3}), dram=LevelMapping({"K": 2, "C": 2}))
    with pytest.raises(UserError) as err:
        m.validate(PROB, ARCH)
    msg = str(err.value)
    assert "level rf: tiles of kept tensors need 23 words (I 12, W 9, O 2)" in msg
    assert "capacity is 16 words (8 usable with double buffering); overflow 15 words" in msg
    # bypassing I and W at the rf frees it: O's 2 words fit.
    good(rf=LevelMapping({"P": 2, "R": 3, "S": 3}, bypass=frozenset({"I", "W"})),
         dram=LevelMapping({"K": 2, "C": 2})).validate(PROB, ARCH)


def test_dict_json_yaml_round_trip(tmp_path):
    m = good()
    assert Mapping.from_dict(m.to_dict()) == m
    assert Mapping.from_dict(json.loads(json.dumps(m.to_dict(ARCH))), ARCH) == m
    for name in ("m.yaml", "m.json"):
        path = m.save(tmp_path / name, ARCH)
        assert load_mapping(path, PROB, ARCH) == m
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json", "m.yaml"]  # no temp files left


def test_serializers_that_sort_keys_keep_the_loop_order():
    """The dims a level's ``order`` leaves out ran in ``temporal``'s key order, which yaml.safe_dump
    and json.dumps(sort_keys=True) change: the numbers changed 2.3x while the mappings compared equal."""
    import yaml

    from costmodel.evaluate import evaluate

    p = P.matmul(64, 32, 48)
    m = Mapping((LevelMapping(temporal={"N": 12, "M": 4}),
                 LevelMapping(temporal={"M": 8, "N": 2, "K": 16}, order=("M", "N", "K"), spatial_x={"N": 2},
                              spatial_y={"M": 2}),
                 LevelMapping(temporal={"K": 2})))
    swapped = Mapping((LevelMapping(temporal={"M": 4, "N": 12}), *m.levels[1:]))
    assert m.levels[0].order == ("N", "M") and swapped != m  # (the same factors, not the same nest)
    assert evaluate(p, ARCH, swapped).energy_pj != evaluate(p, ARCH, m).energy_pj
    for text in (yaml.safe_dump(m.to_dict(ARCH)), json.dumps(m.to_dict(ARCH), sort_keys=True)):
        again = Mapping.from_dict(yaml.safe_load(text), ARCH)
        assert again == m and evaluate(p, ARCH, again).energy_pj == evaluate(p, ARCH, m).energy_pj


def test_a_mapping_in_dim_order_lists_its_factors_as_the_problem_does():
    """A mapping read back from JSON with sorted keys (the mapping database's rows) printed
    ``x:C2K8`` where the search had printed ``x:K8C2``: listed in the problem's dims again, it is the
    same mapping (equal, and equal numbers)."""
    from costmodel.evaluate import evaluate

    m = good(dram=LevelMapping({"R": 3, "C": 2, "P": 2, "K": 2}, ("K", "C", "P", "R")))
    m = Mapping((m.levels[0], LevelMapping({"Q": 2, "P": 2}, ("P", "Q"), spatial_x={"K": 2}, spatial_y={"Q": 2}),
                 m.levels[2]))
    back = Mapping.from_dict(json.loads(json.dumps(m.to_dict(ARCH), sort_keys=True)), ARCH)
    listed = back.in_dim_order(PROB.dim_names)
    assert list(listed.levels[0].temporal) == ["K", "C", "P", "R"] and list(listed.levels[1].temporal) == ["P", "Q"]
    assert listed == back == m and listed.levels[0].order == m.levels[0].order
    assert evaluate(PROB, ARCH, listed).to_dict() == evaluate(PROB, ARCH, m).to_dict()


def test_named_entries_without_the_config_are_refused():
    data = {"levels": [{"level": "buffer", "temporal": {"K": 8}}, {"level": "DRAM"}, {"level": "rf"}]}
    with pytest.raises(UserError, match=r"levels\[0\]\.level: entries that name their level need the config"):
        Mapping.from_dict(data)
    assert Mapping.from_dict(data, ARCH).levels[1].temporal == {"K": 8}  # buffer: the config's second level


def test_named_levels_may_be_partial_and_unordered(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text("levels:\n"
                    "  - level: rf\n    temporal: {S: 3}\n"
                    "  - level: DRAM\n    temporal: {K: 4, C: 2, P: 4, Q: 4, R: 3}\n    order: [K, C, P, Q, R]\n")
    m = load_mapping(path, PROB, ARCH)
    assert m.levels[1] == LevelMapping() and m.levels[2].temporal == {"S": 3}


@pytest.mark.parametrize("text, message", [
    ("levels:\n\t- temporal: {K: 4}\n", ":2: YAML syntax error"),  # one line, with the line number
    ("levels:\n  - temporal: {K: 4}\nfoo: 1\n", ":3: foo: unknown field ['foo'] (expected levels, padded)"),
    ("levels:\n  - temporal: {K: 4}\n    temporal: {K: 2}\n", ":3: levels[0].temporal: duplicate key (first given on line 2)"),
    ("levels:\n  - temporal: {K: 4}  # \xe9t\xe9\n", ":2: expected UTF-8 text, got byte 0xe9"),
    ("foo: 1", ":1: foo: unknown field ['foo'] (expected levels, padded)"),
    ("levels: 3", "expected a mapping with a 'levels' list"),
    ("- 1", "expected a mapping with a 'levels' list"),
    ("levels:\n  - level: nowhere\n", "levels[0].level: expected one of ['DRAM', 'buffer', 'rf'], got 'nowhere'"),
    ("levels:\n  - temporal: {K: -1}\n", "levels[0].temporal.K: expected a positive integer factor, got -1"),
    ("levels:\n  - level: rf\n  - level: rf\n", "levels[1].level: 'rf' is listed twice"),
    ("levels:\n  - temporal: {K: 4}\n    spatial: {K: 2}\n", ":3: levels[0].spatial: unknown field ['spatial']; did you mean"),
    # entries named by level: the index and line are the file's, not the config's level slot
    ("levels:\n  - level: rf\n    tempral: {S: 3}\n  - level: DRAM\n",
     ":3: levels[0].tempral: unknown field ['tempral']; did you mean 'temporal'?"),
    ("levels:\n  - level: rf\n  - level: bufer\n", (":3: levels[1].level: expected one of ['DRAM', 'buffer', 'rf'], "
                                                   "got 'bufer'; did you mean 'buffer'?")),
    ("levels:\n  - level: rf\n    temporal: {S: 3}\n  - level: DRAM\n    temporal: {K: 4}\n    temporal: {K: 2}\n",
     ":6: levels[1].temporal: duplicate key (first given on line 5)"),
    ("levels:\n  - temporal: !big 4\n", ":2: levels[0].temporal: unsupported YAML value or tag '!big'"),
    ("levls:\n  - temporal: {K: 4}\n", ":1: levls: unknown field ['levls']; did you mean 'levels'?"),
    ("levels:\n  - level: rf\n  - [1]\n", ":3: levels[1]: expected a mapping, got [1]"),
    ("levels:\n  - bypass: [W, I, W]\n", "levels[0].bypass: W listed more than once in ['W', 'I', 'W']"),
    ("levels:\n  - order: [K, C, K]\n", "levels[0].order: K listed more than once in ['K', 'C', 'K']"),
])
def test_load_mapping_errors_name_the_file(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(UserError) as err:
        load_mapping(path, PROB, ARCH)
    assert str(path) in str(err.value) and message in str(err.value)
    assert "\n" not in str(err.value)
    with pytest.raises(UserError, match="missing.yaml: cannot read file"):
        load_mapping(tmp_path / "missing.yaml", PROB, ARCH)


@pytest.mark.parametrize(("edits", "line", "message"), [
    ([("{S: 3}", "{S: 3, Z: 1}")], 11, "level rf temporal: unknown dimension 'Z'"),
    ([("order: [P, Q]", "order: [P, Q, Z]")], 4, "level buffer order ['P', 'Q', 'Z']: expected distinct"),
    ([("order: [S]", "order: [S]\n    bypass: [X]")], 13, "level rf bypass: unknown tensors ['X']"),
    ([("spatial_x: {K: 2}", "spatial_x: {K: 2, C: 2}"), ("{K: 2, C: 2, P: 2", "{K: 2, P: 2")], 5,
     "level buffer: spatial X factors {'K': 2, 'C': 2} use 4 instances, fan-out X is 2"),
    ([("{S: 3}", "{S: 3, R: 3}"), ("P: 2, R: 3}", "P: 2}")], 10, "level rf: tiles of kept tensors need"),
    ([("{S: 3}", "{S: 3, C: 2}")], None, "dimension C: factors multiply to 4"),  # (no one field: no line)
])
def test_validation_errors_of_a_file_name_the_line(tmp_path, edits, line, message):
    """The checks against the layer and config point at the line of the field they are about, with
    the entries named by level and listed in another order than the config's (rf first)."""
    text = """levels:
  - level: rf
    temporal: {S: 3}
    order: [S]
  - level: buffer
    temporal: {P: 2, Q: 2}
    order: [P, Q]
    spatial_x: {K: 2}
    spatial_y: {Q: 2}
  - level: DRAM
    temporal: {K: 2, C: 2, P: 2, R: 3}
    order: [K, C, P, R]
"""
    # (the rf entry moved last, so its line numbers are not those of the config's level order)
    text = text.replace("  - level: rf\n    temporal: {S: 3}\n    order: [S]\n", "") + \
        "  - level: rf\n    temporal: {S: 3}\n    order: [S]\n"
    path = tmp_path / "m.yaml"
    path.write_text(text)
    assert load_mapping(path, PROB, ARCH) == good()
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    path.write_text(text)
    with pytest.raises(UserError) as err:
        load_mapping(path, PROB, ARCH)
    where = f"{path}:{line}: " if line else f"{path}: "
    assert str(err.value).startswith(where + message), str(err.value)


def test_loop_nest_printout():
    text = good().loop_nest(PROB, ARCH)
    lines = text.splitlines()
    # DRAM holds whole tensors: I 2x6x6 = 72, W 4x2x3x3 = 72, O 4x4x4 = 64 words.
    assert lines[0] == "# DRAM: tile words I 72, W 72, O 64"
    assert lines[1:5] == ["for k0 in range(2):", "  for c0 in range(2):", "    for p0 in range(2):",
                          "      for r0 in range(3):"]
    # buffer tile: K2, P2 x Q4 outputs with R fixed, S3: I = 1 channel x 2 rows x (4-1+3) = 12,
    # W = 2 x 1 x 1 x 3 = 6, O = 2 x 2 x 4 = 16.
    assert lines[5] == "        # buffer: tile words I 12, W 6, O 16"
    assert "parallel_for k1x in range(2):  # spatial X below buffer" in text
    assert "parallel_for q1y in range(2):  # spatial Y below buffer" in text
    assert "# rf: tile words I 3, W 3, O 1" in text
    assert lines[-1].strip() == "mac()" and "for s2 in range(3):" in text


def test_batch_round_trip_and_arrays():
    rng = random.Random(0)
    maps = [random_mapping(rng, PROB, ARCH) for _ in range(20)]
    batch = MappingBatch.from_mappings(maps, PROB, ARCH)
    assert batch.temporal.shape == (20, 3, 8) and batch.keep.shape == (20, 3, 3) and len(batch) == 20
    again = MappingBatch.from_mappings([batch.mapping(i, PROB) for i in range(20)], PROB, ARCH)
    for f in ("temporal", "spatial_x", "spatial_y", "keep"):
        assert np.array_equal(getattr(batch, f), getattr(again, f))
    # the loop order of every level agrees on the loops with a factor > 1 (the only ones that count)
    for i in range(20):
        for lv in range(3):
            o1 = [d for d in np.argsort(batch.order[i, lv]) if batch.temporal[i, lv, d] > 1]
            o2 = [d for d in np.argsort(again.order[i, lv]) if again.temporal[i, lv, d] > 1]
            assert o1 == o2


def test_real_config_counts_match_walker():
    """On the shipped tiny config (multicast on, no reduction, 2x2 mesh) with random mappings."""
    rng = random.Random(1)
    prob = P.conv2d(2, 2, 5, 4, kernel=(3, 2), stride=1)
    maps = [random_mapping(rng, prob, ARCH) for _ in range(40)]
    acc = access_counts(prob, ARCH, MappingBatch.from_mappings(maps, prob, ARCH))
    for i, m in enumerate(maps):
        ref = walk(prob, ARCH, m)
        for f in ("fills", "reads", "updates", "hops", "tile_words"):
            assert np.array_equal(getattr(acc, f)[i], ref[f]), (f, m)


HWCONFIGS = sorted((Path(costmodel.__file__).resolve().parent.parent / "hwconfigs").glob("*.yaml"))


@pytest.mark.parametrize("path", HWCONFIGS, ids=[p.stem for p in HWCONFIGS])
def test_shipped_configs_counts_match_walker(path):
    """Every shipped config, with random valid mappings from costmodel.random_mappings."""
    from costmodel.random_mappings import random_mappings

    arch = load_architecture(path)
    prob = P.conv2d(2, 4, 5, 5, kernel=3)
    batch = random_mappings(prob, arch, 8, seed=3)
    acc = access_counts(prob, arch, batch)
    for i in range(len(batch)):
        mapping = batch.mapping(i, prob)
        mapping.validate(prob, arch)
        ref = walk(prob, arch, mapping)
        for f in ("fills", "reads", "updates", "hops", "tile_words"):
            assert np.array_equal(getattr(acc, f)[i], ref[f]), (path.name, f, mapping)


def test_numpy_integers_are_integers():
    """Sizes and factors taken from numpy arrays are accepted as the same ints (and stored as plain
    ints: the JSON forms stay writable); floats and bools are still refused."""
    from costmodel.errors import UserError
    from costmodel.problem import conv2d
    from costmodel.random_mappings import random_mappings

    arch = load_architecture("tiny")
    p = conv2d(np.int64(8), 8, np.int32(6), 6, kernel=np.uint8(3), padding=1)
    assert p == conv2d(8, 8, 6, 6, kernel=3, padding=1) and all(type(n) is int for _, n in p.dims)
    m = random_mappings(p, arch, 1, seed=2).mapping(0, p)
    as_numpy = json.loads(json.dumps(m.to_dict(arch)), parse_int=np.int64)
    again = Mapping.from_dict(as_numpy, arch)
    again.validate(p, arch)
    assert again == m and json.dumps(again.to_dict(arch)) == json.dumps(m.to_dict(arch))
    for bad in (6.0, True):
        with pytest.raises(UserError, match="expected a positive integer"):
            conv2d(8, 8, bad, 6)
