"""Integer arithmetic over a variant's defines (and, for a launch grid, the size symbols): the
manifest's geometry expressions (block, tile, dynamic_smem, grid), e.g. "(BM*BN)/(TM*TN)" or
"ceil(M/32)". Parsed with ast and walked by hand, so nothing but + - * /, parentheses, integers,
names and the functions ceil, floor, cdiv, min and max can run.

`/` divides integers as the C preprocessor does (7 / 2 is 3), except inside ceil() and floor(),
whose argument is computed exactly: ceil(M/32) is the number of 32-wide tiles covering M.

Conditions (a manifest's `require`, --require) add `%`, the comparisons == != < <= > >= (chained
too: 1 <= rows <= 1024) and `and`: holds("M % BM == 0 and K % 4 == 0", names) is True or False."""

from __future__ import annotations

import ast
import functools
import math
import operator
from fractions import Fraction

Expr = int | str  # a manifest value: an integer, or an arithmetic string over the defines

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.FloorDiv: operator.floordiv, ast.Div: operator.floordiv}
_EXACT_OPS = {**_OPS, ast.Div: operator.truediv}
_CONDITION_OPS = {**_OPS, ast.Mod: operator.mod}
_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
            ast.Gt: operator.gt, ast.GtE: operator.ge}
FUNCTIONS = ("ceil", "floor", "cdiv", "min", "max")
# Every node a condition may hold (ast.walk visits operators and contexts as nodes too).
_CONDITION_NODES = (ast.Expression, ast.Compare, ast.BoolOp, ast.And, ast.BinOp, ast.UnaryOp, ast.USub, ast.Name,
                    ast.Load, ast.Constant, *_CONDITION_OPS, *_COMPARE)
CONDITION_WORDS = "comparisons (== != < <= > >=) joined by 'and', over + - * / % ( ), integers and names"


def holds(condition: str, names: dict[str, int], what: str = "the sizes and defines") -> bool:
    """Whether a condition such as "M % BM == 0" or "cols <= 1024" holds for these names.
    ValueError for anything that is not a condition, or a name not among them."""
    check_condition(condition)
    return bool(evaluate(condition, names, what, condition=True))


@functools.lru_cache(maxsize=1024)
def check_condition(condition: str) -> None:
    """ValueError unless the text is a condition: comparisons joined by `and` (names unchecked)."""
    tree = _parse(condition)
    parts = tree.body.values if isinstance(tree.body, ast.BoolOp) else [tree.body]
    if not isinstance(tree.body, (ast.Compare, ast.BoolOp)) or not all(isinstance(p, ast.Compare) for p in parts):
        raise ValueError(f"{condition!r} is not a condition: write {CONDITION_WORDS}, e.g. 'M % 128 == 0'")
    for node in ast.walk(tree):
        if not isinstance(node, _CONDITION_NODES) or (isinstance(node, ast.Constant) and type(node.value) is not int) \
                or (isinstance(node, ast.BinOp) and type(node.op) not in _CONDITION_OPS) \
                or (isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.USub)):
            raise ValueError(f"{condition!r}: only {CONDITION_WORDS} are allowed")


def condition_names(condition: str) -> set[str]:
    """The names a condition uses."""
    return {node.id for node in ast.walk(_parse(condition)) if isinstance(node, ast.Name)}


@functools.lru_cache(maxsize=1024)
def _parse(text: str) -> ast.Expression:
    try:
        return ast.parse(text, mode="eval")
    except SyntaxError:
        raise ValueError(f"{text!r} is not an arithmetic expression") from None


def evaluate(expr: Expr, defines: dict[str, int], names: str = "the defines", condition: bool = False) -> int:
    """Integer arithmetic over names, e.g. "(BM*BN)/(TM*TN)" or "ceil(M/BM)"; nothing else is
    allowed. `names` says what the names are, for the error message. condition: `%`, comparisons
    and `and` too (1 or 0)."""
    if isinstance(expr, int):
        return expr
    ops = _CONDITION_OPS if condition else _OPS

    def call(node: ast.Call, exact: bool) -> Fraction | int:
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS or node.keywords:
            raise ValueError(f"{expr!r}: only + - * / ( ), integers, names and the functions "
                             f"{', '.join(FUNCTIONS)} are allowed")
        name, args = node.func.id, node.args
        if name in ("ceil", "floor"):
            if len(args) != 1:
                raise ValueError(f"{expr!r}: {name}() takes one argument, e.g. {name}(M/32)")
            value = Fraction(walk(args[0], exact=True))
            return math.ceil(value) if name == "ceil" else math.floor(value)
        values = [walk(a, exact) for a in args]
        if name == "cdiv":
            if len(values) != 2:
                raise ValueError(f"{expr!r}: cdiv() takes two arguments, e.g. cdiv(M, 32)")
            return -((-values[0]) // values[1])
        if not values:
            raise ValueError(f"{expr!r}: {name}() needs at least one argument")
        return min(values) if name == "min" else max(values)

    def walk(node: ast.AST, exact: bool = False) -> Fraction | int:
        if isinstance(node, ast.Expression):
            return walk(node.body, exact)
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in defines:
                raise ValueError(f"{expr!r} uses {node.id}, which is not among {names} {sorted(defines)}")
            return defines[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            left, right = walk(node.left, exact), walk(node.right, exact)
            if isinstance(node.op, ast.Div) and exact:
                return Fraction(left) / Fraction(right)
            return (_EXACT_OPS if exact else ops)[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -walk(node.operand, exact)
        if isinstance(node, ast.Call):
            return call(node, exact)
        if condition and isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
            values = [walk(node.left, exact), *(walk(c, exact) for c in node.comparators)]
            return int(all(_COMPARE[type(op)](a, b) for op, a, b in zip(node.ops, values, values[1:])))
        if condition and isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            return int(all(walk(v, exact) for v in node.values))
        raise ValueError(f"{expr!r}: only + - * / ( ), integers, names and {', '.join(FUNCTIONS)}() are allowed")

    value = walk(_parse(str(expr)))
    if isinstance(value, Fraction):  # an exact quotient left outside ceil()/floor(): C's integer division
        value = math.floor(value)
    return int(value)


def size_symbols(dims: tuple[str, ...] | list[str], size: dict[str, int]) -> dict[str, int]:
    """A size's dimensions by name as expressions and --args write them: the family's own names
    (m, n, k) and their upper-case forms (M, N, K)."""
    return {**{d: size[d] for d in dims}, **{d.upper(): size[d] for d in dims}}


def split_top_level(text: str, opening: str = "(<", closing: str = ")>") -> list[str]:
    """'ceil(M/32),cdiv(N, 32)' -> ['ceil(M/32)', 'cdiv(N, 32)']: commas inside parentheses (and
    template brackets, unless `opening`/`closing` leave them out) stay."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch in opening:
            depth += 1
        elif ch in closing:
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    parts.append("".join(current).strip())
    return parts
