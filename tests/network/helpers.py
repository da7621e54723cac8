"""Small workloads and configs for the network-mapping tests, and a way to run `dse map` before
the command is registered in dse/cli/__init__.py."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import networkx as nx

from compiler.frontend.workload import Layer, Workload
from costmodel.arch import architecture_from_dict
from costmodel.problem import conv2d, matmul

REPO = Path(__file__).resolve().parents[2]
FAST = {"max_evaluations": 1500}  # a small budget keeps the API tests quick

_RUNNER = """
import sys
from costmodel.errors import UserError
from dse.cli import app, map_cmd

if __name__ == "__main__":
    if not any(c.name == "map" for c in app.registered_commands):
        map_cmd.register(app)
    try:
        app()
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
"""


def workload(name: str = "toy") -> Workload:
    """Conv A, ReLU-free Add, Conv B (same shape as A), a view, a matmul: 2 distinct MAC shapes."""
    a = conv2d(4, 8, 8, 8, 3)
    b = conv2d(4, 8, 8, 8, 3)
    m = matmul(m=8, k=16, n=12)
    layers = [
        Layer("conv_a", "Conv", "mac", a, ((1, 4, 8, 8),), ((1, 8, 6, 6),), macs=a.macs),
        Layer("add", "Add", "vector", None, ((1, 8, 6, 6), (1, 8, 6, 6)), ((1, 8, 6, 6),), vector_ops=288),
        Layer("conv_b", "Conv", "mac", b, ((1, 4, 8, 8),), ((1, 8, 6, 6),), macs=b.macs, vector_ops=288,
              post_ops=["Relu"]),
        Layer("flat", "Reshape", "layout", None, ((1, 8, 6, 6),), ((1, 288),)),
        Layer("mm", "MatMul", "mac", m, ((8, 16),), ((8, 12),), macs=m.macs),
    ]
    g = nx.DiGraph()
    for x in layers:
        g.add_node(x.name, layer=x)
    for u, v in itertools.pairwise(layers):
        g.add_edge(u.name, v.name, tensor=f"{u.name}_out", shape=u.output_shapes[0], bytes=0)
    return Workload(name, g, {"x": (1, 4, 8, 8)}, {"y": (8, 12)})


def vector_arch(**vector: object):
    """DRAM -> 'buf' -> 2x2 MACs with round, hand-checkable costs (all overrides)."""
    data = {
        "name": "vec_test", "clock": "100 MHz", "technology": {"node_nm": 45},
        "mac": {"datatype": "int8", "count": 4, "energy_pj": 0.5, "leak_mw": 0.0},
        "levels": [
            {"name": "DRAM", "kind": "dram", "holds": ["I", "W", "O"], "word_bits": 8, "block_words": 8,
             "read_bw": 4, "write_bw": 2, "read_pj": 10.0, "write_pj": 20.0, "leak_mw": 0.0},
            {"name": "buf", "kind": "sram", "holds": ["I", "W", "O"], "capacity": 4096, "word_bits": 16,
             "block_words": 1, "read_bw": 8, "write_bw": 8, "read_pj": 1.0, "write_pj": 2.0, "leak_mw": 1.0,
             "fanout": {"x": 2, "y": 2}},
        ],
    }
    if vector:
        data["vector_unit"] = vector
    return architecture_from_dict(data)


def run_dse(*args: str, cache: Path) -> subprocess.CompletedProcess:
    """`dse <args>` with map_cmd registered (the runner script lives in ``cache``). The zoo cache is
    the user's (a fresh one would re-export the model with torch); tests pass --db or --no-db."""
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    script = cache / "run_dse.py"
    if not script.exists():
        script.write_text(_RUNNER)
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, env=env, check=False,
                          cwd=REPO, timeout=300)
