"""`dse disasm` / `dse asm` from the command line, and the generated docs/isa.md being current."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from compiler.isa import Finish, Gemm, Load
from compiler.isa.binary import write_binary
from compiler.isa.docgen import DOC_PATH, render
from compiler.isa.program import DebugEntry, Program

DSE = [sys.executable, "-c", "from dse.cli import main; main()"]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*DSE, *args], check=False, capture_output=True, text=True, timeout=60)


def test_disasm_asm_round_trip_and_bad_files(tmp_path: Path):
    prog = Program([Load(y_size=2, push_next=True), Gemm(pop_prev=True, mx=3), Finish()],
                   debug={1: DebugEntry("/conv1/Conv", "k0")})
    axb = write_binary(prog, tmp_path / "m.axb")
    out = run("disasm", str(axb))
    assert out.returncode == 0, out.stderr
    assert 'gemm loadw=0' in out.stdout and '; "/conv1/Conv" "k0"' in out.stdout
    s = tmp_path / "m.s"
    assert run("disasm", str(axb), "-o", str(s)).returncode == 0
    assert s.read_text() == out.stdout
    back = tmp_path / "back.axb"
    res = run("asm", str(s), "-o", str(back))
    assert res.returncode == 0, res.stderr
    assert back.read_bytes() == axb.read_bytes()

    bad = tmp_path / "bad.axb"
    for content, message in ((b"hello world", "wrong magic"), (axb.read_bytes()[:50], "truncated")):
        bad.write_bytes(content)
        res = run("disasm", str(bad))
        assert res.returncode == 2
        assert res.stderr.count("\n") == 1 and message in res.stderr and "Traceback" not in res.stderr
    s.write_text("gemm mx=999\n")
    res = run("asm", str(s), "-o", str(tmp_path / "never.axb"))
    assert res.returncode == 2 and "m.s:1: " in res.stderr and "mx=999 out of range" in res.stderr
    assert not (tmp_path / "never.axb").exists()


def test_committed_isa_doc_is_the_generated_one():
    assert DOC_PATH.read_text() == render(), "docs/isa.md is stale: run `python -m compiler.isa.docgen`"


def test_doc_lists_every_field():
    from compiler.isa.spec import FORMATS

    text = render()
    for fmt in FORMATS.values():
        assert f"### `{fmt.mnemonic}`" in text
        for f in fmt.operands:
            assert f"| `{f.name}` |" in text


def test_binary_format_doc_example_assembles_and_is_canonical():
    from compiler.isa.text import assemble, disassemble

    doc = (DOC_PATH.parent / "binary-format.md").read_text()
    block = doc.split("prints the canonical assembler text")[1].split("```")[1].lstrip("\n")
    program = assemble(block, "docs/binary-format.md")
    assert len(program.instructions) == 3 and program.debug[1].tile == "k0"
    assert disassemble(program) == block


def test_asm_embeds_the_config_fingerprint(tmp_path: Path):
    arch_mod = pytest.importorskip("costmodel.arch")
    fingerprint = arch_mod.load_architecture("tpu_like").fingerprint()
    s = tmp_path / "p.s"
    s.write_text("finish\n")
    res = run("asm", str(s), "-o", str(tmp_path / "p.axb"), "--hw", "tpu_like")
    assert res.returncode == 0, res.stderr
    from compiler.isa.binary import read_binary

    assert read_binary(tmp_path / "p.axb").fingerprint == fingerprint
    s.write_text(".fingerprint 0123456789abcdef\nfinish\n")
    res = run("asm", str(s), "-o", str(tmp_path / "q.axb"), "--hw", "tpu_like")
    assert res.returncode == 2 and "is not the fingerprint" in res.stderr


def test_asm_with_a_config_refuses_what_the_simulator_would(tmp_path: Path):
    """With `--hw`, a DMA box past the memory map is refused at assembly, naming its line (without a
    config the addresses are left to the simulator, which needs one to size a vector)."""
    pytest.importorskip("costmodel.arch")
    s = tmp_path / "p.s"
    s.write_text(".memmap dram_size=64 const_base=0\n"
                 "load y_size=1 x_size=1 dram_addr=0\n"
                 "# 16 bytes from byte 48: the last in bounds\n"
                 "load y_size=1 x_size=1 dram_addr=48 sram=1\n"
                 "finish\n")
    res = run("asm", str(s), "-o", str(tmp_path / "ok.axb"), "--hw", "tpu_like")
    assert res.returncode == 0, res.stderr
    s.write_text(s.read_text().replace("dram_addr=48", "dram_addr=49"))
    res = run("asm", str(s), "-o", str(tmp_path / "bad.axb"), "--hw", "tpu_like")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr == (f"error: {s}:4: instruction 1 [load]: DRAM bytes [49, 65) exceed the program's 64-byte "
                          "memory map (the simulator refuses this program on tpu_like)\n")
    assert not (tmp_path / "bad.axb").exists()
    assert run("asm", str(s), "-o", str(tmp_path / "unchecked.axb")).returncode == 0


def test_asm_names_the_line_of_every_instruction_a_race_involves(tmp_path: Path):
    pytest.importorskip("costmodel.arch")
    s = tmp_path / "r.s"
    s.write_text(".memmap dram_size=64 const_base=0\n"
                 "load y_size=1 x_size=1 dram_addr=0\n"
                 "# the gemm reads what the load writes, with no token between them\n"
                 "gemm mx=1 loadw=1\n"
                 "finish\n")
    res = run("asm", str(s), "-o", str(tmp_path / "r.axb"), "--hw", "tpu_like")
    assert res.returncode == 2
    assert res.stderr == (f"error: {s}: race (RAW): instruction 1 (line 4) [gemm] on EX reads SPAD row 0, last "
                          "written by instruction 0 (line 2) [load] with no token chain ordering them (the simulator "
                          "refuses this program on tpu_like)\n")


def test_asm_with_a_config_refuses_a_gemm_without_loaded_weights(tmp_path: Path):
    """The simulator refuses a GEMM that reuses weights before any loadw; `asm --hw` runs it without
    values, and that check depended on the values: the binary was written, then refused by `simulate`."""
    pytest.importorskip("costmodel.arch")
    s = tmp_path / "w.s"
    s.write_text("gemm loadw=0\nfinish\n")
    res = run("asm", str(s), "-o", str(tmp_path / "w.axb"), "--hw", "tpu_like")
    assert res.stderr == (f"error: {s}:1: instruction 0 [gemm]: GEMM with loadw = 0 but no weight tile has been "
                          "loaded yet (the simulator refuses this program on tpu_like)\n")
    assert res.returncode == 2 and not (tmp_path / "w.axb").exists()


def test_asm_names_the_line_of_an_early_finish(tmp_path: Path):
    s = tmp_path / "f.s"
    s.write_text("# two\nfinish\nfinish\n")
    res = run("asm", str(s), "-o", str(tmp_path / "f.axb"))
    assert res.returncode == 2
    assert res.stderr == f"error: {s}: instruction 0 (line 2) is a FINISH before the end of the program\n"
