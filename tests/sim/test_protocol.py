"""Negative tests: missing tokens, races, deadlock, FIFO overflow, bad addresses, another config's binary."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from compiler.isa import Buffer, Elem, Engine, Finish, Gemm, Load, Nop, Store, Vec, VecOp
from compiler.isa.program import DebugEntry, Program
from compiler.sim import SimError, simulate
from compiler.target import Target
from costmodel.errors import UserError

from .sim_programs import L, conv_program, pipelined_program
from .test_programs import numpy_conv

RNG = np.random.default_rng(0)
X = RNG.integers(-128, 128, (1, 4, 6, 6)).astype(np.int8)
W = RNG.integers(-128, 128, (4, 4, 3, 3)).astype(np.int8)


def conv_with(**changes) -> tuple[Program, dict]:
    """The conv program (0 setreg, 1-3 loads, 4 gemm, 5 store, 6 finish) with instructions replaced."""
    program, inputs = conv_program(X, W, stride=1, pad=1)
    for index, fields in changes.items():
        i = int(index[1:])
        program.instructions[i] = dataclasses.replace(program.instructions[i], **fields)
    return program, inputs


def test_the_unmodified_program_is_clean():
    """No error, no warning, and the right numbers: the edits below break a program that works."""
    program, inputs = conv_with()
    result = simulate(program, inputs)
    assert result.warnings == []
    np.testing.assert_array_equal(result.outputs["y"], numpy_conv(X, W, 1, 1, 0))


def test_removed_token_pair_is_a_race_naming_both_instructions():
    program, inputs = conv_with(i3={"push_next": False}, i4={"pop_prev": False})
    with pytest.raises(SimError, match=r"race \((RAW|WAR)\)") as err:
        simulate(program, inputs)
    msg = str(err.value)
    assert "instruction 4 (conv) [gemm]" in msg and "instruction 1 (x_load) [load]" in msg


def test_removed_push_is_a_deadlock_naming_the_waiting_instruction():
    program, inputs = conv_with(i3={"push_next": False})
    with pytest.raises(SimError, match="deadlock") as err:
        simulate(program, inputs)
    assert "EX waits at instruction 4 (conv) [gemm] for a token on LD->EX" in str(err.value)


def test_removed_pop_is_a_race_and_an_unpopped_token_a_warning():
    program, inputs = conv_with(i5={"pop_prev": False})  # the store no longer waits for the GEMM
    with pytest.raises(SimError, match=r"race \((RAW|WAR)\).*instruction 5 \(conv\) \[store\]"):
        simulate(program, inputs)
    program = _nops([{"push_next": True}] * 2, [{"pop_prev": True}])
    assert simulate(program, {}).warnings == [
        "1 token(s) pushed to LD->EX were never popped (the last by instruction 1 (n) [nop])"]


def test_out_of_range_addresses_name_the_instruction():
    rows = Target().spad_rows
    program, inputs = conv_with(i4={"a_base": rows - 3})
    with pytest.raises(SimError, match=rf"instruction 4 \(conv\) \[gemm\]: the A walk reaches SPAD row \d+, "
                                       rf"but SPAD has {rows} rows"):
        simulate(program, inputs)
    program, inputs = conv_with(i5={"dram_addr": 2**31})
    with pytest.raises(SimError, match=r"instruction 5 \(conv\) \[store\]: DRAM bytes .* exceed"):
        simulate(program, inputs)
    program, inputs = conv_with(i2={"y_size": 4096})
    with pytest.raises(SimError, match=r"instruction 2 \(w_load\) \[load\]"):
        simulate(program, inputs)


def test_field_out_of_its_bits_is_refused_with_the_index():
    program, inputs = conv_with(i4={"mx": 300})
    with pytest.raises(UserError, match="instruction 4"):
        simulate(program, inputs)


def test_binary_for_another_config_is_refused():
    program, inputs = conv_with()
    program.fingerprint = "0123456789abcdef"
    with pytest.raises(UserError, match="built for config fingerprint 0123456789abcdef"):
        simulate(program, inputs, arch=Target())
    with pytest.raises(UserError, match="no compilable config"):
        simulate(program, inputs)


def test_binary_for_a_shipped_config_finds_it_by_fingerprint():
    from costmodel.arch import load_architecture

    program, inputs = conv_with()
    program.fingerprint = load_architecture("tpu_like").fingerprint()
    assert simulate(program, inputs).outputs["y"].shape == (1, 4, 6, 6)
    with pytest.raises(UserError, match="built for config fingerprint"):
        simulate(program, inputs, arch=Target())


def _nops(ld: list[dict], ex: list[dict]) -> Program:
    insns = [Nop(engine=Engine.LD, **f) for f in ld] + [Nop(engine=Engine.EX, **f) for f in ex] + [Finish()]
    return Program(instructions=insns, debug={i: DebugEntry("n", "") for i in range(len(insns))})


def test_fifo_overflow_without_credits_and_none_with_credits():
    depth = Target().token_depth
    n = depth + 1
    program = _nops([{"push_next": True}] * n, [{"pop_prev": True}] * n)
    with pytest.raises(SimError, match=rf"pushes token {n} into LD->EX \(depth {depth}\).*overflow"):
        simulate(program, {})
    # credits: EX returns a token for each of the first `depth` pops; LD waits for one before push depth+1..
    k = 2 * depth
    ld = [{"push_next": True, "pop_next": i >= depth} for i in range(k)]
    ex = [{"pop_prev": True, "push_prev": i < depth} for i in range(k)]
    simulate(_nops(ld, ex), {})


def test_program_must_end_with_finish():
    with pytest.raises(SimError, match="FINISH"):
        simulate(Program(instructions=[Nop()]), {})


def _dram_program(chain: bool) -> Program:
    """ST stores ACC row 0 to DRAM 0, then LD loads DRAM 0 into SPAD; a chain ST->EX->LD orders them."""
    insns = [
        Nop(engine=Engine.EX, push_next=True),
        Store(pop_prev=True, push_prev=chain, buf=Buffer.ACC, elem=Elem.B32, dram_addr=0),
        Nop(engine=Engine.EX, pop_next=chain, push_prev=chain),
        Load(pop_next=chain, buf=Buffer.SPAD, dram_addr=16, sram=0),
        Finish(),
    ]
    return Program(instructions=insns, dram_size=4096)


def test_dram_race_between_store_and_load():
    simulate(_dram_program(chain=True), {})
    with pytest.raises(SimError, match=r"race \((RAW|WAR)\).*DRAM byte 16"):
        simulate(_dram_program(chain=False), {})


def test_vector_op_missing_from_the_config_is_refused():
    target = Target(vector_ops=frozenset({VecOp.MOV}))
    program = Program(instructions=[Vec(op=VecOp.LUT), Finish()])
    with pytest.raises(SimError, match="does not implement LUT"):
        simulate(program, {}, arch=target)


def test_overlapping_store_rows_and_lut_bounds_are_errors():
    program = Program(instructions=[Store(buf=Buffer.SPAD, y_size=2, dram_pitch=8), Finish()], dram_size=256)
    with pytest.raises(SimError, match="rows overlap"):
        simulate(program, {})
    program = Program(instructions=[Load(buf=Buffer.SPAD, y_size=1, dram_addr=0), Vec(op=VecOp.LUT, src1_mode=2,
                      src1_buf=Buffer.CONST, src1=Target().const_rows - 1), Finish()], dram_size=256)
    program.instructions[0] = dataclasses.replace(program.instructions[0], push_next=True)
    program.instructions[1] = dataclasses.replace(program.instructions[1], pop_prev=True)
    # SPAD row 0 is all zeros: LUT index 0 - (-128) = 128 >= the 16 entries of the last CONST row
    with pytest.raises(SimError, match=f"LUT input 0 is outside the table .* {L} entries"):
        simulate(program, {})


def test_gemm_reusing_weights_before_any_load_is_an_error():
    with pytest.raises(SimError, match="no weight tile"):
        simulate(Program(instructions=[Gemm(loadw=False), Finish()]), {})


@pytest.mark.parametrize("tiles", [3, 4, 6])
def test_removing_any_single_token_flag_is_reported(tiles):
    assert not simulate(pipelined_program(tiles), {}, functional=False).warnings  # the intact program is clean
    flags = [(i, f) for i, x in enumerate(pipelined_program(tiles).instructions)
             for f in ("pop_prev", "pop_next", "push_prev", "push_next") if getattr(x, f, False)]
    assert len(flags) == 8 * tiles - 8
    for i, flag in flags:
        program = pipelined_program(tiles)
        program.instructions[i] = dataclasses.replace(program.instructions[i], **{flag: False})
        with pytest.raises(SimError, match=r"^(race|deadlock)"):
            simulate(program, {}, functional=False)


def test_inputs_must_be_a_dict_by_name():
    program, inputs = conv_with()
    with pytest.raises(TypeError, match=r"inputs: expected a dict of input name -> array \(the binary's inputs: \['x'\]\)"):
        simulate(program, inputs["x"])
