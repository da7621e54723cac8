"""What a simulation returns: outputs, cycle totals, per-engine busy/stall, per-node spans."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class SimResult:
    """Outputs by I/O-table name (exact dtypes); timing figures are None when timing was off."""

    outputs: dict[str, np.ndarray]
    instructions: int
    macs: int  # array MACs issued (all R x C PEs of every GEMM tap and row)
    dram_read_bytes: int
    dram_write_bytes: int
    gemm_timing: str | None = None
    cycles: int | None = None
    clock_hz: float | None = None
    busy: dict[str, int] = field(default_factory=dict)  # engine name -> cycles executing
    stall: dict[str, int] = field(default_factory=dict)  # engine name -> cycles waiting for tokens/barriers
    pes: int = 0
    nodes: list[dict[str, Any]] = field(default_factory=list)  # per ONNX node: first start, last end, busy
    start: np.ndarray | None = None  # per instruction start cycle
    end: np.ndarray | None = None
    wall_seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)  # e.g. tokens never popped

    @property
    def idle(self) -> dict[str, int]:
        """Cycles an engine neither executes nor waits (after its last instruction)."""
        if self.cycles is None:
            return {}
        return {e: self.cycles - self.busy[e] - self.stall[e] for e in self.busy}

    @property
    def utilization(self) -> float | None:
        """MACs / (PEs * cycles)."""
        if not self.cycles or not self.pes:
            return None
        return self.macs / (self.pes * self.cycles)

    @property
    def latency_s(self) -> float | None:
        return None if self.cycles is None or not self.clock_hz else self.cycles / self.clock_hz

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (outputs as name -> dtype/shape; the arrays go to .npy files)."""
        out: dict[str, Any] = {
            "outputs": {k: {"dtype": str(v.dtype), "shape": list(v.shape)} for k, v in self.outputs.items()},
            "instructions": self.instructions,
            "macs": self.macs,
            "dram_read_bytes": self.dram_read_bytes,
            "dram_write_bytes": self.dram_write_bytes,
            "wall_seconds": self.wall_seconds,
            "warnings": self.warnings,
        }
        if self.cycles is not None:
            out.update({
                "gemm_timing": self.gemm_timing,
                "latency_cycles": self.cycles,
                "latency_s": self.latency_s,
                "utilization": self.utilization,
                "engines": {e: {"busy": self.busy[e], "stall": self.stall[e], "idle": self.idle[e]}
                            for e in self.busy},
                "layers": self.nodes,
            })
        return out

    def to_dataframe(self) -> Any:
        """Per-node cycle table (pandas)."""
        import pandas as pd

        return pd.DataFrame(self.nodes)
