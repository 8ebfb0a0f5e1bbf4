"""A parameter given as an expression of others (lmfit's ``expr``): ``"alpha"``, ``"2*A"``, ``"1 - alpha_N"``.

An expression is parsed once into a small tree of numbers, parameter names, ``+ - * / **``, unary signs and the
functions ``exp``, ``log`` and ``sqrt``; nothing else is evaluated (no attribute, call or name outside the law's
parameters), so a mistyped or hostile expression is a one-line error, not code run. Evaluating it takes the
parameters' values as floats or as arrays (a column of bootstrap replicates). numpy only.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from scalinglab.errors import UserError

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.Pow: operator.pow}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
FUNCTIONS = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt}
MAX_LENGTH = 200   # characters: a tie is a short formula, and ast's recursion on a long one is no message


@dataclass(frozen=True)
class Expression:
    """``text`` as given; ``names``: the parameters it reads, by the law's spelling; ``identity``: the one
    parameter it equals, when it is just that name (a tie that holds bit for bit)."""

    text: str
    names: tuple[str, ...]
    tree: ast.AST
    identity: str | None = None

    def __call__(self, values: Mapping[str, object]):
        with np.errstate(all="ignore"):
            return _evaluate(self.tree, values)


def parse(text: str, names: Iterable[str], what: str = "expression") -> Expression:
    """``text`` as an ``Expression`` over ``names`` (matched in any case), or a UserError naming what is wrong."""
    text = str(text).strip()
    canon = {n.lower(): n for n in names}
    if not text:
        raise UserError(f"{what}: empty; give a parameter or a formula of them, e.g. 2*alpha")
    if len(text) > MAX_LENGTH:
        raise UserError(f"{what} {text[:40]!r}...: longer than {MAX_LENGTH} characters")
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        raise UserError(f"{what} {text!r}: not a formula (use numbers, parameter names, + - * / ** and "
                        f"{', '.join(FUNCTIONS)})") from None
    used: list[str] = []
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if not (isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS and len(node.args) == 1
                    and not node.keywords):
                raise UserError(f"{what} {text!r}: the only functions are {', '.join(FUNCTIONS)}, of one argument")
        elif isinstance(node, ast.Name):
            if id(node) in called:
                continue
            name = canon.get(node.id.lower())
            if name is None:
                raise UserError(f"{what} {text!r}: no parameter {node.id!r}; the parameters are "
                                f"{', '.join(canon.values())}")
            node.id = name   # the law's spelling, so evaluation looks it up directly
            if name not in used:
                used.append(name)
        elif isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                raise UserError(f"{what} {text!r}: {node.value!r} is not a number")
        elif not isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Load, *_BINARY, *_UNARY)):
            raise UserError(f"{what} {text!r}: {type(node).__name__} is not allowed (numbers, parameter names, "
                            f"+ - * / ** and {', '.join(FUNCTIONS)})")
    identity = tree.id if isinstance(tree, ast.Name) else None
    return Expression(text, tuple(used), tree, identity)


def _evaluate(node: ast.AST, values: Mapping[str, object]):
    if isinstance(node, ast.Constant):
        return np.float64(node.value)   # numpy's overflow is inf (Python's float raises)
    if isinstance(node, ast.Name):
        return values[node.id]
    if isinstance(node, ast.BinOp):
        return _BINARY[type(node.op)](_evaluate(node.left, values), _evaluate(node.right, values))
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_evaluate(node.operand, values))
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    return FUNCTIONS[node.func.id](_evaluate(node.args[0], values))


def order(exprs: Mapping[str, Expression]) -> list[str]:
    """The expression parameters in an order that evaluates each after those it reads, or a UserError naming a
    circle (``a = 2*b``, ``b = a/2``: nothing is left to fit)."""
    done: list[str] = []

    def visit(name: str, path: list[str]) -> None:
        if name in done:
            return
        if name in path:
            raise UserError(f"the expressions {' -> '.join([*path[path.index(name):], name])} go round in a circle: "
                            "each parameter needs the other's value first")
        for other in exprs[name].names:
            if other in exprs:
                visit(other, [*path, name])
        done.append(name)

    for name in exprs:
        visit(name, [])
    return done
