"""Read JSON streams: one document, concatenated objects or JSON Lines, with bare NaN/Infinity.

Bad parts become problems with their line; reading resumes at the next line that starts a
top-level `{` or `[`. A top-level array cut short keeps the items read before the cut.
"""
from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass
from typing import Any, Callable

from .base import ImportResult, problem

_WS = re.compile(r"\s*")
_NEXT_START = re.compile(r"\n(?=[\[{])")
_DECODER = json.JSONDecoder()  # Python's decoder accepts NaN, Infinity and -Infinity tokens


@dataclass
class JsonRecord:
    """One top-level JSON value: its 0-based index in the file, 1-based start line, value."""

    index: int
    line: int
    value: Any
    partial: bool = False


def decode_text(data: bytes, source: str) -> tuple[str, list[dict]]:
    """UTF-8 text of `data` (BOM dropped); undecodable or NUL bytes are reported, not fatal."""
    problems: list[dict] = []
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        problems.append(problem(source, line, f"not UTF-8 at byte {exc.start}; bad bytes replaced"))
        text = data.decode("utf-8", errors="replace")
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        problems.append(problem(source, line, "binary content (NUL bytes)"))
    return text, problems


class _Lines:
    def __init__(self, text: str) -> None:
        self.text = text
        self.nl = [m.start() for m in re.finditer("\n", text)]

    def line_of(self, pos: int) -> int:
        return bisect.bisect_left(self.nl, pos) + 1

    def raw(self, pos: int) -> str:
        end = self.text.find("\n", pos)
        return self.text[pos: end if end >= 0 else len(self.text)]


def _salvage_array(text: str, pos: int) -> tuple[list[Any], int]:
    """Items of the array opening at `pos` up to the first undecodable one; (items, stop)."""
    items: list[Any] = []
    p = pos + 1
    while True:
        p = _WS.match(text, p).end()
        try:
            value, p = _DECODER.raw_decode(text, p)
        except (json.JSONDecodeError, RecursionError):
            return items, p
        items.append(value)
        p = _WS.match(text, p).end()
        if p < len(text) and text[p] == ",":
            p += 1
            continue
        return items, p


def read_values(data: bytes, source: str) -> tuple[list[JsonRecord], list[dict]]:
    """Every top-level JSON value of `data`, in order, and the problems met."""
    text, problems = decode_text(data, source)
    lines = _Lines(text)
    records: list[JsonRecord] = []
    pos, index = 0, 0
    while True:
        pos = _WS.match(text, pos).end()
        if pos >= len(text):
            break
        start_line = lines.line_of(pos)
        try:
            value, pos = _DECODER.raw_decode(text, pos)
            records.append(JsonRecord(index, start_line, value))
        except RecursionError:  # nesting deeper than the decoder's recursion limit
            problems.append(problem(source, start_line, f"record {index}: JSON nested too deep to read",
                                    index, lines.raw(pos)))
            pos = _resume(text, pos)
        except json.JSONDecodeError as exc:
            err_line = lines.line_of(exc.pos)
            if text[pos] == "[":
                items, stop = _salvage_array(text, pos)
                if items:
                    records.append(JsonRecord(index, start_line, items, partial=True))
                    err_line = lines.line_of(stop)
                    problems.append(problem(
                        source, err_line, f"record {index}: array cut or broken after {len(items)} "
                        f"items ({exc.msg})", index, lines.raw(stop)))
                    index += 1
                    pos = _resume(text, stop)
                    continue
            problems.append(problem(
                source, start_line, f"record {index}: invalid JSON ({exc.msg} at line {err_line})",
                index, lines.raw(pos)))
            pos = _resume(text, pos)
        index += 1
    return records, problems


def _resume(text: str, pos: int) -> int:
    """Start of the next line that opens a top-level object or array, or the end."""
    m = _NEXT_START.search(text, pos)
    return m.start() + 1 if m else len(text)


def head_text(head: bytes) -> str:
    """The head as text for sniffing (bad bytes replaced)."""
    return head.decode("utf-8", errors="replace")


def read_each(tool: str, data: bytes, source: str, per_record: Callable[[ImportResult, JsonRecord], None],
              objects_only: bool = False) -> ImportResult:
    """Read every top-level JSON value and hand it to `per_record`; a record that raises
    becomes a problem with its line and index, and the rest of the file is still read.
    With `objects_only`, a value that is not a JSON object is a problem and is not handed on."""
    res = ImportResult(tool, source)
    records, problems = read_values(data, source)
    res.problems.extend(problems)
    for rec in records:
        if objects_only and not isinstance(rec.value, dict):
            res.add_problem(rec.line, f"record {rec.index}: not a JSON object", rec.index)
            continue
        res.guard(rec.line, rec.index, lambda rec=rec: per_record(res, rec))
    return res
