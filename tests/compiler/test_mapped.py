"""Tiles from the mapper: template constraints, the executed mapping, and target errors that name the file."""

from __future__ import annotations

import pytest

from compiler.compile import resolve, resolve_target
from compiler.lower import mapped
from costmodel.arch import load_architecture
from costmodel.errors import UserError
from costmodel.problem import conv2d, fully_connected

ARCH = load_architecture("tpu_like")


def test_padded_channels_are_whole_blocks():
    # 19 channels run as two 16-lane blocks (32 lanes); 3 fit one partial block
    assert [mapped.padded_channels(c, 16) for c in (3, 16, 19, 1000)] == [3, 16, 32, 1008]
    assert mapped.lane_factor(32, 16) == 16 and mapped.lane_factor(3, 16) == 3


@pytest.mark.parametrize("problem", [conv2d(64, 128, 28, 28, 3, padding=1), conv2d(32, 96, 56, 56, 1), conv2d(16, 16, 4, 4, 1),
                                     fully_connected(512, 1008)])
def test_mapper_stays_inside_the_template(problem):
    """Whatever the mapper picks under the template's constraints, only P and K (FC: N) split between
    DRAM and the levels below, C and K sit 16 x 16 on the array, and rebuilding the executed mapping
    from the (rows, group) read off it gives the same mapping's latency."""
    from costmodel.evaluate import evaluate

    p = mapped.plan(problem, ARCH, "scratchpad", "accumulator", 16, lambda r, g: True)
    dram = p.mapping.levels[0].temporal
    free = {"K", "P"} if problem.kind != "fc" else {"N"}
    assert {d for d, f in dram.items() if f > 1} <= free
    acc = p.mapping.levels[2]
    if problem.kind != "fc":
        assert acc.spatial_y.get("C") == 16 and acc.spatial_x.get("K") == 16
    rebuilt = mapped.executed_mapping(problem, ARCH, "scratchpad", "accumulator", 16, p.rows, p.group)
    assert evaluate(problem, ARCH, rebuilt).latency_cycles == evaluate(problem, ARCH, p.mapping).latency_cycles
    # the one-line form `dse compile` prints: "level: loops [spatial]" per level, single spaces
    text = p.describe(ARCH)
    assert "  " not in text and "accumulator: " in text, text
    if problem.kind != "fc":
        assert "[C16xK16]" in text, text


def test_fit_shrinks_to_a_dividing_tile():
    # P = 28 rows: with at most 10 rows fitting, the largest divisor of 28 that is <= 10 is 7
    prob = conv2d(64, 64, 28, 28, 3, padding=1)
    assert mapped.fit_tile(prob, 28, 4, lambda r, g: r <= 10 and g <= 2) == (7, 2)


def test_target_from_hwconfig_names_its_levels():
    target, arch = resolve("tpu_like")
    assert (target.spad_level, target.acc_level) == ("scratchpad", "accumulator") and arch is not None


@pytest.mark.parametrize("old,new,field", [
    ("  dma_setup_cycles: 32", "  dma_setup_cycles: -3", "compilable.dma_setup_cycles"),
    ("  token_depth: 8", "  token_depht: 8", "compilable.token_depht"),
    ("  spad_level: scratchpad", "  spad_level: sram0", "compilable.spad_level"),
    ("  gemm_timing: overlapped", "  gemm_timing: fast", "compilable.gemm_timing"),
])
def test_target_errors_name_file_line_and_field(tmp_path, old, new, field):
    from pathlib import Path

    text = (Path(ARCH.source)).read_text()
    assert old in text
    bad = text.replace(old, new)
    path = tmp_path / "bad.yaml"
    path.write_text(bad)
    line = next(i for i, s in enumerate(bad.splitlines(), 1) if s.startswith(new))
    with pytest.raises(UserError) as exc:
        resolve_target(path)
    assert f"{path}:{line}: {field}" in str(exc.value)
