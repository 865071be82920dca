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


def appended(args: List[cst.Arg], new: cst.Arg) -> List[cst.Arg]:
    """``args`` and then ``new``, separated as the call separates its arguments (one
    a line stays so), without copying a comment that ends a line of the call."""
    if not args:
        return [new]
    style = next((a.comma for a in args[:-1] if isinstance(a.comma, cst.Comma)),
                 cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    after = style.whitespace_after if isinstance(style, cst.Comma) else None
    if isinstance(after, cst.ParenthesizedWhitespace):
        style = style.with_changes(whitespace_after=after.with_changes(
            first_line=cst.TrailingWhitespace(), empty_lines=[]))
    return [*args[:-1], args[-1].with_changes(comma=style), new.with_changes(comma=args[-1].comma)]


def positional_arg(value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(value=value)


def clean_args(args: List[cst.Arg]) -> List[cst.Arg]:
    """Arguments with default commas (the last one without a trailing comma)."""
    out = []
    for i, arg in enumerate(args):
        comma = cst.MaybeSentinel.DEFAULT if i < len(args) - 1 else cst.MaybeSentinel.DEFAULT
        out.append(arg.with_changes(comma=comma))
    return out

