"""Reads Python reprs as engines print them: `ServerArgs(k=v, ...)`, `{'k': v}`, `k=v, k=v`.

Never `eval`: values go through `ast.literal_eval` one at a time, and a value that is not a
literal (an enum, a nested config object) is kept as its text. A line cut short by a paste
yields every complete item before the cut and nothing after it.
"""
from __future__ import annotations

import ast
import warnings
from typing import Any

_OPEN = {"(": ")", "[": "]", "{": "}"}


def split_top(text: str, sep: str = ",") -> tuple[list[str], bool]:
    """Split on `sep` at bracket depth 0, outside quotes.

    Returns:
        The pieces and whether the text was complete (all brackets and quotes closed).
    """
    out: list[str] = []
    depth: list[str] = []
    quote: str | None = None
    start = 0
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c in _OPEN:
            depth.append(_OPEN[c])
        elif c in ")]}":
            if depth and depth[-1] == c:
                depth.pop()
            else:
                return out, False  # unbalanced: stop at what was complete
        elif c == sep and not depth:
            out.append(text[start:i])
            start = i + 1
        i += 1
    complete = not depth and quote is None
    if complete:
        out.append(text[start:])
    return out, complete


def _literal(text: str) -> Any:
    """`ast.literal_eval`, silent: log text such as `1and 2` or `0x1for` makes the compiler warn on stderr."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        return ast.literal_eval(text)


def value(text: str) -> Any:
    """A literal value, or the stripped text when it is not a Python literal."""
    text = text.strip()
    if not text:
        return None
    try:
        return _literal(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        pass
    if text in ("None", "True", "False"):
        return {"None": None, "True": True, "False": False}[text]
    return text


def kwargs(text: str) -> dict[str, Any]:
    """`k=v, k=v` pairs (the inside of `ServerArgs(...)` or an engine config line)."""
    out: dict[str, Any] = {}
    pieces, _ = split_top(text)
    for piece in pieces:
        key, eq, val = piece.partition("=")
        key = key.strip()
        if not eq or not key.isidentifier():
            continue
        out[key] = value(val)
    return out


def call(text: str, name: str) -> dict[str, Any] | None:
    """The keyword arguments of `name(...)` found in text, complete items only."""
    idx = text.find(name + "(")
    if idx < 0:
        return None
    inner = text[idx + len(name) + 1:]
    end = _closing(inner)
    if end < len(inner):
        return kwargs(inner[:end])
    pieces, complete = split_top(inner)
    return kwargs(",".join(pieces[:-1] if complete else pieces))  # cut by a paste: the last item may be partial


def _closing(inner: str) -> int:
    depth, quote, i = 0, None, 0
    while i < len(inner):
        c = inner[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                return i
            depth -= 1
        i += 1
    return len(inner)


def mapping(text: str) -> dict[str, Any] | None:
    """A `{'k': v, ...}` dict repr; complete items only when the text is cut."""
    start = text.find("{")
    if start < 0:
        return None
    body = text[start:]
    try:
        val = _literal(body.strip())
        if isinstance(val, dict):
            return {str(k): v for k, v in val.items()}
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        pass
    inner = body[1:]
    end = _closing(inner)
    pieces, _ = split_top(inner[:end])
    out: dict[str, Any] = {}
    for piece in pieces:
        k, colon, v = piece.partition(":")
        if not colon:
            continue
        key = value(k)
        if isinstance(key, str):
            out[key] = value(v)
    return out
