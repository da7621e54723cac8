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
from costmodel.errors import UserError

_GATES = {"LSTM": 4, "GRU": 3}
_DIRECTIONS = ("forward", "reverse", "bidirectional")


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
    dirs, in_size = ws[0], xs[2]
    hidden = int(a.get("hidden_size", ctx.shape(node, r)[2]))
    _operands_fit(ctx, node, gates, hidden, in_size, _text(a.get("direction", b"forward")))
    out_f = ctx.bits(x)
    bits = (ctx.bits(x), ctx.bits(w), out_f)
    gate_shape = (dirs, steps * batch, gates * hidden)
    half_bias = dirs * gates * hidden if b else 0
    x_name, h_name, cell_name = (ctx.fresh_name(f"{node.name}/{part}") for part in ("x_gates", "h_gates", "cell"))
    x_out, h_out = ctx.fresh_name(f"{x_name}:out"), ctx.fresh_name(f"{h_name}:out")

    x_layer = ctx.layer(node, "mac", name=x_name, inputs=[x], outputs=[])
    x_layer.problem = P.matmul(steps * batch, in_size, gates * hidden, dirs, bits)
    x_layer.outputs, x_layer.output_shapes = (x_out,), (gate_shape,)
    x_layer.weights, x_layer.bias = ctx.static_numel(node, w), half_bias

    h_layer = ctx.layer(node, "mac", name=h_name, inputs=[init_h], outputs=[])
    h_layer.problem = P.matmul(steps * batch, hidden, gates * hidden, dirs, (out_f, ctx.bits(r), out_f))
    h_layer.outputs, h_layer.output_shapes = (h_out,), (gate_shape,)
    h_layer.weights, h_layer.bias = ctx.static_numel(node, r), half_bias
    h_layer.attrs.update(
        recurrent=True, steps=steps,
        step_problem=P.matmul(batch, hidden, gates * hidden, dirs, (out_f, ctx.bits(r), out_f)),
        dependency=f"step t reads h[t-1] written by {cell_name} at step t-1",
    )
    for layer in (x_layer, h_layer):
        layer.macs = layer.problem.macs
        layer.dtypes.update({t: ctx.graph.info(x).dtype_name for t in layer.outputs})

    cell = ctx.layer(node, "vector", name=cell_name, inputs=[init_c])
    cell.inputs = (x_out, h_out, *cell.inputs)
    cell.input_shapes = (gate_shape, gate_shape, *cell.input_shapes)
    cell.vector_ops = steps * dirs * batch * hidden * _cell_ops_per_unit(op, bool(b), bool(peep))
    cell.weights = ctx.static_numel(node, peep)
    cell.attrs.update(recurrent=True, steps=steps, hidden_size=hidden, directions=dirs,
                      direction=_text(a.get("direction", b"forward")))
    return [x_layer, h_layer, cell]


def _operands_fit(ctx: Context, node: Any, gates: int, hidden: int, in_size: int, direction: str) -> None:
    """W, R, B and the peepholes P against the input and the attributes (ONNX's LSTM/GRU shapes),
    as onnxruntime checks them: a mismatch had been costed from whichever operand each size was
    read from."""
    if direction not in _DIRECTIONS:
        raise UserError(f"{ctx.where(node)}: direction {direction!r}: expected one of {', '.join(_DIRECTIONS)}")
    dirs = 2 if direction == "bidirectional" else 1
    rows = gates * hidden
    operands = [(1, "W", (dirs, rows, in_size), "directions, gates x hidden_size, input size"),
                (2, "R", (dirs, rows, hidden), "directions, gates x hidden_size, hidden_size"),
                (3, "B", (dirs, 2 * rows), "directions, 2 x gates x hidden_size")]
    if node.op_type == "LSTM":
        operands.append((7, "P", (dirs, 3 * hidden), "directions, 3 x hidden_size"))
    for i, role, expected, layout in operands:
        if ctx.input(node, i):
            ctx.check_shape(node, ctx.input(node, i), expected, f"{layout}; direction {direction}", role=role)


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)
