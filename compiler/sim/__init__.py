"""Functional and timing simulator of the accelerator ISA (see docs/simulator.md).

``simulate(binary_or_program, inputs)`` runs an ``.axb`` binary (or an in-memory Program) on exact
numpy state with three in-order engine queues, token FIFOs and a vector-clock race detector, and
returns outputs plus per-engine cycle counts.
"""

from compiler.sim.result import SimResult
from compiler.sim.run import resolve_target, simulate
from compiler.sim.state import SimError

__all__ = ["SimError", "SimResult", "resolve_target", "simulate"]
