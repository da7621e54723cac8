"""`dse disasm model.axb` and `dse asm prog.s`: binaries to assembler text and back.

The text is the canonical form of compiler.isa.text, with the debug map (ONNX node, tile) as a
comment on each instruction; `dse asm` of that text rebuilds the binary byte for byte.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from costmodel.atomic import atomic_write_text, refuse_overwriting
from dse.cli.params import path_argument, path_option

if TYPE_CHECKING:
    from compiler.isa.program import Program


def disasm(
    binary: Annotated[Path, path_argument(metavar="BINARY", help="An .axb binary.")],
    output: Annotated[Path | None, path_option("-o", "--output", file=True, help="Write the text here, not stdout.")] = None,
    no_const: Annotated[bool, typer.Option("--no-const", help="Omit the constant bytes (text no longer "
                                                                 "reassembles).")] = False,
) -> None:
    """Print a binary as assembler text, with the debug map as comments."""
    from compiler.isa.binary import read_binary
    from compiler.isa.text import disassemble

    if output is not None:
        refuse_overwriting(output, binary)
    text = disassemble(read_binary(binary), constants=not no_const)
    if output is None:
        typer.echo(text, nl=False)
    else:
        atomic_write_text(output, text)
        typer.echo(f"wrote {output}", err=True)


def asm(
    source: Annotated[Path, path_argument(metavar="SOURCE", help="Assembler text (the format `dse disasm` prints).")],
    output: Annotated[Path, path_option("-o", "--output", file=True, help="The .axb binary to write.")],
    hw: Annotated[str | None, typer.Option("--hw", help="Config (YAML path or name): embed its fingerprint, and "
                                           "refuse what the simulator would refuse on it.")] = None,
) -> None:
    """Assemble text into an .axb binary."""
    from compiler.isa.binary import write_binary
    from compiler.isa.instructions import Finish
    from compiler.isa.program import finish_problem
    from compiler.isa.text import assemble
    from costmodel.arch import resolve_path
    from costmodel.errors import UserError

    refuse_overwriting(output, source, None if hw is None else resolve_path(hw))
    try:
        text = source.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{source}: cannot read as text ({exc})") from None
    lines: list[int] = []
    program = assemble(text, str(source), lines)
    problem = finish_problem(program.instructions, lambda i: f"instruction {i} (line {lines[i]})")
    if problem is not None:  # (the simulator would refuse the binary)
        hint = "" if program.instructions and isinstance(program.instructions[-1], Finish) else \
            " (end the program with `finish`)"
        raise UserError(f"{source}: {problem}{hint}")
    if hw is not None:
        from costmodel.arch import load_architecture

        fingerprint = load_architecture(hw).fingerprint()
        if program.fingerprint not in ("0" * 16, fingerprint):
            raise UserError(f"{source}: .fingerprint {program.fingerprint} is not the fingerprint {fingerprint} "
                            f"of {hw}; remove the directive or fix it")
        program.fingerprint = fingerprint
        _check_on(program, hw, source, lines)
    write_binary(program, output)
    typer.echo(f"wrote {output}: {len(program.instructions)} instructions, {len(program.constants)} constant bytes",
               err=True)


def _check_on(program: Program, hw: str, source: Path, lines: list[int]) -> None:
    """Refuse what the simulator would refuse on config ``hw``: addresses outside the memory map or a
    buffer, fields the config does not allow, token deadlocks, races (its checking run, no values
    computed); the message names the instruction's line."""
    import re

    from compiler.sim.run import simulate
    from compiler.sim.state import SimError
    from costmodel.errors import UserError

    def line_of(index: str) -> int | None:
        return lines[int(index)] if int(index) < len(lines) else None

    try:
        simulate(program, {}, timing=False, arch=hw, functional=False)
    except SimError as exc:
        msg, at = str(exc), str(source)
        first = re.match(r"instruction (\d+)\b", msg)
        if first and line_of(first[1]) is not None:  # "p.s:4: instruction 1 [load]: ..."
            at, head, msg = f"{source}:{line_of(first[1])}", msg[:first.end()], msg[first.end():]
        else:
            head = ""
        # every other instruction it names (a race's two, a deadlock's waiting ones) gets its line
        msg = re.sub(r"instruction (\d+)\b", lambda m: f"{m[0]} (line {line_of(m[1])})"
                     if line_of(m[1]) is not None else m[0], msg)
        raise UserError(f"{at}: {head}{msg} (the simulator refuses this program on {hw})") from None


def register(app: typer.Typer) -> None:
    """Add this module's command(s) to the root app."""
    app.command("disasm")(disasm)
    app.command("asm")(asm)
