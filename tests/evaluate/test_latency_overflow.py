"""Latencies too long for 64-bit cycle counts are refused, not wrapped around.

A config accepts any bandwidth above 0 and any fan-out. Before the guard, a read bandwidth of
1e-15 words/cycle made the small matmul *faster* (35,136 cycles) than 1e-12 (9.8e16), and 1e-300
gave a negative latency and energy, all with exit 0. The properties below hold for any correct
model: as a bandwidth falls or a systolic array grows, the latency never falls, and a mapping
either gets a positive latency or a UserError naming the cause.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from costmodel.errors import UserError
from costmodel.evaluate import evaluate
from costmodel.mapping import load_mapping
from costmodel.problem_io import load_problem
from dse.api import load_hw

REPO = Path(__file__).resolve().parents[2]
LAYER, MAPPING = REPO / "examples/layers/small_matmul.yaml", REPO / "examples/mappings/tiny_small_matmul.yaml"
TINY = (REPO / "hwconfigs/tiny.yaml").read_text()


def _hw(tmp_path: Path, name: str, text: str):
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return load_hw(path)


def _latency(arch, problem, overlap: bool) -> int | None:
    mapping = load_mapping(MAPPING, problem, arch)
    try:
        return evaluate(problem, arch, mapping, overlap=overlap).latency_cycles
    except UserError as exc:
        assert re.search(r"takes more than 2\*\*58 cycles .*buffer read_bw", str(exc)), exc
        return None


@pytest.mark.parametrize("overlap", [True, False])
def test_latency_never_falls_as_the_bandwidth_falls(tmp_path: Path, overlap: bool) -> None:
    assert TINY.count("read_bw: 4\n") == 1
    problem = load_problem(LAYER)
    last, refused = 0, 0
    for exp in range(0, 301, 3):  # read_bw 1, 1e-3, ..., 1e-300 words/cycle
        arch = _hw(tmp_path, f"bw{exp}", TINY.replace("read_bw: 4\n", f"read_bw: 1.0e-{exp}\n"))
        cycles = _latency(arch, problem, overlap)
        if cycles is None:
            refused += 1
            continue
        assert not refused, f"read_bw 1e-{exp} evaluated after a larger one was refused"
        assert cycles >= last > 0 or last == 0, (exp, cycles, last)
        assert cycles >= 1 / 10.0**-exp  # at least one word read over the bandwidth
        last = cycles
    assert last > 10**13 and refused > 80  # both sides of the limit were reached


def test_a_huge_systolic_array_is_refused_not_wrapped(tmp_path: Path) -> None:
    """2**47 MACs, all in DRAM's loops (order M, N, K), on a weight-stationary R x 2 array: K, the
    innermost loop, indexes the weights, so each fold streams T = 1 and there are F = 2**47 folds.
    The overlapped fold model (docs/costmodel.md) in Python integers is then
    steps + (2R + C - 2) + (F - 1)(R - T); the latency is at least that, or, past 2**58 cycles,
    the config is refused with its array named."""
    problem = load_problem(_layer(tmp_path))
    steps = folds = 2**47
    for rows in (2, 100, 1_000, 100_000, 10**9):
        arch = _hw(tmp_path, f"rows{rows}", TINY.replace(
            "fanout: {x: 2, y: 2}", f"fanout: {{x: 2, y: {rows}}}").replace(
            "mac: {datatype: int8, count: 4}", "mac: {datatype: int8}") + "systolic: {dataflow: WS, level: buffer}\n")
        compute = steps + (2 * rows + 2 - 2) + (folds - 1) * (rows - 1)
        mapping = load_mapping(_big_mapping(tmp_path), problem, arch)
        try:
            ev = evaluate(problem, arch, mapping)
        except UserError as exc:
            assert f"systolic array {rows} x 2" in str(exc), exc
            assert compute >= 2**58
            continue
        assert compute < 2**58
        assert ev.batch.lat.compute[0] == compute
        assert ev.latency_cycles >= compute * (1 - 2**-50)  # (the pipeline's floats round above 2**53)


def _layer(tmp_path: Path) -> Path:
    path = tmp_path / "big.yaml"
    path.write_text("kind: matmul\nm: 32768\nk: 65536\nn: 65536\n")
    return path


def _big_mapping(tmp_path: Path) -> Path:
    path = tmp_path / "big_map.yaml"
    path.write_text("levels:\n  - level: DRAM\n    temporal: {M: 32768, N: 65536, K: 65536}\n    order: [M, N, K]\n")
    return path


def test_cli_exit_2_one_line(tmp_path: Path) -> None:
    hw = tmp_path / "slow.yaml"
    hw.write_text(TINY.replace("read_bw: 4\n", "read_bw: 1.0e-15\n"))
    out = subprocess.run([sys.executable, "-c", "from dse.cli import main; main()", "evaluate", "--hw", str(hw), "--layer", str(LAYER),
                          "--mapping", str(MAPPING)], capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 2 and out.stdout == ""
    assert re.fullmatch(r"error: .*slow\.yaml: the mapping takes more than 2\*\*58 cycles .*"
                        r"buffer read_bw 1e-15 words/cycle\)\n", out.stderr), out.stderr
