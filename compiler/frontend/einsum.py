"""Two-operand ``Einsum`` as a (batched) matmul: attention written as ``bhid,bhjd->bhij``.

Indices in both operands and the output are the batch, indices in both operands but not the
output are summed (K), the others are the rows (M, from the first operand) and columns (N, from the
second). An index that appears in one operand only and not in the output is also summed, so it
joins K: MACs are always the product of all index sizes, as a direct evaluation performs them.
"""

from __future__ import annotations

import math
import re
from typing import Any

from compiler.frontend.context import Context, UnsupportedVariant
from compiler.frontend.workload import Layer
from costmodel import problem as P
from costmodel.errors import UserError

_TERM = r"[A-Za-z]*(?:\.\.\.)?[A-Za-z]*"
_EQUATION = re.compile(rf"{_TERM}(?:,{_TERM})*(?:->{_TERM})?")


def equation_problem(node: Any) -> str | None:
    """Why an Einsum node's equation is not one ONNX's grammar allows (None: it is): asked before shape
    inference, which loops forever, deaf to SIGTERM, on some (two ellipses in one term)."""
    attr = next((a for a in node.attribute if a.name == "equation"), None)
    if attr is None:
        return "attribute 'equation' is missing"
    if attr.type != 3:  # onnx.AttributeProto.STRING
        return "attribute 'equation' must be a string"
    text = attr.s.decode(errors="replace").replace(" ", "")
    if not _EQUATION.fullmatch(text):
        return (f"equation {text!r}: expected comma-separated terms of letters, each with at most one "
                "'...', and optionally '->' and the output's term")
    return None


def _expand(term: str, rank: int, width: int) -> list[str]:
    """Index letters of one operand with ``...`` replaced by right-aligned placeholder indices."""
    if "..." not in term:
        return list(term)
    head, tail = term.split("...")
    n = rank - len(head) - len(tail)
    return [*head, *(chr(0x100 + width - n + i) for i in range(n)), *tail]


def parse(equation: str, ranks: list[int]) -> tuple[list[list[str]], list[str]]:
    equation = equation.replace(" ", "")
    lhs, _, rhs = equation.partition("->")
    terms = lhs.split(",")
    width = max((r - len(t.replace("...", "")) for t, r in zip(terms, ranks) if "..." in t), default=0)
    operands = [_expand(t, r, width) for t, r in zip(terms, ranks)]
    if "->" in equation:
        out = _expand(rhs, width + len(rhs.replace("...", "")), width)
    else:  # implicit output: the ellipsis, then indices used once, in alphabetical order
        letters = [c for op in operands for c in op]
        out = sorted({c for c in letters if ord(c) >= 0x100}) + sorted(c for c in set(letters)
                                                                      if letters.count(c) == 1 and ord(c) < 0x100)
    return operands, out


def build_einsum(ctx: Context, node: Any) -> Layer:
    names = [t for t in node.input if t]
    if len(names) != 2:
        raise UnsupportedVariant(f"{ctx.where(node)}: Einsum with {len(names)} operands is not supported (2 are)")
    equation = ctx.attrs(node)["equation"]
    equation = equation.decode() if isinstance(equation, bytes) else equation
    shapes = [ctx.shape(node, t) for t in names]
    (a, b), out = parse(equation, [len(s) for s in shapes])
    sizes: dict[str, int] = {}
    for letters, shape in ((a, shapes[0]), (b, shapes[1])):
        for c, n in zip(letters, shape):
            if sizes.get(c, 1) not in (1, n) and n != 1:  # (a size of 1 broadcasts, as in numpy and onnxruntime)
                label = "a dim of the ellipsis" if ord(c) >= 0x100 else f"label {c!r}"
                raise UserError(f"{ctx.where(node)}: {label} is {sizes[c]} in one place and {n} in another (operands "
                                f"{list(shapes[0])} and {list(shapes[1])}, equation {equation!r})")
            sizes[c] = max(sizes.get(c, 1), n)
    batch = [c for c in out if c in a and c in b]
    rows = [c for c in out if c in a and c not in b]
    cols = [c for c in out if c in b and c not in a]
    summed = [c for c in sizes if c not in out]

    def prod(letters: list[str]) -> int:
        return math.prod(sizes[c] for c in letters)

    bits = (ctx.bits(names[0]), ctx.bits(names[1]), ctx.output_bits(node.output[0]))
    m, k, n, nb = prod(rows), prod(summed), prod(cols), prod(batch)
    prob = (P.fully_connected(k, n, rows=m, bits=bits) if nb == 1 and ctx.is_static(names[1])
            else P.matmul(m, k, n, nb, bits))
    layer = ctx.layer(node, "mac", inputs=names)
    layer.problem, layer.macs = prob, prob.macs
    layer.weights = sum(ctx.static_numel(node, t) for t in names)
    layer.attrs.update(equation=equation, batch=nb)
    return layer
