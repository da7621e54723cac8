"""LSTM and GRU as the matmuls they run per time step, plus the gate arithmetic.

One ONNX LSTM/GRU node becomes three layers:

- ``<node>/x_gates``: the input projection of every step, ``X[t] @ W^T``. It does not depend on
  the recurrence, so all T steps form one matmul (rows = T x batch, one batch entry per direction).
- ``<node>/h_gates``: the recurrent projection ``h[t-1] @ R^T``. Its Problem also spans all T steps
  (so ``macs`` is the exact total), but step t needs h[t-1]: ``attrs`` records ``recurrent=True``,
  ``steps=T`` and ``step_problem`` (one step's matmul); a mapper must keep the T factor temporal and
  outermost.
- ``<node>/cell``: gate nonlinearities and state update on the vector unit.
"""

from __future__ import annotations

from typing import Any

from compiler.frontend.context import Context
from compiler.frontend.workload import Layer
from costmodel import problem as P

_GATES = {"LSTM": 4, "GRU": 3}


def _cell_ops_per_unit(op: str, has_bias: bool, has_peephole: bool) -> int:
    """Vector operations per hidden unit per step (per direction).

    LSTM: per gate x+h add and, with B, +Wb and +Rb (4 x (1 + 2)); 4 activations (3 sigmoid, 1 tanh);
    c = f*c + i*g (3); h = o * tanh(c) (2); peepholes add 3 multiply-adds (6).
    GRU: per gate x+h add (+2 bias adds); r*h (1); 3 activations; h = (1-z)*h~ + z*h (4).
    """
    adds = _GATES[op] * (1 + 2 * has_bias)
    if op == "LSTM":
        return adds + 4 + 3 + 2 + 6 * has_peephole
    return adds + 1 + 3 + 4


def build_rnn(ctx: Context, node: Any) -> list[Layer]:
    op = node.op_type
    gates = _GATES[op]
    a = ctx.attrs(node)
    x, w, r, b = (ctx.input(node, i) for i in range(4))
    init_h = ctx.input(node, 5)
    init_c = ctx.input(node, 6) if op == "LSTM" else ""
    peep = ctx.input(node, 7) if op == "LSTM" else ""
    xs, ws = ctx.shape(node, x), ctx.shape(node, w)
    steps, batch = (xs[1], xs[0]) if a.get("layout", 0) else (xs[0], xs[1])
    dirs, in_size = ws[0], ws[2]
    hidden = int(a.get("hidden_size", ctx.shape(node, r)[2]))
    out_f = ctx.bits(x)
    bits = (ctx.bits(x), ctx.bits(w), out_f)
    gate_shape = (dirs, steps * batch, gates * hidden)
    half_bias = dirs * gates * hidden if b else 0
    x_out, h_out = f"{node.name}/x_gates:out", f"{node.name}/h_gates:out"

    x_layer = ctx.layer(node, "mac", name=f"{node.name}/x_gates", inputs=[x], outputs=[])
    x_layer.problem = P.matmul(steps * batch, in_size, gates * hidden, dirs, bits)
    x_layer.outputs, x_layer.output_shapes = (x_out,), (gate_shape,)
    x_layer.weights, x_layer.bias = ctx.static_numel(node, w), half_bias

    h_layer = ctx.layer(node, "mac", name=f"{node.name}/h_gates", inputs=[init_h], outputs=[])
    h_layer.problem = P.matmul(steps * batch, hidden, gates * hidden, dirs, (out_f, ctx.bits(r), out_f))
    h_layer.outputs, h_layer.output_shapes = (h_out,), (gate_shape,)
    h_layer.weights, h_layer.bias = ctx.static_numel(node, r), half_bias
    h_layer.attrs.update(
        recurrent=True, steps=steps,
        step_problem=P.matmul(batch, hidden, gates * hidden, dirs, (out_f, ctx.bits(r), out_f)),
        dependency=f"step t reads h[t-1] written by {node.name}/cell at step t-1",
    )
    for layer in (x_layer, h_layer):
        layer.macs = layer.problem.macs
        layer.dtypes.update({t: ctx.graph.info(x).dtype_name for t in layer.outputs})

    cell = ctx.layer(node, "vector", name=f"{node.name}/cell", inputs=[init_c])
    cell.inputs = (x_out, h_out, *cell.inputs)
    cell.input_shapes = (gate_shape, gate_shape, *cell.input_shapes)
    cell.vector_ops = steps * dirs * batch * hidden * _cell_ops_per_unit(op, bool(b), bool(peep))
    cell.weights = ctx.static_numel(node, peep)
    cell.attrs.update(recurrent=True, steps=steps, hidden_size=hidden, directions=dirs,
                      direction=_text(a.get("direction", b"forward")))
    return [x_layer, h_layer, cell]


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)
