"""Safe arithmetic expressions for studies: derived knobs (``2 * rows * cols``) and constraint bounds
(``latency_ms <= 1000 / fps``).

Study files come from users, so nothing is ``eval``-ed: the text is parsed with :mod:`ast` and only
numbers, names (``W.metric`` for a workload's), ``+ - * / // % **``, unary minus and a few pure
functions are accepted; a part without names that cannot be evaluated (``4 / 0``) is refused. An
expression compiles once into a tree that is then evaluated against a dict of names.
"""

from __future__ import annotations

import ast
import functools
import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from costmodel.yamlio import short_repr

_BINOPS: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
}
_UNARY: dict[type, Callable[[float], float]] = {ast.USub: operator.neg, ast.UAdd: operator.pos}
FUNCTIONS: dict[str, Callable[..., float]] = {
    "min": min, "max": max, "ceil": math.ceil, "floor": math.floor, "log2": math.log2,
    "sqrt": math.sqrt, "round": round, "abs": abs,
}
COMPARISONS: dict[type, str] = {ast.LtE: "<=", ast.Lt: "<", ast.GtE: ">=", ast.Gt: ">"}


_T = TypeVar("_T")


class ExprError(ValueError):
    """The text is not an allowed expression (the message says what is wrong)."""


@dataclass(frozen=True)
class Expr:
    """A parsed expression: ``names`` it reads, ``evaluate(env)`` its value."""

    text: str
    tree: ast.expr
    names: frozenset[str]

    def evaluate(self, env: Mapping[str, float]) -> float:
        """The value for ``env``; an ExprError when arithmetic fails for these values (1 / 0,
        sqrt of a negative, a complex power, a float overflow), which the caller reports per
        design (these were tracebacks in every trial, or a hang: ``10 ** 10 ** 10``)."""
        try:
            value = _eval(self.tree, env)
        except (ArithmeticError, ValueError, TypeError) as exc:  # (ZeroDivisionError, OverflowError;
            # math domain; max() of nothing)
            raise ExprError(f"{self.text!r} cannot be evaluated for {_shown(self.names, env)}: {exc}") from None
        if isinstance(value, complex) or not _finite(value):
            raise ExprError(f"{self.text!r} is {_number(value)} for {_shown(self.names, env)}: not a finite real number")
        return value

    def evaluate_int64(self, env: Mapping[str, float]) -> float:
        """:meth:`evaluate` for a value a table keeps in int64 (a derived knob): at most 2**63 in size
        (``2 ** 2000`` broke the Parquet table)."""
        value = self.evaluate(env)
        if abs(value) >= 2**63:
            raise ExprError(f"{self.text!r} is {value:.4g} for {_shown(self.names, env)}: out of range "
                            "(at most 2**63 in size)")
        return value


def _finite(value: float) -> bool:
    """A float, or an int a float can hold (an integer of 400 digits is exact to Python, but
    math.isfinite raised OverflowError on it: a traceback from a study file's constant)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _number(value: complex) -> str:
    """A value for a message: an integer past the float range as its size, not 400 digits."""
    if isinstance(value, int) and not _finite(value):
        return f"an integer of {len(str(abs(value)))} digits"
    return str(value)


def _shown(names: frozenset[str], env: Mapping[str, float]) -> str:
    return ", ".join(f"{n} = {env[n]}" for n in sorted(names) if n in env) or "its constants"


def _check(node: ast.AST, names: set[str]) -> None:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise ExprError(f"only numbers are allowed as constants, got {node.value!r}")
        if not _finite(node.value):  # (1e400 is inf to Python; its message had shown '1e309')
            raise ExprError("a number past the float range (at most about 1.8e308)")
    elif isinstance(node, ast.Name):
        names.add(node.id)
    elif (dotted := _dotted(node)) is not None:  # a workload's metric: kws.latency_ms
        names.add(dotted)
    elif isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        _check(node.left, names)
        _check(node.right, names)
    elif isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        _check(node.operand, names)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS:
        if node.keywords:
            raise ExprError(f"{node.func.id}() takes no keyword arguments")
        for arg in node.args:
            _check(arg, names)
    elif isinstance(node, ast.Call):
        raise ExprError(f"unknown function (allowed: {', '.join(sorted(FUNCTIONS))})")
    else:
        raise ExprError(f"'{ast.unparse(node)}' is not allowed (only numbers, names, + - * / // % ** "
                        f"and {', '.join(sorted(FUNCTIONS))})")


def _dotted(node: ast.AST) -> str | None:
    """``NAME.attr`` as the one name ``"NAME.attr"`` (the per-workload metrics), else None."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return None


def _constant(node: ast.expr) -> float | None:
    """The value of a part of a (checked) tree that reads no name, else None; a ExprError if it
    cannot be evaluated: ``4 / 0`` fails for every design, so it is the file's mistake, found when
    the file is read (not after every trial has been mapped)."""
    names: set[str] = set()
    _check(node, names)
    if names:
        return None
    try:
        value = _eval(node, {})
    except (ArithmeticError, ValueError, TypeError) as exc:
        raise ExprError(f"'{ast.unparse(node)}' cannot be evaluated: {exc}") from None
    if isinstance(value, complex) or not _finite(value):
        raise ExprError(f"'{ast.unparse(node)}' is {_number(value)}: not a finite real number")
    return value


def _check_constants(node: ast.expr) -> None:
    """:func:`_constant` of every maximal part without names, and no division by a constant 0."""
    if _constant(node) is not None:
        return
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)) and _constant(node.right) == 0:
            raise ExprError(f"'{ast.unparse(node)}' divides by zero")
        _check_constants(node.left)
        _check_constants(node.right)
    elif isinstance(node, ast.UnaryOp):
        _check_constants(node.operand)
    elif isinstance(node, ast.Call):
        for arg in node.args:
            _check_constants(arg)


def _nested(parse_fn: Callable[[str], _T]) -> Callable[[str], _T]:
    """``parse_fn`` with Python's recursion limit as an ExprError: a sum of 5,000 terms is a tree
    that deep, and ast's parser or the checks above ran out of stack with a traceback."""

    @functools.wraps(parse_fn)
    def parse_fn_checked(text: str) -> _T:
        try:
            return parse_fn(text)
        except RecursionError:
            raise ExprError(f"{short_repr(text)} is nested too deeply (or too long) to read") from None

    return parse_fn_checked


@_nested
def parse(text: str) -> Expr:
    """Parse an arithmetic expression; :class:`ExprError` says why it is not allowed."""
    try:
        tree = ast.parse(str(text).strip(), mode="eval").body
    except SyntaxError as exc:
        raise ExprError(f"cannot parse expression {text!r} ({exc.msg})") from None
    names: set[str] = set()
    _check(tree, names)
    _check_constants(tree)
    return Expr(str(text), tree, frozenset(names))


@_nested
def parse_comparison(text: str) -> tuple[Expr, str, Expr]:
    """``"lhs <= rhs"`` -> (lhs, op, rhs) with op in ``<= < >= >``."""
    try:
        tree = ast.parse(str(text).strip(), mode="eval").body
    except SyntaxError as exc:
        raise ExprError(f"cannot parse {text!r} ({exc.msg})") from None
    if not (isinstance(tree, ast.Compare) and len(tree.ops) == 1 and type(tree.ops[0]) in COMPARISONS):
        raise ExprError(f"expected 'METRIC <= VALUE' (or <, >=, >), got {text!r}")
    sides = []
    for node in (tree.left, tree.comparators[0]):
        names: set[str] = set()
        _check(node, names)
        _check_constants(node)
        sides.append(Expr(ast.unparse(node), node, frozenset(names)))
    return sides[0], COMPARISONS[type(tree.ops[0])], sides[1]


def _eval(node: ast.expr, env: Mapping[str, float]) -> float:
    if isinstance(node, ast.Constant):
        return node.value  # type: ignore[return-value]
    if isinstance(node, ast.Name):
        return env[node.id]
    if (dotted := _dotted(node)) is not None:
        return env[dotted]
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, env), _eval(node.right, env)
        if (isinstance(node.op, ast.Pow) and isinstance(left, int) and isinstance(right, int) and right > 0
                and abs(left) > 1 and right * math.log2(abs(left)) > 1024):
            # (refused before Python computes every digit of an integer power: 10 ** 10 ** 10 never
            # ended; a float power overflows by itself)
            raise OverflowError(f"{left} ** {right} is above 2**1024, past any float")
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_eval(node.operand, env))
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    return FUNCTIONS[node.func.id](*(_eval(a, env) for a in node.args))
