"""Integer arithmetic over a variant's defines: the manifest's geometry expressions (block, tile,
dynamic_smem), e.g. "(BM*BN)/(TM*TN)". Parsed with ast and walked by hand, so nothing but + - * /,
parentheses, integers and define names can run."""

from __future__ import annotations

import ast
import operator

Expr = int | str  # a manifest value: an integer, or an arithmetic string over the defines

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.FloorDiv: operator.floordiv, ast.Div: operator.floordiv}


def evaluate(expr: Expr, defines: dict[str, int]) -> int:
    """Integer arithmetic over define names, e.g. "(BM*BN)/(TM*TN)"; nothing else is allowed."""
    if isinstance(expr, int):
        return expr

    def walk(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in defines:
                raise ValueError(f"{expr!r} uses {node.id}, which is not among the defines {sorted(defines)}")
            return defines[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](walk(node.left), walk(node.right))
        raise ValueError(f"{expr!r}: only + - * / ( ), integers and define names are allowed")

    try:
        tree = ast.parse(str(expr), mode="eval")
    except SyntaxError:
        raise ValueError(f"{expr!r} is not an arithmetic expression") from None
    return walk(tree)
