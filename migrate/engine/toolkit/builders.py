"""Small CST builders: arguments, and the code of a node."""

from __future__ import annotations

from typing import List

import libcst as cst


def code_of(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def keyword_arg(name: str, value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(
        keyword=cst.Name(name),
        value=value,
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                              whitespace_after=cst.SimpleWhitespace("")),
    )


def positional_arg(value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(value=value)


def clean_args(args: List[cst.Arg]) -> List[cst.Arg]:
    """Arguments with default commas (the last one without a trailing comma)."""
    out = []
    for i, arg in enumerate(args):
        comma = cst.MaybeSentinel.DEFAULT if i < len(args) - 1 else cst.MaybeSentinel.DEFAULT
        out.append(arg.with_changes(comma=comma))
    return out

